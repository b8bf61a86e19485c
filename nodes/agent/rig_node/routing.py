"""The nodes' routing policy, applied the same way on the lab's boards and in emulated nodes.

A node's plan (computed by the controller from the address plan, sent in a `paths` request or
read from the file the node role writes) lists its radio interfaces. Each interface in use gets
its address, its own routing table with a rule `from <address>` at priority 1000 + table, the
table's routes (a sender's tables reach only its paired receiver side and end in `unreachable
default`, so a subflow can never leave by the other radio), its routes in the main table, and an
MPTCP endpoint (`subflow` on senders, `signal` for a receiver's B side). An interface the plan
marks down loses its address, routes, rule and endpoint. Every route the rig installs carries
protocol 77, so what a previous setup or homing left is found and removed.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass

from rig_node import sysctls, validate as v
from rig_node.validate import Refused

PROTO = "77"
RULE_BASE = 1000  # rule priority = RULE_BASE + table
TABLES = (1, 252)  # 253-255 are the kernel's default, main and local tables
ENDPOINT_FLAGS = ("subflow", "signal", "none")


@dataclass(frozen=True)
class Interface:
    name: str
    up: bool
    address: str = ""
    prefixlen: int = 0
    gateway: str | None = None  # None on a point-to-point link (a raw-IP LTE modem)
    table: int = 0
    routes: tuple[str, ...] = ()  # the interface's own table
    unreachable_default: bool = False
    main_routes: tuple[str, ...] = ()
    endpoint: str = "none"
    backup: bool = False  # the endpoint's subflows are MPTCP backup subflows (used when no other path is)

    @property
    def endpoint_flags(self) -> list[str]:
        """The MPTCP endpoint's flags as `ip mptcp endpoint add` takes them, sorted; none: no endpoint."""
        return [] if self.endpoint == "none" else sorted([self.endpoint, *(["backup"] if self.backup else [])])

    @property
    def nexthop(self) -> list[str]:
        return ["via", self.gateway, "dev", self.name] if self.gateway else ["dev", self.name]


@dataclass(frozen=True)
class Plan:
    interfaces: tuple[Interface, ...]
    subflows: int
    add_addr_accepted: int
    sysctls: dict


def _interface(d: object, where: str) -> Interface:
    d = v.mapping(d, where, 16)
    v.only(d, {"name", "up", "address", "prefixlen", "gateway", "table", "routes", "unreachable_default",
               "main_routes", "endpoint", "backup"}, where)
    name = v.ifname(v.need(d, "name", where), f"{where}.name")
    if not v.boolean(d.get("up", True), f"{where}.up"):  # its table, if given, is emptied
        return Interface(name, False, table=v.integer(d.get("table", 0), f"{where}.table", 0, TABLES[1]))
    gateway = d.get("gateway")
    return Interface(
        name, True,
        address=v.ipv4(v.need(d, "address", where), f"{where}.address"),
        prefixlen=v.integer(v.need(d, "prefixlen", where), f"{where}.prefixlen", 1, 32),
        gateway=None if gateway in (None, "") else v.ipv4(gateway, f"{where}.gateway"),
        table=v.integer(v.need(d, "table", where), f"{where}.table", *TABLES),
        routes=tuple(v.destination(r, f"{where}.routes") for r in v.listed(d.get("routes", []), f"{where}.routes", 32)),
        unreachable_default=v.boolean(d.get("unreachable_default", False), f"{where}.unreachable_default"),
        main_routes=tuple(v.destination(r, f"{where}.main_routes")
                          for r in v.listed(d.get("main_routes", []), f"{where}.main_routes", 32)),
        endpoint=v.one_of(d.get("endpoint", "none"), f"{where}.endpoint", ENDPOINT_FLAGS),
        backup=v.boolean(d.get("backup", False), f"{where}.backup"),
    )


def parse(d: object) -> Plan:
    """A plan from its JSON form, every field checked."""
    d = v.mapping(d, "paths", 8)
    v.only(d, {"interfaces", "limits", "sysctls"}, "paths")
    ifaces = tuple(_interface(x, f"paths.interfaces[{i}]")
                   for i, x in enumerate(v.listed(v.need(d, "interfaces", "paths"), "paths.interfaces", 8)))
    if len({i.name for i in ifaces}) != len(ifaces):
        raise Refused("paths.interfaces: an interface is listed twice")
    if len({i.table for i in ifaces if i.up}) != len([i for i in ifaces if i.up]) or any(
            not i.up and i.table in {u.table for u in ifaces if u.up} for i in ifaces):
        raise Refused("paths.interfaces: two interfaces share a routing table")
    limits = v.mapping(d.get("limits", {}), "paths.limits", 2)
    v.only(limits, {"subflows", "add_addr_accepted"}, "paths.limits")
    return Plan(ifaces, v.integer(limits.get("subflows", 2), "paths.limits.subflows", 0, 8),
                v.integer(limits.get("add_addr_accepted", 0), "paths.limits.add_addr_accepted", 0, 8),
                sysctls.checked(v.mapping(d.get("sysctls", {}), "paths.sysctls", 32)))


def _ip(*args: str, check: bool = True) -> str:
    p = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)
    if check and p.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {p.stderr.strip()}")
    return p.stdout


class _Commands:
    """The `ip` commands of one apply, run as two `ip -batch` processes instead of one process
    each (~25 on a sender: most of a run's configure time): first the removals, which may find
    nothing to remove, then the additions, in order, stopping at the first that fails. Every
    word was checked by parse(), so none holds a space or a newline."""

    def __init__(self) -> None:
        self.removals: list[tuple[str, ...]] = []
        self.additions: list[tuple[str, ...]] = []

    def remove(self, *args: str) -> None:
        self.removals.append(args)

    def add(self, *args: str) -> None:
        self.additions.append(args)

    def run(self) -> None:
        for cmds, force in ((self.removals, True), (self.additions, False)):
            if not cmds:
                continue
            p = subprocess.run(["ip", *(["-force"] if force else []), "-batch", "-"], input="".join(
                " ".join(c) + "\n" for c in cmds), capture_output=True, text=True, timeout=30)
            if not force and p.returncode != 0:
                raise RuntimeError(f"ip -batch: {p.stderr.strip()}")


def _endpoints() -> list[dict]:
    return json.loads(_ip("-j", "mptcp", "endpoint", "show") or "[]")


def _flags(endpoint: dict) -> list[str]:
    """`ip -j mptcp endpoint` shows each flag as a key set to true."""
    return [f for f in ("signal", "subflow", "backup", "fullmesh") if endpoint.get(f)]


def _rules() -> list[dict]:
    return json.loads(_ip("-j", "rule", "show") or "[]")


def _down(i: Interface, ip: _Commands) -> None:
    ip.remove("addr", "flush", "dev", i.name)
    ip.remove("link", "set", i.name, "down")
    ip.remove("route", "flush", "table", "main", "proto", PROTO, "dev", i.name)
    if i.table:
        ip.remove("route", "flush", "table", str(i.table))


def _up(i: Interface, endpoints: list[dict], rules: list[dict], ip: _Commands) -> None:
    sysctls.apply({f"net.ipv4.conf.{i.name}.rp_filter": "0"})
    ip.add("link", "set", i.name, "up")
    ip.add("addr", "replace", f"{i.address}/{i.prefixlen}", "dev", i.name)
    table = str(i.table)
    ip.remove("route", "flush", "table", table)
    for dst in i.routes:
        ip.add("route", "replace", dst, *i.nexthop, "table", table, "proto", PROTO)
    if i.unreachable_default:
        ip.add("route", "replace", "unreachable", "default", "table", table, "proto", PROTO)
    pref = str(RULE_BASE + i.table)
    for r in rules:  # exactly one rule for the address, and none other at its priority
        if r.get("src") == i.address or str(r.get("priority")) == pref:
            ip.remove("rule", "del", "pref", str(r["priority"]))
    ip.add("rule", "add", "pref", pref, "from", i.address, "table", table)
    ip.remove("route", "flush", "table", "main", "proto", PROTO, "dev", i.name)
    for dst in i.main_routes:
        ip.add("route", "replace", dst, *i.nexthop, "proto", PROTO)
    have = [e for e in endpoints if e.get("address") == i.address]
    wanted = i.endpoint_flags
    if any(sorted(_flags(e)) != wanted or e.get("dev") != i.name for e in have) or (wanted and not have):
        for e in have:
            ip.remove("mptcp", "endpoint", "delete", "id", str(e["id"]))
        if wanted:
            ip.add("mptcp", "endpoint", "add", i.address, "dev", i.name, *wanted)


def _forget_others(plan: Plan, endpoints: list[dict], rules: list[dict], ip: _Commands) -> None:
    """What earlier plans left that this one does not own: rules in the rig's range and endpoints
    of addresses no interface in use has."""
    mine = {i.address for i in plan.interfaces if i.up}
    prefs = {RULE_BASE + i.table for i in plan.interfaces if i.up}
    for r in rules:
        p = int(r.get("priority", 0))
        if RULE_BASE + TABLES[0] <= p <= RULE_BASE + TABLES[1] and p not in prefs:
            ip.remove("rule", "del", "pref", str(p))
            ip.remove("route", "flush", "table", str(p - RULE_BASE))
    for e in endpoints:
        if e.get("address") not in mine:
            ip.remove("mptcp", "endpoint", "delete", "id", str(e["id"]))


def state() -> str:
    """What the policy decides, as text: compared before and after to report a change."""
    return "\n".join([_ip("-4", "addr", "show"), _ip("rule", "show"), _ip("-4", "route", "show", "table", "all"),
                      _ip("mptcp", "endpoint", "show"), _ip("mptcp", "limits", "show")])


def apply(plan: Plan, only: str | None = None) -> None:
    """Bring the node to `plan`; with `only`, just that interface (an interface coming up) and the
    node-wide parts (sysctls, limits). Interfaces that do not exist are skipped."""
    sysctls.apply(plan.sysctls)
    ip = _Commands()
    ip.add("link", "set", "lo", "up")
    endpoints, rules = _endpoints(), _rules()
    present = [i for i in plan.interfaces if _exists(i.name) and only in (None, i.name)]
    for i in present:
        if not i.up:
            _down(i, ip)
    if only is None:
        _forget_others(plan, endpoints, rules, ip)
    for i in present:
        if i.up:
            _up(i, endpoints, rules, ip)
    ip.add("mptcp", "limits", "set", "subflows", str(plan.subflows), "add_addr_accepted", str(plan.add_addr_accepted))
    ip.run()


def link_down(name: str) -> None:
    """The interface loses its link, as a radio that lost its signal: the kernel drops the routes
    through it; its address and MPTCP endpoint stay."""
    _ip("link", "set", name, "down")


def link_up(plan: Plan, name: str) -> None:
    """The link is back: up again, with its routes (apply for just this interface)."""
    _ip("link", "set", name, "up")
    apply(plan, only=name)


def renew_endpoint(plan: Plan, name: str) -> None:
    """Deletes and adds again the interface's endpoint: a `subflow` one opens new subflows, a
    `signal` one is announced again (after the peers dropped their subflows to it)."""
    i = next((i for i in plan.interfaces if i.name == name and i.up and i.endpoint != "none"), None)
    if i is None:
        return
    ip = _Commands()
    for e in _endpoints():
        if e.get("address") == i.address:
            ip.remove("mptcp", "endpoint", "delete", "id", str(e["id"]))
    ip.add("mptcp", "endpoint", "add", i.address, "dev", i.name, *i.endpoint_flags)
    ip.run()


def _exists(name: str) -> bool:
    return os.path.exists(f"/sys/class/net/{name}")  # ip netns exec mounts the namespace's own sysfs
