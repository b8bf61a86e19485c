"""A run is a timeline: the checks that need no rig. A campaign's events the lab cannot act out
are refused before anything runs; the node agent acts out events only on its routing plan's
interfaces; a lab impairment is one netem qdisc. The runs themselves: tests/system/test_timeline.py.
"""

from __future__ import annotations

import time

import pytest
from rig_node.ops import Agent  # the node agent's code, in this process (tests/fixtures/node_agent.py)
from rig_node.timeline import netem_argv, netem_available
from rig_node.validate import Refused

from rig.model.campaign import parse_campaign
from rig.core.errors import InputError
from rig.run.timeline import check_for_lab


def test_events_the_lab_cannot_act_out_are_refused_before_anything_runs():
    text = "name: x\nevents: [{at_s: 1, path: lte, trace: lte-cell-edge-uplink}]\n"
    with pytest.raises(InputError, match=r"c.yaml: events\[0\].trace: traces need the emulated rig"):
        check_for_lab(parse_campaign(text, "c.yaml").events, "c.yaml")
    text = "name: x\nevents: [{at_s: 1, path: wifi, loss_pct: 2, direction: down}]\n"
    with pytest.raises(InputError, match=r"events\[0\].direction: on the lab a node impairs only what it sends"):
        check_for_lab(parse_campaign(text, "c.yaml").events, "c.yaml")
    check_for_lab(parse_campaign("name: x\nevents: [{at_s: 1, path: lte, state: down}]\n", "c").events, "c")


def test_the_agent_acts_out_events_only_on_its_routing_plans_interfaces():
    agent = Agent()  # no plan applied: no interface is the rig's, so nothing may be acted on
    link = {"id": "e1", "action": "link", "at": time.time() + 5, "iface": "eth0", "state": "down"}
    with pytest.raises(Refused, match="eth0 is not an interface of this node's routing plan"):
        agent.handle({"op": "timeline", "actions": [link]})
    with pytest.raises(Refused, match=r"timeline.actions\[0\].state"):
        agent.handle({"op": "timeline", "actions": [{**link, "state": "sideways"}]})
    with pytest.raises(Refused, match=r"timeline.actions\[0\]"):
        agent.handle({"op": "timeline", "actions": [{**link, "command": "reboot"}]})
    impair = {"id": "e2", "action": "impair", "at": time.time() + 5, "iface": "wlan0", "loss_pct": 1}
    if not netem_available():  # this machine's kernel: the lab's nodes would say the same
        with pytest.raises(Refused, match="impairments need the netem qdisc"):
            agent.handle({"op": "timeline", "actions": [impair]})
    assert agent.handle({"op": "timeline_log"}) == {"events": []}


def test_a_lab_impairment_is_one_netem_qdisc_on_what_the_node_sends():
    assert netem_argv("wlan0", {"delay_ms": 10, "jitter_ms": 2, "loss_pct": 1.5, "rate_bps": 2e6}) == [
        "tc", "qdisc", "replace", "dev", "wlan0", "root", "netem", "delay", "10ms", "2ms", "loss", "1.5%", "rate", "2000000bit"]
    assert netem_argv("lte0", {"loss_pct": 0}) == ["tc", "qdisc", "replace", "dev", "lte0", "root", "netem", "loss", "0%"]
