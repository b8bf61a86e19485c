"""Each node's routing plan for a setup and a homing: what the node agent's `paths` request (and
the lab's interface-up hook, from the file the node role stores) makes of a node.

Senders pin each interface's table to their own receiver: the WiFi table reaches only the
receiver's A address and the LTE table only its B address, each ending in `unreachable
default`. On this kernel's in-kernel path manager that yields exactly two subflows per
connection, WiFi -> A and LTE -> B (measured: without pinning the LTE endpoint also opens
LTE -> A, and the announced B address is reached from the WiFi source). The main table routes
B via LTE so the subflow to the announced address leaves on LTE. Receivers route each side's
replies by its own table and announce the B address (`signal`).

A plan is built with the node agent's own definition of it (nodes/agent/rig_node/plan.py: its
fields, their checks and its JSON form), which the agent parses what it is sent with; how a plan
is applied is nodes/agent/rig_node/routing.py's: the same code on the lab's boards and in the
emulated nodes.
"""

from __future__ import annotations

from dataclasses import replace

from rig.core.repo import node_package
from rig.model.topology import Pair, RadioInterface, Topology

node_package()
from rig_node.plan import Interface, Plan  # noqa: E402

HOMINGS = ("dual", "wifi", "lte")


def homing_paths(homing: str) -> tuple[str, ...]:
    """The paths a sender's connections use under a homing: each must have a subflow."""
    return ("wifi", "lte") if homing == "dual" else (homing,)

# Sysctls every node gets. tcp_no_metrics_save: runs must not inherit cached ssthresh/RTT
# from earlier runs (seed 001 does the same); blackhole_timeout 0: never disable MPTCP.
NODE_SYSCTLS = {
    "net.mptcp.enabled": "1",
    "net.mptcp.allow_join_initial_addr_port": "1",
    "net.mptcp.blackhole_timeout": "0",  # skipped on kernels older than it
    # upstream's in-kernel path manager, the campaign's path_manager (rig.model.campaign refuses
    # userspace: mptcpd 0.12 reopens no path here); skipped on kernels older than the sysctl
    "net.mptcp.path_manager": "kernel",
    "net.ipv4.tcp_no_metrics_save": "1",
    # iperf3 -n ends the test once the sender has *written* the volume; a small unsent queue
    # keeps that moment close to delivery (measured: 2 MB delivered 31 % -> 70-80 % at test end).
    "net.ipv4.tcp_notsent_lowat": "131072",
    "net.ipv4.conf.all.rp_filter": "0",
    "net.ipv4.conf.default.rp_filter": "0",
    "net.ipv4.conf.all.arp_ignore": "1",  # two interfaces in one subnet (Setup III): answer ARP
    "net.ipv4.conf.all.arp_announce": "2",  # only for the address of the asking interface
}


def _up(i: RadioInterface, routes: list[str], main_routes: list[str], endpoint: str, unreachable: bool,
        backup: bool = False) -> Interface:
    return Interface(i.ifname, True, str(i.address), i.prefixlen, str(i.gateway) if i.gateway else None, i.table,
                     tuple(routes), unreachable, tuple(main_routes), endpoint, backup)


def sender_plan(pair: Pair, homing: str, backup: str = "none") -> Plan:
    """backup: the path (wifi or lte) whose subflows are MPTCP backup subflows (dual homing only)."""
    w, l = pair.sender_wifi, pair.sender_lte
    a, b = f"{pair.receiver_a.address}/32", f"{pair.receiver_b.address}/32"
    if homing == "dual":
        ifaces = (_up(w, [a], ["default"], "subflow", True, backup == "wifi"),
                  _up(l, [b], [b], "subflow", True, backup == "lte"))
        return Plan(ifaces, subflows=2, add_addr_accepted=1, sysctls=NODE_SYSCTLS)
    # single-homed: the same MPTCP socket with one subflow, announced addresses ignored
    used, unused, target = (w, l, a) if homing == "wifi" else (l, w, b)
    ifaces = (_up(used, [target], ["default"], "none", True), Interface(unused.ifname, False, table=unused.table))
    return Plan(ifaces, subflows=0, add_addr_accepted=0, sysctls=NODE_SYSCTLS)


def receiver_plan(pair: Pair) -> Plan:
    a, b = pair.receiver_a, pair.receiver_b
    return Plan((_up(a, ["default"], ["default"], "none", False), _up(b, ["default"], [], "signal", False)),
                subflows=2, add_addr_accepted=0, sysctls=NODE_SYSCTLS)


def node_plan(topo: Topology, host: str, homing: str = "dual", backup: str = "none",
              no_metrics_save: bool = True) -> dict:
    """`host`'s plan in `topo`, in the JSON form the agent's `paths` request and the node role's
    stored file take; senders dual-homed unless told otherwise (a setup's resting state).
    no_metrics_save False lets connections start from the kernel's cached metrics of earlier ones."""
    for p in topo.pairs:
        if host in (p.sender, p.receiver):
            plan = sender_plan(p, homing, backup) if host == p.sender else receiver_plan(p)
            if not no_metrics_save:
                plan = replace(plan, sysctls={**plan.sysctls, "net.ipv4.tcp_no_metrics_save": "0"})
            return plan.to_json()
    raise KeyError(f"{host} is not a node of this topology")


def receive_buffer(rcvbuf_bytes: int) -> dict[str, str]:
    """The receive buffer caps what a receiver advertises (seed 002's 'receiver buffer')."""
    return {"net.ipv4.tcp_rmem": f"4096 {min(131072, rcvbuf_bytes)} {rcvbuf_bytes}"}
