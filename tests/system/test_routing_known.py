"""The node agent applies each routing plan from what it applied before (no queries of the kernel,
one `ip` process per homing switch): checked against a fresh agent, which knows nothing and
queries, on a twin node, switch by switch; and after what the agent did not do itself (the
interface-up hook applying its stored plan, a rule deleted by hand, a radio interface
re-created), by the hook's own full apply, which must then find nothing to change. Needs root:
namespaces, real kernel MPTCP."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from fixtures.node_agent import AGENT, node_config
from fixtures.routing_state import ip, state
from rig.model.routing import node_plan
from rig.model.topology import topology


TOPO = topology("I", 1)
PLANS = {(homing, backup): node_plan(TOPO, "s1", homing, backup)
         for homing, backup in (("dual", "none"), ("lte", "none"), ("wifi", "none"), ("dual", "wifi"), ("dual", "lte"))}
# Every homing after every other, and the backup path set, moved and cleared
SEQUENCE = [("dual", "none"), ("lte", "none"), ("wifi", "none"), ("dual", "none"), ("wifi", "none"), ("lte", "none"),
            ("dual", "wifi"), ("dual", "lte"), ("dual", "none"), ("dual", "lte"), ("wifi", "none"), ("dual", "wifi")]


class Agent:
    def __init__(self, netns, ns: str, node: Path, env: dict | None = None):
        """An agent in `ns` reading the node's configuration `node` (a sender's radios)."""
        self.proc = netns.start([sys.executable, "-u", "-I", str(AGENT), "--node", str(node)], ns, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, bufsize=1, env=env)

    def paths(self, plan: dict) -> None:
        self.proc.stdin.write(json.dumps({"op": "paths", "plan": plan}) + "\n")
        self.proc.stdin.flush()
        assert json.loads(self.proc.stdout.readline()) == {}

    def quit(self) -> None:
        self.proc.stdin.write('{"op": "quit"}\n')
        self.proc.stdin.flush()
        self.proc.wait(10)


def sender(netns, role: str) -> str:
    """A sender's namespace with its two radios as veths to a gateway namespace."""
    node, gw = netns(role), netns(role + "-gw")
    for i in PLANS["dual", "none"]["interfaces"]:
        radio(node, gw, i)
    return node


def radio(node: str, gw: str, i: dict) -> None:
    ip("-n", node, "link", "add", i["name"], "type", "veth", "peer", "name", "g" + i["name"], "netns", gw)
    ip("-n", gw, "link", "set", "g" + i["name"], "up")
    ip("-n", gw, "addr", "replace", f"{i['gateway']}/{i['prefixlen']}", "dev", "g" + i["name"])


def logging_ip(directory: Path) -> dict:
    """An environment whose `ip` logs each call (and a batch's commands) to directory/ip.log."""
    log, real = directory / "ip.log", shutil.which("ip")
    wrapper = directory / "ip"
    wrapper.write_text(f'#!/bin/sh\necho "ip $*" >> {log}\n'
                       f'case "$*" in *-batch*) tee -a {log} | {real} "$@"; exit $? ;; esac\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    return {**os.environ, "PATH": f"{directory}:{os.environ['PATH']}"}


def test_switches_from_what_the_agent_applied_end_as_a_fresh_agents_and_start_one_ip_each(netns, tmp_path):
    kept, twin = sender(netns, "kept"), sender(netns, "twin")
    env = logging_ip(tmp_path)
    sender_node = node_config(tmp_path / "node.json", ("wlan0", "lte0"))
    agent = Agent(netns, kept, sender_node, env)
    agent.paths(PLANS[SEQUENCE[0]])
    log = tmp_path / "ip.log"
    for before, step in zip(SEQUENCE, SEQUENCE[1:]):
        log.write_text("")
        agent.paths(PLANS[step])
        calls = [line for line in log.read_text().splitlines() if line.startswith("ip ")]
        assert calls == ["ip -force -batch -"], (step, calls)  # no queries: one process
        if before == ("dual", "none") and step == ("lte", "none"):  # dual homing's two endpoints: one flush
            assert "mptcp endpoint flush" in log.read_text()
        if before[0] == step[0] == "dual":  # only the backup path changes: flags changed in place
            assert "mptcp endpoint change" in log.read_text() and "mptcp endpoint delete" not in log.read_text()
        fresh = Agent(netns, twin, sender_node)  # knows nothing: queries the kernel
        fresh.paths(PLANS[step])
        fresh.quit()
        assert state(kept) == state(twin), step
    agent.quit()


def hook(node: str, plan: dict, tmp_path: Path, iface: str | None = None) -> str:
    """rig-if-up: the stored plan applied by a process of its own, which queries the kernel."""
    (tmp_path / "paths.json").write_text(json.dumps(plan))
    argv = [sys.executable, "-I", str(AGENT), "apply", str(tmp_path / "paths.json"), *([iface] if iface else [])]
    return subprocess.run(["ip", "netns", "exec", node, *argv], check=True, capture_output=True, text=True,
                          timeout=30).stdout.strip()


def test_what_the_agent_did_not_do_itself_is_put_right_at_its_next_apply(netns, tmp_path):
    node = sender(netns, "node")
    agent = Agent(netns, node, node_config(tmp_path / "node.json", ("wlan0", "lte0")))
    agent.paths(PLANS["lte", "none"])
    # The hook applies the stored plan (dual) to lte0 as it comes up: an endpoint, other limits
    hook(node, PLANS["dual", "none"], tmp_path, "lte0")
    agent.paths(PLANS["wifi", "none"])
    assert hook(node, PLANS["wifi", "none"], tmp_path) == "rig-if-up: node unchanged"
    agent.paths(PLANS["dual", "none"])
    # A rule deleted by hand: the agent's delete of it fails, and it queries
    ip("-n", node, "rule", "del", "pref", str(1000 + PLANS["dual", "none"]["interfaces"][0]["table"]))
    agent.paths(PLANS["lte", "none"])
    assert hook(node, PLANS["lte", "none"], tmp_path) == "rig-if-up: node unchanged"
    agent.paths(PLANS["dual", "none"])
    # The WiFi radio re-created (a new device behind the name): its endpoint must name the new one
    wifi = PLANS["dual", "none"]["interfaces"][0]
    ip("-n", node, "link", "del", wifi["name"])
    radio(node, f"{node}-gw", wifi)
    agent.paths(PLANS["dual", "wifi"])
    assert hook(node, PLANS["dual", "wifi"], tmp_path) == "rig-if-up: node unchanged"
    agent.quit()
