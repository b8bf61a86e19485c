"""One routing policy for the lab and the emulated rig, checked by what it does to real nodes.

A lab board gets its routing from the node role: the plan `rig paths` computes is stored and the
interface-up hook (`rig_agent.py apply PLAN IFACE`) applies it as each radio comes up; then the
campaign runner sends each run's plan through the agent. An emulated node gets the runner's
requests only. Both must end in the same `ip rule` / `ip route` / `ip mptcp` state for every
setup and homing, and a sender's subflows must take exactly the paired paths (WiFi -> the
receiver's A side, LTE -> its B side). Needs root: namespaces, real kernel MPTCP."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from fixtures.node_agent import node_config
from fixtures.routing_state import ip, state
from rig.rigs.backends import configure_setup
from rig.model.campaign import Limits, parse_campaign
from rig.campaign.plan import expand
from rig.rigs.emulated.emulated_rig import EmulatedRig
from rig.model.block import BlockSettings
from rig.model.topology import EMULATED_IFNAMES, topology
from rig.model.routing import HOMINGS, node_plan
from rig.agents.client import AgentPool
from rig.run.execute import RunSettings, execute_run
from rig.agents.netns import AGENT, NetnsTransport


def node_with_radios(netns, host: str, plan: dict) -> str:
    """A node namespace with the plan's interfaces as veths to a gateway namespace."""
    node, gw = netns(host), netns(host + "-gw")
    for i in plan["interfaces"]:
        peer = "g" + i["name"]
        ip("-n", node, "link", "add", i["name"], "type", "veth", "peer", "name", peer, "netns", gw)
        ip("-n", gw, "link", "set", peer, "up")
        if i.get("gateway"):
            ip("-n", gw, "addr", "add", f"{i['gateway']}/{i['prefixlen']}", "dev", peer)
    return node


def radio_nodes(tmp_path: Path, hosts: list[str]) -> Path:
    """The nodes' configurations (their radios: the emulated rig's), where their agents read them."""
    (tmp_path / "nodes").mkdir(exist_ok=True)
    for host in hosts:
        node_config(tmp_path / "nodes" / f"{host}.json", sorted(set(EMULATED_IFNAMES.values())))
    return tmp_path / "nodes"


def hook(node: str, plan_file: Path, iface: str) -> str:
    """The node role's rig-if-up, as it runs on a board when `iface` comes up."""
    return subprocess.run(["ip", "netns", "exec", node, sys.executable, "-I", str(AGENT), "apply", str(plan_file), iface],
                          check=True, capture_output=True, text=True, timeout=30).stdout.strip()


CASES = [(setup, host, homing, ("wifi", "lte"), "paired") for setup in ("I", "II", "III")
         for host, homings in (("s1", HOMINGS), ("r1", ("dual",))) for homing in homings]
# a full mesh, and a sender with two LTE modems (seed 004)
CASES += [("I", host, "dual", radios, "fullmesh") for host in ("s1", "r1") for radios in (("wifi", "lte"), ("lte", "lte2"))]
CASES += [("II", "s1", homing, ("lte", "lte2"), "paired") for homing in ("dual", "lte")]


@pytest.mark.parametrize("setup, host, homing, radios, mode", CASES)
def test_lab_and_emulated_paths_leave_a_node_in_the_same_state(netns, tmp_path, setup, host, homing, radios, mode):
    topo = topology(setup, 2, radios, mode)
    stored, run = node_plan(topo, host), node_plan(topo, host, homing)
    lab = node_with_radios(netns, "lab", stored)
    emulated = node_with_radios(netns, "emu", stored)

    # The lab: the role stores the plan, the hook applies it as each radio comes up (twice: an
    # interface flapping changes nothing), then the runner sends the run's plan.
    plan_file = tmp_path / "paths.json"
    plan_file.write_text(json.dumps(stored))
    for i in stored["interfaces"]:
        assert hook(lab, plan_file, i["name"]) == f"rig-if-up: {i['name']} changed"
    for i in stored["interfaces"]:
        assert hook(lab, plan_file, i["name"]) == f"rig-if-up: {i['name']} unchanged"
    assert hook(lab, plan_file, "eth9") == ""  # not the rig's interface: left alone
    # The emulated rig: the runner's requests only.
    with AgentPool(NetnsTransport(netns.prefix, node_dir=radio_nodes(tmp_path, ["lab", "emu"])), ["lab", "emu"]) as agents:
        agents.each(["lab", "emu"], lambda a: a.request("paths", plan=run))
    assert state(lab) == state(emulated)


def test_a_setup_switch_leaves_nothing_stale(netns, tmp_path):
    """Setup I's plan, then Setup II's, on one receiver: the same state as Setup II's alone."""
    one, two = node_plan(topology("I", 1), "r1"), node_plan(topology("II", 1), "r1")
    radios = {"interfaces": one["interfaces"] + two["interfaces"][1:]}  # lte0 and wlan1: both exist
    switched = node_with_radios(netns, "sw", radios)
    fresh = node_with_radios(netns, "fr", radios)
    with AgentPool(NetnsTransport(netns.prefix, node_dir=radio_nodes(tmp_path, ["sw", "fr"])), ["sw", "fr"]) as agents:
        agents["sw"].request("paths", plan=one)
        agents.each(["sw", "fr"], lambda a: a.request("paths", plan=two))
    # the interface Setup I used and Setup II does not keeps its address but nothing of the rig's
    assert state(switched)["rules"] == state(fresh)["rules"]
    assert state(switched)["endpoints"] == state(fresh)["endpoints"]
    assert "proto 77" not in ip("-n", switched, "route", "show", "dev", "lte0")


CAMPAIGN = "name: paired\nsetups: [I]\npairs: 2\nfactors: {volume: [4MB]}\n"


@pytest.mark.parametrize("setup", ["I", "II", "III"])
def test_senders_subflows_take_exactly_the_paired_paths(emulator, rig_prefix, setup):
    """On the emulated rig, two pairs: each sender's data subflows are WiFi -> its receiver's A
    address and LTE -> its B address, nothing else; single-homed runs use one of them."""
    rig = EmulatedRig(rig_prefix)
    settings = BlockSettings(setup, "n5", "band7-10mhz", 2, {}, "links")
    rig.up(settings)
    agents = AgentPool(NetnsTransport(rig_prefix, node_dir=rig.node_dir), rig.topo.nodes)
    try:
        ctx = configure_setup(rig, agents, settings, RunSettings(Limits(run_timeout_s=60, max_lag_p99_ms=500, subflow_hz=20)))
        run = expand(parse_campaign(CAMPAIGN, "paired")).runs[0]
        for homing in HOMINGS:
            rec = execute_run(ctx, replace(run, homing=homing, setup=setup))
            assert rec.status == "ok", (homing, rec.reason)
            for p in rig.topo.pairs:
                flows = {tuple(f.split(":")[0] for f in flow.split("->")) for flow in rec.details["subflow_ccs"][p.sender]}
                wifi = (str(p.radio("wifi").address), str(p.receiver_a.address))
                lte = (str(p.radio("lte").address), str(p.receiver_b.address))
                assert flows == {"dual": {wifi, lte}, "wifi": {wifi}, "lte": {lte}}[homing], (homing, p.sender)
    finally:
        agents.close()
