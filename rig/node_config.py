"""Shell scripts that configure a node for a setup and a run, the way a real node is configured.

A node gets, per radio interface: its address, one routing table with a rule `from <addr>`,
and an MPTCP endpoint. Senders use `subflow` endpoints; each receiver announces its B-side
address (`signal`). A sender's per-interface tables are *pinned* to its own receiver: the
WiFi table reaches only the receiver's A address and the LTE table only its B address, each
ending in `unreachable default`. On this kernel's in-kernel path manager that yields exactly
two subflows per connection, WiFi -> A and LTE -> B (measured: without pinning the LTE
endpoint also opens LTE -> A, and the announced B address is reached from the WiFi source).
The main table routes B via LTE so the subflow to the announced address leaves on LTE.

The scripts are plain `sh` so the node agent runs them on emulated and physical nodes alike;
the Ansible node role installs the same logic as an interface-up hook.
"""

from __future__ import annotations

from rig.emu.topology import Pair, RadioInterface, Topology

# Sysctls every node gets. tcp_no_metrics_save: runs must not inherit cached ssthresh/RTT
# from earlier runs (seed 001 does the same); blackhole_timeout 0: never disable MPTCP.
NODE_SYSCTLS = {
    "net.mptcp.enabled": "1",
    "net.mptcp.allow_join_initial_addr_port": "1",
    "net.ipv4.tcp_no_metrics_save": "1",
    # iperf3 -n ends the test once the sender has *written* the volume; a small unsent queue
    # keeps that moment close to delivery (measured: 2 MB delivered 31 % -> 70-80 % at test end).
    "net.ipv4.tcp_notsent_lowat": "131072",
    "net.ipv4.conf.all.rp_filter": "0",
    "net.ipv4.conf.default.rp_filter": "0",
    "net.ipv4.conf.all.arp_ignore": "1",  # two interfaces in one subnet (Setup III): answer ARP
    "net.ipv4.conf.all.arp_announce": "2",  # only for the address of the asking interface
}
OPTIONAL_SYSCTLS = {"net.mptcp.blackhole_timeout": "0"}  # only on kernels that have it


def _sysctls(values: dict[str, str], optional: dict[str, str] | None = None) -> list[str]:
    lines = [f"sysctl -qw {k}={v}" for k, v in values.items()]
    lines += [f"[ -e /proc/sys/{k.replace('.', '/')} ] && sysctl -qw {k}={v} || true" for k, v in (optional or {}).items()]
    return lines


def _address(i: RadioInterface) -> list[str]:
    return [
        f"ip addr replace {i.address}/{i.prefixlen} dev {i.ifname}",
        f"ip link set {i.ifname} up",
        f"ip rule del pref {i.table} 2>/dev/null || true",
        f"ip rule add pref {i.table} from {i.address} table {i.table}",
    ]


def _via(i: RadioInterface) -> str:
    """The next hop through `i`: its gateway, or the link itself on a point-to-point modem."""
    return f"via {i.gateway} dev {i.ifname}" if i.gateway else f"dev {i.ifname}"


def node_base_script(ifaces: list[RadioInterface]) -> str:
    """Addresses, rules and sysctls; run once per setup after the radios are attached."""
    lines = ["set -e", *_sysctls(NODE_SYSCTLS, OPTIONAL_SYSCTLS), "ip link set lo up"]
    for i in ifaces:
        lines += [f"ip link set {i.ifname} mtu 1500", f"sysctl -qw net.ipv4.conf.{i.ifname}.rp_filter=0", *_address(i)]
    return "\n".join(lines) + "\n"


def node_setup_script(topo: Topology, host: str) -> str:
    """What `host` gets once per setup: its base, and on a receiver its routes and announcement."""
    script = node_base_script(topo.interfaces_of(host))
    receiver_of = {p.receiver: p for p in topo.pairs}
    return script + receiver_setup_script(receiver_of[host]) if host in receiver_of else script


def sender_run_script(pair: Pair, homing: str) -> str:
    """Homing (which interfaces are up), pinned routes and endpoints for one run.

    The congestion control is not set here: a namespace may only make a CC its default if the
    host-wide tcp_allowed_congestion_control lists it, and the rig never changes host
    settings. The sender sets it per socket instead (iperf3 -C), which root may do for any CC.
    """
    w, l = pair.sender_wifi, pair.sender_lte
    a, b = pair.receiver_a.address, pair.receiver_b.address
    use = {"dual": (w, l), "wifi": (w,), "lte": (l,)}[homing]
    lines = ["set -e", "ip mptcp endpoint flush"]
    for i in (w, l):
        lines.append(f"ip route flush table {i.table} 2>/dev/null || true")
        if i not in use:
            lines += [f"ip addr flush dev {i.ifname}", f"ip link set {i.ifname} down"]
    lines += ["ip route flush table main proto static 2>/dev/null || true"]
    for i in use:
        lines += _address(i)
        target = a if i is w else b
        lines += [
            f"ip route replace {target}/32 {_via(i)} table {i.table}",
            f"ip route replace unreachable default table {i.table}",
        ]
    primary = w if w in use else l
    lines.append(f"ip route replace default {_via(primary)} proto static")
    if homing == "dual":
        lines += [
            f"ip route replace {b}/32 {_via(l)} proto static",
            f"ip mptcp endpoint add {w.address} dev {w.ifname} subflow",
            f"ip mptcp endpoint add {l.address} dev {l.ifname} subflow",
            "ip mptcp limits set subflows 2 add_addr_accepted 1",
        ]
    else:  # single-homed: the same MPTCP socket with one subflow, announced addresses ignored
        lines.append("ip mptcp limits set subflows 0 add_addr_accepted 0")
    return "\n".join(lines) + "\n"


def receiver_setup_script(pair: Pair) -> str:
    """Per-interface default routes and the B-side announcement; once per setup."""
    a, b = pair.receiver_a, pair.receiver_b
    lines = ["set -e", "ip mptcp endpoint flush"]
    for i in (a, b):
        lines += [f"ip route flush table {i.table} 2>/dev/null || true",
                  f"ip route replace default {_via(i)} table {i.table}"]
    lines += [
        f"ip route replace default {_via(a)}",
        f"ip mptcp endpoint add {b.address} dev {b.ifname} signal",
        "ip mptcp limits set subflows 2 add_addr_accepted 0",
    ]
    return "\n".join(lines) + "\n"


def receiver_run_script(rcvbuf_bytes: int) -> str:
    """The receive buffer caps what the receiver advertises (seed 002's 'receiver buffer')."""
    return f"sysctl -qw net.ipv4.tcp_rmem='4096 {min(131072, rcvbuf_bytes)} {rcvbuf_bytes}'\n"
