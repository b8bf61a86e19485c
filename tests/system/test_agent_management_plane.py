"""The node agent never touches the management plane: hostile and malformed requests against the
real agent in a namespace of its own, laid out as a lab node (a management interface with the
node's address, a default route and a table and rule of its own; two radios with a plan applied).

Each family of requests is refused, logged, and changes nothing in the namespace (links,
addresses, rules, every route table, MPTCP endpoints and limits, sysctls, qdiscs); the agent
still answers. The agent's radios come from the node's configuration (--node), never a request.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time

import pytest

from fixtures.node_agent import AGENT, AgentPipe, node_config

RADIOS = ("wlan0", "lte0")
CONTROLLER = "10.0.0.2"
MGMT_ADDRESS = "10.0.0.21"
# A sender's plan, as the controller makes it (no main default here: the management has one).
PLAN = {
    "interfaces": [
        {"name": "wlan0", "address": "10.1.1.21", "prefixlen": 24, "gateway": "10.1.1.1", "table": 101,
         "routes": ["10.1.2.31/32"], "unreachable_default": True, "main_routes": [], "endpoint": "subflow"},
        {"name": "lte0", "address": "10.45.0.21", "prefixlen": 16, "gateway": "10.45.0.1", "table": 102,
         "routes": ["10.1.3.31/32"], "unreachable_default": True, "main_routes": ["10.1.3.31/32"], "endpoint": "subflow"},
    ],
    "limits": {"subflows": 2, "add_addr_accepted": 1},
    "sysctls": {"net.mptcp.enabled": "1", "net.ipv4.conf.all.rp_filter": "0"},
}


def plan(iface: int = 0, sysctls: dict | None = None, **fields) -> dict:
    """PLAN with fields of one interface changed (None removes a field)."""
    p = copy.deepcopy(PLAN)
    p["interfaces"][iface].update(fields)
    p["interfaces"][iface] = {k: v for k, v in p["interfaces"][iface].items() if v is not None}
    if sysctls is not None:
        p["sysctls"] = {**p["sysctls"], **sysctls}
    return {"op": "paths", "plan": p}


def mgmt_interface(**fields) -> dict:
    return {"op": "paths", "plan": {**PLAN, "interfaces": [*PLAN["interfaces"], fields]}}


HOSTILE = {
    # a plan that names the management interface or loopback
    "management interface down": [mgmt_interface(name="mgmt0", up=False, table=0),
                                  plan(name="mgmt0", up=False, table=0, address=None, prefixlen=None, gateway=None,
                                       routes=None, unreachable_default=None, main_routes=None, endpoint=None)],
    "management interface configured": [plan(name="mgmt0"), plan(1, name="lo"),
                                        mgmt_interface(name="mgmt0", address="10.1.9.21", prefixlen=24, table=103)],
    "loopback configured": [mgmt_interface(name="lo", address="10.1.9.21", prefixlen=24, table=103),
                            mgmt_interface(name="lo", up=False, table=0)],
    # the management address or subnet on a radio, with the rig's rule capturing its traffic
    "management address on a radio": [plan(address=MGMT_ADDRESS), plan(address=MGMT_ADDRESS, prefixlen=32),
                                       plan(address=CONTROLLER, prefixlen=32), plan(address="10.0.0.99"),
                                       plan(address="10.0.1.21", prefixlen=16), plan(address="127.0.0.5", prefixlen=8)],
    "management address with an unreachable table": [plan(address=MGMT_ADDRESS, prefixlen=32, routes=[], unreachable_default=True)],
    # routes that would take the controller's or the management's traffic through a radio
    "controller routed via a radio": [plan(main_routes=[f"{CONTROLLER}/32"]), plan(main_routes=["10.0.0.0/24"]),
                                      plan(main_routes=["10.0.0.0/25"]), plan(main_routes=["0.0.0.0/0"]),
                                      plan(main_routes=["default"]), plan(main_routes=["127.0.0.0/8"])],
    "management subnet in a radio's table": [plan(routes=["10.0.0.0/24"]), plan(routes=[f"{CONTROLLER}/32"]),
                                             plan(routes=["0.0.0.0/1"])],
    "a table of the management's": [plan(table=150)],
    # MPTCP endpoints on the management interface
    "endpoint on the management interface": [mgmt_interface(name="mgmt0", address=MGMT_ADDRESS, prefixlen=24, table=103,
                                                            endpoint="signal"),
                                             plan(address=MGMT_ADDRESS, endpoint="subflow")],
    # sysctls of the management interface and loopback
    "sysctls of the management interface": [
        {"op": "sysctl", "values": {"net.ipv4.conf.mgmt0.rp_filter": 0}},
        {"op": "sysctl", "values": {"net.ipv4.conf.lo.rp_filter": 0}},
        {"op": "sysctl", "values": {"net.ipv4.conf.wlan0.rp_filter": 0, "net.ipv4.conf.mgmt0.rp_filter": 0}},
        plan(sysctls={"net.ipv4.conf.mgmt0.rp_filter": "0"}),
        {"op": "batch", "requests": [{"op": "sysctl", "values": {"net.ipv4.conf.mgmt0.rp_filter": 0}}]}],
    # a run's events on the management interface
    "timeline on the management interface": [
        {"op": "timeline", "actions": [{"id": "cut", "action": "link", "at": "NOW", "iface": "mgmt0", "state": "down"}]},
        {"op": "timeline", "actions": [{"id": "cut", "action": "link", "at": "NOW", "iface": "lo", "state": "down"}]}],
    # traffic programs aimed at the management network
    "traffic to the management network": [
        {"op": "launch", "key": "x", "program": "iperf3", "args": {"mode": "client", "target": CONTROLLER, "bytes": 1000}},
        {"op": "launch", "key": "x", "program": "transfer", "args": {"mode": "source", "target": "10.0.0.31", "seconds": 1}},
        {"op": "launch", "key": "x", "program": "transfer", "args": {"mode": "source", "target": "10.1.2.31", "bind": MGMT_ADDRESS,
                                                                     "seconds": 1}}],
    # a wait that would hold the agent for a day
    "a wait of a day": [{"op": "wait", "key": "x", "timeout": 86400}],
}


def sh(ns: str, *argv: str) -> str:
    return subprocess.run(["ip", "netns", "exec", ns, *argv], capture_output=True, text=True, timeout=30).stdout


def snapshot(ns: str) -> dict[str, str]:
    """Everything a request could change in the namespace."""
    return {
        "links": sh(ns, "ip", "-o", "link", "show"),
        "addresses": sh(ns, "ip", "-o", "addr", "show"),
        "rules": sh(ns, "ip", "rule", "show"),
        "routes": sh(ns, "ip", "route", "show", "table", "all") + sh(ns, "ip", "-6", "route", "show", "table", "all"),
        "endpoints": sh(ns, "ip", "mptcp", "endpoint", "show"),
        "limits": sh(ns, "ip", "mptcp", "limits", "show"),
        "sysctls": sh(ns, "grep", "-rs", ".", "/proc/sys/net/ipv4/conf", "/proc/sys/net/mptcp", "/proc/sys/net/ipv4/ip_forward"),
        "qdiscs": sh(ns, "tc", "qdisc", "show"),
    }


def lab_node(netns, tmp_path, *management: str) -> tuple[AgentPipe, str, object]:
    """A node laid out as on the lab (and with the `management` ip commands), its agent started
    with the node's configuration: (agent, namespace, log)."""
    ns, peer = netns("node"), netns("peer")
    for dev, far in (("mgmt0", "m0"), *((r, f"p-{r}") for r in RADIOS)):
        netns.veth(ns, dev, peer, far)
        subprocess.run(["ip", "-n", peer, "link", "set", far, "up"], check=True)
    for cmd in (f"addr add {MGMT_ADDRESS}/24 dev mgmt0", "link set mgmt0 up", "route add default via 10.0.0.1 dev mgmt0",
                "route add 10.0.9.0/24 dev mgmt0 table 150", "rule add pref 500 to 10.0.9.0/24 table 150", *management):
        subprocess.run(["ip", "-n", ns, *cmd.split()], check=True)
    config = node_config(tmp_path / "node.json", RADIOS, CONTROLLER)
    log = tmp_path / "agent.log"
    env = {**os.environ, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}  # a lab node's locale, which SSH passes through
    return AgentPipe(netns.start([sys.executable, "-u", "-I", str(AGENT), "--log", str(log), "--node", str(config)], ns,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)), ns, log


@pytest.fixture
def node(netns, tmp_path):
    """lab_node with the plan applied."""
    agent, ns, log = lab_node(netns, tmp_path)
    try:
        assert agent.send({"op": "paths", "plan": PLAN}) == {}
        yield agent, ns, log
    finally:
        agent.close()


def test_the_plan_is_applied_on_the_radios_and_the_management_is_kept(node):
    agent, ns, _ = node
    routes = sh(ns, "ip", "route", "show", "table", "all")
    assert "default via 10.0.0.1 dev mgmt0" in routes and "10.0.9.0/24 dev mgmt0 table 150" in routes
    assert "from 10.1.1.21 lookup 101" in sh(ns, "ip", "rule", "show")
    assert len(sh(ns, "ip", "mptcp", "endpoint", "show").splitlines()) == 2
    assert agent.send({"op": "paths", "plan": PLAN}) == {}  # again: the rig's own routes are no obstacle


@pytest.mark.parametrize("family", HOSTILE)
def test_requests_on_the_management_plane_are_refused_and_change_nothing(node, family):
    agent, ns, log = node
    before = snapshot(ns)
    for req in HOSTILE[family]:
        text = json.dumps(req).replace('"NOW"', repr(time.time() + 0.2))
        reply = agent.send(text)
        assert reply.get("error", "").startswith("refused: "), (req, reply)
    time.sleep(0.3)  # past the time a timeline would have acted
    assert snapshot(ns) == before
    assert log.read_text().count("refused: ") == len(HOSTILE[family])  # each logged on the node
    assert agent.send({"op": "hello"})["protocol"]


@pytest.mark.parametrize("rule", ["pref 1150 to 10.0.8.0/24 table 150", f"pref 1101 from {MGMT_ADDRESS} table 101"])
def test_a_management_rule_among_the_rigs_priorities_is_never_rewritten(netns, tmp_path, rule):
    """A plan's apply rewrites the rules at the rig's priorities (1001-1252): one of the
    management's there (its table, or its address) refuses every plan, and nothing changes."""
    agent, ns, log = lab_node(netns, tmp_path, f"rule add {rule}")
    try:
        before = snapshot(ns)
        assert agent.send({"op": "paths", "plan": PLAN})["error"].startswith("refused: paths: rule 11")
        assert snapshot(ns) == before and "refused: " in log.read_text()
    finally:
        agent.close()


def test_an_agent_without_its_node_configuration_changes_no_routing(netns, tmp_path):
    ns = netns("bare")
    agent = AgentPipe(netns.start([sys.executable, "-u", "-I", str(AGENT), "--node", str(tmp_path / "missing.json")], ns,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE))
    try:
        before = snapshot(ns)
        reply = agent.send({"op": "paths", "plan": {"interfaces": [{"name": "lo", "up": False}]}})
        assert reply["error"].startswith("refused: paths: this node's radios are unknown: ") and "missing.json" in reply["error"]
        assert agent.send({"op": "sysctl", "values": {"net.ipv4.conf.lo.rp_filter": 0}})["error"].startswith("refused: ")
        assert snapshot(ns) == before
    finally:
        agent.close()


def _programs(ns: str, agent_pid: int) -> list[int]:
    """The processes running in `ns` besides the agent (zombies are gone)."""
    out = []
    for pid in subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split():
        try:
            with open(f"/proc/{pid}/stat") as f:
                if int(pid) != agent_pid and f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    out.append(int(pid))
        except (OSError, IndexError):
            continue
    return out


LAUNCHES = {
    "iperf3": lambda key, port: {"op": "launch", "key": key, "program": "iperf3", "args": {"mode": "server", "port": port}},
    "transfer": lambda key, port: {"op": "launch", "key": key, "program": "transfer",
                                   "args": {"mode": "sink", "port": port, "timeout_s": 30}},
}


@pytest.mark.parametrize("program", LAUNCHES)
def test_no_order_of_launches_and_stops_leaves_an_untracked_program(node, program):
    """A launch and its stop, or the same key launched twice then stopped, in one write: however
    the agent's threads interleave, nothing it started is left running."""
    agent, ns, _ = node
    launch = LAUNCHES[program]
    for i in range(15):
        port = 5400 + i
        lines = [launch("k", port), {"op": "stop", "key": "k"},  # launch and stop together
                 launch("k", port + 100), launch("k", port + 200), {"op": "stop", "key": "k"},  # twice, then stop
                 {"op": "batch", "requests": [launch("b", port + 300), {"op": "stop", "key": "b"}]}]
        agent.write(b"".join(json.dumps(x).encode() + b"\n" for x in lines))
        replies = [agent.reply() for _ in lines]
        assert all("error" not in r for r in replies), replies
        assert _programs(ns, agent.proc.pid) == [], f"round {i}: a program the agent no longer tracks runs on"
    assert agent.send({"op": "alive", "key": "k"}) == {"alive": False}


MALFORMED = {
    "invalid UTF-8": b"\xff\xfe{}",
    "invalid UTF-8 in a string": b'{"op": "hello\xc3"}',
    "overlong encoding": b'{"op": "\xc0\xafhello"}',
    "a surrogate": b'{"op": "\xed\xa0\x80"}',
    "a lone continuation byte": b"\x80",
    "NUL bytes": b"\x00\x00{\x00}",
    "not JSON": b"sh -c id",
    "a terminal escape": b"\x1b[2J\r",
    "over-long line": b'{"op": "hello", "x": "' + b"a" * 70000 + b'"}',
    "over-long line of invalid bytes": b"\xff" * 200000,
    "deep nesting": b"[" * 30000 + b"]" * 30000,
    "deep nesting of objects": b'{"a":' * 2000 + b"1" + b"}" * 2000,
    "nesting deeper than a request": json.dumps({"op": "paths", "plan": {"interfaces": [[[[[[[[[[[[[]]]]]]]]]]]]]}}).encode(),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_bytes_are_refused_in_one_line_and_the_agent_keeps_serving(node, name):
    agent, ns, log = node
    before = snapshot(ns)
    reply = agent.send(MALFORMED[name])
    assert reply["error"].startswith("refused: "), reply
    assert "refused: " in log.read_text()  # logged, whatever the bytes
    assert agent.send({"op": "hello"})["protocol"]  # one reply only: the next line is answered
    assert snapshot(ns) == before
