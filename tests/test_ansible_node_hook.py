"""The node role's rig-if-up hook, as rendered (golden files), applied for real in namespaces:
policy routing, pinned tables, MPTCP endpoints and limits; idempotent; a setup switch leaves
nothing stale. Needs root and network namespaces (real kernel MPTCP)."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parent / "golden" / "rendered"

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip"), reason="needs root and iproute2")


def sh(*args: str, check: bool = True) -> str:
    return subprocess.run(args, check=check, capture_output=True, text=True, timeout=30).stdout


@pytest.fixture()
def node_netns():
    """A node namespace whose radio interfaces are veths to a gateway namespace; removed after."""
    tag = uuid.uuid4().hex[:6]
    node, gw = f"ans-n{tag}", f"ans-g{tag}"
    sh("ip", "netns", "add", node)
    try:
        sh("ip", "netns", "add", gw)
        yield node, gw
    finally:
        sh("ip", "netns", "del", node, check=False)
        sh("ip", "netns", "del", gw, check=False)


def add_radio(node: str, gw: str, iface: str, gateway: str | None):
    peer = f"g{iface}"
    sh("ip", "-n", node, "link", "add", iface, "type", "veth", "peer", "name", peer, "netns", gw)
    sh("ip", "-n", node, "link", "set", iface, "up")
    sh("ip", "-n", gw, "link", "set", peer, "up")
    if gateway:
        sh("ip", "-n", gw, "addr", "add", f"{gateway}/24", "dev", peer)


def if_up(node: str, host: str, setup: str, iface: str) -> str:
    conf = GOLDEN / host / "rig-render" / "node" / host / setup / "interfaces"
    script = GOLDEN / host / "usr" / "local" / "sbin" / "rig-if-up"
    return sh("ip", "netns", "exec", node, "env", f"RIG_IF_DIR={conf}", "sh", str(script), iface).strip()


def state(node: str) -> dict[str, str]:
    ns = ("ip", "-n", node)
    return {
        "rules": sh(*ns, "rule", "show"),
        # check=False: a table nobody filled does not exist and "show" fails.
        "t101": sh(*ns, "route", "show", "table", "101", check=False),
        "t102": sh(*ns, "route", "show", "table", "102", check=False),
        "main": sh(*ns, "route", "show"),
        "endpoints": sh("ip", "netns", "exec", node, "ip", "mptcp", "endpoint", "show"),
        "limits": sh("ip", "netns", "exec", node, "ip", "mptcp", "limits", "show"),
    }


def test_sender_setup_i_then_switch_to_ii(node_netns):
    node, gw = node_netns
    add_radio(node, gw, "wlan0", "10.1.1.1")
    add_radio(node, gw, "wwan0", None)  # LTE modem: point to point, no gateway

    assert if_up(node, "s1", "I", "wlan0") == "rig-if-up: wlan0 changed"
    assert if_up(node, "s1", "I", "wwan0") == "rig-if-up: wwan0 changed"
    s = state(node)
    assert "from 10.1.1.11 lookup 101" in s["rules"] and "from 10.45.0.11 lookup 102" in s["rules"]
    # Each table reaches only its receiver side and ends in unreachable default.
    assert "10.1.2.0/24 via 10.1.1.1 dev wlan0" in s["t101"] and "unreachable default" in s["t101"]
    assert "10.45.0.0/16 dev wwan0" in s["t102"] and "unreachable default" in s["t102"]
    assert "default via 10.1.1.1 dev wlan0" in s["main"]
    assert "10.45.0.0/16 dev wwan0" in s["main"]
    assert "10.1.1.11 id" in s["endpoints"] and "subflow dev wlan0" in s["endpoints"]
    assert "10.45.0.11 id" in s["endpoints"] and "subflow dev wwan0" in s["endpoints"]
    assert "add_addr_accepted 1" in s["limits"] and "subflows 2" in s["limits"]

    # Running it again (an interface flapping, a second playbook run) changes nothing.
    assert if_up(node, "s1", "I", "wlan0") == "rig-if-up: wlan0 unchanged"
    assert if_up(node, "s1", "I", "wwan0") == "rig-if-up: wwan0 unchanged"
    assert state(node) == s

    # Setup II pins LTE to AP3's subnet; the Setup I routes via LTE are gone.
    assert if_up(node, "s1", "II", "wwan0") == "rig-if-up: wwan0 changed"
    s2 = state(node)
    assert "10.1.3.0/24 dev wwan0" in s2["t102"] and "10.45.0.0/16 dev wwan0 proto 77" not in s2["t102"]
    assert "10.1.3.0/24 dev wwan0" in s2["main"]
    assert sh("ip", "-n", node, "route", "show", "proto", "77", "dev", "wwan0").strip() == \
        "10.1.3.0/24 scope link"
    assert s2["rules"].count("lookup 102") == 1 and s2["endpoints"].count("10.45.0.11 ") == 1


def test_receiver_signals_its_b_side_only(node_netns):
    node, gw = node_netns
    add_radio(node, gw, "wlan0", "10.1.2.1")
    add_radio(node, gw, "wlan1", "10.1.3.1")
    if_up(node, "r1", "II", "wlan0")
    if_up(node, "r1", "II", "wlan1")
    s = state(node)
    assert "default via 10.1.2.1 dev wlan0" in s["t101"] and "default via 10.1.3.1 dev wlan1" in s["t102"]
    assert "default via 10.1.2.1 dev wlan0" in s["main"]
    assert "10.1.3.21 id" in s["endpoints"] and "signal dev wlan1" in s["endpoints"]
    assert "10.1.2.21" not in s["endpoints"]  # side A is the initial subflow's address


def test_interfaces_without_a_routing_file_are_left_alone(node_netns):
    node, gw = node_netns
    add_radio(node, gw, "eth9", None)
    assert if_up(node, "s1", "I", "eth9") == ""
    assert "eth9" not in state(node)["main"]
