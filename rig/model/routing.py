"""Each node's routing plan for a setup and a homing: what the node agent's `paths` request (and
the lab's interface-up hook, from the file the node role stores) makes of a node.

A sender's connections must make exactly the subflows of its pair's `subflows(homing, mode)`
(rig/model/topology.py), and the in-kernel path manager is set up to make just those:
- each radio in use has its own table, reaching only the receiver sides its subflows go to and
  ending in `unreachable default`, so that no subflow can leave by another radio (measured:
  without pinning, the LTE endpoint also opens LTE -> A, and the announced B address is reached
  from the WiFi source);
- paired: each radio's endpoint is `subflow`; the main table's default leaves by the first radio
  in use (the initial subflow, to side A), and each other radio's side is routed via that radio,
  so the subflow to the announced address leaves by its own radio;
- fullmesh: each radio's endpoint is `subflow fullmesh`, which has the kernel open a subflow
  from it to every address the receiver has (the initial one and the announced one);
- the limits: one subflow more than the connection needs beyond its first (see sender_plan), and
  one announced address accepted.
Receivers route each side's replies by its own table and announce the B address (`signal`).

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

# Sysctls every node gets. tcp_no_metrics_save: runs must not inherit cached ssthresh/RTT
# from earlier runs (seed 001 does the same); blackhole_timeout 0: never disable MPTCP.
NODE_SYSCTLS = {
    "net.mptcp.enabled": "1",
    "net.mptcp.allow_join_initial_addr_port": "1",
    "net.mptcp.blackhole_timeout": "0",  # skipped on kernels older than it
    # upstream's in-kernel path manager; a sender's is the campaign's paths.manager (userspace:
    # mptcpd with the rig's plugin makes its subflows); skipped on kernels older than the sysctl
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
        backup: bool = False, fullmesh: bool = False) -> Interface:
    return Interface(i.ifname, True, str(i.address), i.prefixlen, str(i.gateway) if i.gateway else None, i.table,
                     tuple(routes), unreachable, tuple(main_routes), endpoint, backup, fullmesh)


def sender_plan(pair: Pair, homing: str, backup: str = "none", mode: str = "paired", manager: str = "kernel") -> Plan:
    """backup: the radio (wifi, lte, lte2) whose subflows are MPTCP backup subflows (multi-homed only).
    manager userspace: the kernel leaves the subflows to mptcpd's rig_pm plugin (nodes/mptcpd),
    which opens them from the same endpoints, each radio's table letting only its own leave."""
    subflows = pair.subflows(homing, mode)
    used = pair.used(homing)
    ifaces = []
    for n, r in enumerate(used):
        mine = [f"{s.remote.address}/32" for s in subflows if s.local == r]
        if len(used) == 1:  # single-homed: the same MPTCP socket with one subflow, announced addresses ignored
            ifaces.append(_up(r, mine, ["default"], "none", True))
            continue
        main = ["default"] if n == 0 else ([] if mode == "fullmesh" else mine)
        ifaces.append(_up(r, mine, main, "subflow", True, backup == r.role, mode == "fullmesh"))
    ifaces += [Interface(r.ifname, False, table=r.table) for r in pair.radios if r not in used]
    # One subflow more than it needs beyond the first, as the paired plan always had (2 with two
    # radios): in paired mode a radio's endpoint also tries the initial address, which its table
    # does not reach (whether the kernel counts that try against the limit was not measured).
    multi = len(subflows) > 1
    return Plan(tuple(ifaces), subflows=len(subflows) if multi else 0,
                add_addr_accepted=len(pair.sides) - 1 if multi else 0,
                sysctls={**NODE_SYSCTLS, "net.mptcp.path_manager": manager})


def receiver_plan(pair: Pair, mode: str = "paired", manager: str = "kernel") -> Plan:
    """The receiver accepts as many joins as its sender's connections make at most (measured: a
    limit of 2 had a full mesh's fourth subflow closed by the receiver 30 ms after its join).
    Under a userspace sender that is twice as many: the plugin replaces a returning radio's
    stalled subflows, and the receiver counts a replaced one for up to seconds after the sender
    reset it (measured: with the plain limit each new join was closed 60 ms after it joined, 2-4
    s in a row; docs/measurements/2026-11-27-userspace-path-manager.md)."""
    a, b = pair.receiver_a, pair.receiver_b
    joins = max(2, len(pair.subflows("dual", mode)))
    return Plan((_up(a, ["default"], ["default"], "none", False), _up(b, ["default"], [], "signal", False)),
                subflows=min(8, 2 * joins) if manager == "userspace" else joins, add_addr_accepted=0,
                sysctls=NODE_SYSCTLS)


def node_plan(topo: Topology, host: str, homing: str = "dual", backup: str = "none",
              no_metrics_save: bool = True, manager: str = "kernel") -> dict:
    """`host`'s plan in `topo`, in the JSON form the agent's `paths` request and the node role's
    stored file take; senders dual-homed unless told otherwise (a setup's resting state).
    no_metrics_save False lets connections start from the kernel's cached metrics of earlier ones.
    manager: the senders' path manager (campaign paths.manager); receivers always the kernel's."""
    for p in topo.pairs:
        if host in (p.sender, p.receiver):
            plan = (sender_plan(p, homing, backup, topo.mode, manager) if host == p.sender
                    else receiver_plan(p, topo.mode, manager))
            if not no_metrics_save:
                plan = replace(plan, sysctls={**plan.sysctls, "net.ipv4.tcp_no_metrics_save": "0"})
            return plan.to_json()
    raise KeyError(f"{host} is not a node of this topology")


def receive_buffer(rcvbuf_bytes: int, autotuning: bool = True) -> dict[str, str]:
    """The receive buffer caps what a receiver advertises (seed 002's 'receiver buffer'): the most
    its autotuning may grow a socket's buffer to from Linux's default, or without autotuning
    every socket's buffer from the start."""
    start = min(131072, rcvbuf_bytes) if autotuning else rcvbuf_bytes
    return {"net.ipv4.tcp_rmem": f"4096 {start} {rcvbuf_bytes}", "net.ipv4.tcp_moderate_rcvbuf": str(int(autotuning))}
