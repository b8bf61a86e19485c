"""The nodes' routing policy, applied the same way on the lab's boards and in emulated nodes.

A node's plan (its schema: plan.py; computed by the controller from the address plan, sent in a
`paths` request or read from the file the node role writes) lists its radio interfaces. Each
interface in use gets its address, its own routing table with a rule `from <address>` at priority 1000 + table, the
table's routes (a sender's tables reach only its paired receiver side and end in `unreachable
default`, so a subflow can never leave by the other radio), its routes in the main table, and an
MPTCP endpoint (`subflow` on senders, `signal` for a receiver's B side). An interface the plan
marks down loses its address, routes, rule and endpoint. Every route the rig installs carries
protocol 77, so what a previous setup or homing left is found and removed.

An apply is one `ip -batch` process. The agent keeps what it applied (Known: the endpoints and
rules as the kernel then holds them), so that the next plan needs no queries of the kernel and
changes the MPTCP endpoints with the fewest commands; a process that knows nothing (an agent
started anew, the interface-up hook) queries first, in one more `ip` process.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass

from rig_node import sysctls
from rig_node.plan import TABLES, Interface, Plan

PROTO = "77"
RULE_BASE = 1000  # rule priority = RULE_BASE + table


def _ip(*args: str, check: bool = True) -> str:
    p = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)
    if check and p.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {p.stderr.strip()}")
    return p.stdout


# Written by an apply outside the agent (rig_agent.py apply: the lab's interface-up hook) before it
# applies; on tmpfs, so none after a reboot. One for the host: an agent in any namespace that
# sees it changed queries the kernel again.
HOOK_STAMP = "/run/rig-node/hook-applied"


@dataclass(frozen=True)
class Known:
    """What this process applied last, as the kernel holds it afterwards: the MPTCP endpoints and
    the rules as `ip -j` lists them (endpoint ids are the rig's own: `id` on every add) and the
    limits; and, to tell whether that still holds, each interface's device and carrier count and
    the hook's stamp. An apply given a Known queries nothing and sends only the endpoint and
    limit commands its plan changes. It does not survive the process (an agent started anew, or
    on a rebooted node, queries the kernel), nor an interface of the plan re-created or whose
    carrier went down or up, nor the interface-up hook's applying its stored plan (HOOK_STAMP):
    the next apply queries then, and also when a command fails."""
    endpoints: tuple[dict, ...]
    rules: tuple[dict, ...]
    limits: tuple[int, int]
    links: tuple[tuple[str, tuple], ...]
    stamp: str | None

    def current(self, names) -> bool:
        """Every one of `names` is the device it was, with the same carrier count, and no hook applied since."""
        links = dict(self.links)
        return self.stamp == _stamp() and all(n in links and links[n] == _link(n) for n in names)


def _stamp() -> str | None:
    try:
        with open(HOOK_STAMP) as f:
            return f.read()
    except OSError:
        return None


def _stamp_hook() -> None:
    try:
        os.makedirs(os.path.dirname(HOOK_STAMP), exist_ok=True)
        with open(HOOK_STAMP, "w") as f:
            f.write(f"{os.getpid()} {time.time_ns()}")
    except OSError:
        pass  # not root: it could not apply anything either


class _Stale(Exception):
    """A command that the known state said would succeed failed: the kernel holds something else."""


class _Commands:
    """The `ip` commands of one apply, run as one `ip -force -batch` process (instead of a process
    each, ~25 on a sender): first the removals, then the additions. The endpoints and rules are
    tracked as the kernel will hold them afterwards (the next apply's Known). A removal of what
    a query just listed may find it gone (-force: the rest still runs); with a Known that is a
    sign of stale knowledge, as is any failing addition. Every word was checked by plan.parse(), so
    none holds a space or a newline."""

    def __init__(self, endpoints, rules, queried: bool) -> None:
        self.listed = [dict(e) for e in endpoints]
        self.endpoints = [dict(e) for e in endpoints]
        self.rules = [dict(r) for r in rules]
        self.queried = queried
        self.removals: list[tuple[tuple[str, ...], bool]] = []  # (words, may fail)
        self.additions: list[tuple[str, ...]] = []

    def remove(self, *args: str, may_fail: bool = False) -> None:
        self.removals.append((args, may_fail or self.queried))

    def add(self, *args: str) -> None:
        self.additions.append(args)

    def delete_endpoint(self, e: dict) -> None:
        self.endpoints = [x for x in self.endpoints if x["id"] != e["id"]]

    def add_endpoint(self, i: Interface) -> None:
        taken = {int(e["id"]) for e in self.listed + self.endpoints}
        new = min(set(range(1, 256)) - taken)  # the kernel's ids are 1-255; none of a listed one
        self.add("mptcp", "endpoint", "add", i.address, "dev", i.name, "id", str(new), *i.endpoint_flags)
        self.endpoints.append({"address": i.address, "id": new, **{f: True for f in i.endpoint_flags}, "dev": i.name})

    def set_backup(self, e: dict, backup: bool) -> None:
        self.add("mptcp", "endpoint", "change", "id", str(e["id"]), "backup" if backup else "nobackup")
        e = next(x for x in self.endpoints if x["id"] == e["id"])
        e.pop("backup", None)
        e.update({"backup": True} if backup else {})

    def delete_rule(self, pref: int) -> None:
        self.remove("rule", "del", "pref", str(pref))
        self.rules = [r for r in self.rules if int(r.get("priority", 0)) != pref]

    def add_rule(self, pref: int, address: str, table: int) -> None:
        self.add("rule", "add", "pref", str(pref), "from", address, "table", str(table))
        self.rules.append({"priority": pref, "src": address, "table": str(table)})

    def _endpoint_removals(self) -> list[tuple[tuple[str, ...], bool]]:
        """Each endpoint delete waits for an RCU grace period in the kernel (~10-15 ms measured);
        when every listed endpoint goes, one flush does it in one."""
        gone = [e for e in self.listed if e["id"] not in {x["id"] for x in self.endpoints}]
        if len(gone) >= 2 and len(gone) == len(self.listed):
            return [(("mptcp", "endpoint", "flush"), False)]
        return [(("mptcp", "endpoint", "delete", "id", str(e["id"])), self.queried) for e in gone]

    def run(self) -> None:
        lines = self.removals + self._endpoint_removals() + [(a, False) for a in self.additions]
        if not lines:
            return
        p = subprocess.run(["ip", "-force", "-batch", "-"], input="".join(" ".join(c) + "\n" for c, _ in lines),
                           capture_output=True, text=True, timeout=30)
        if p.returncode == 0:
            return
        # iproute2 names each failed line: "Command failed -:N"
        failed = [int(n) for n in re.findall(r"^Command failed -:(\d+)$", p.stderr, re.M)]
        if not failed:
            raise RuntimeError(f"ip -batch: {p.stderr.strip()}")
        if any(not lines[n - 1][1] for n in failed if 0 < n <= len(lines)):
            if not self.queried:
                raise _Stale(p.stderr.strip())
            raise RuntimeError(f"ip -batch: {p.stderr.strip()}")


def _endpoints() -> list[dict]:
    return json.loads(_ip("-j", "mptcp", "endpoint", "show") or "[]")


def ip_json(*commands: str) -> list:
    """What `ip -j` lists for each of `commands`, from one `ip` process (a JSON array per command)."""
    p = subprocess.run(["ip", "-j", "-batch", "-"], input="".join(c + "\n" for c in commands),
                       capture_output=True, text=True, timeout=10)
    if p.returncode != 0:
        raise RuntimeError(f"ip -j -batch ({', '.join(commands)}): {p.stderr.strip()}")
    decoder, text, at, out = json.JSONDecoder(), p.stdout, 0, []
    while len(out) < len(commands):
        while at < len(text) and text[at].isspace():
            at += 1
        value, at = decoder.raw_decode(text, at)
        out.append(value)
    return out


def _listing() -> tuple[list[dict], list[dict]]:
    """The MPTCP endpoints and the rules."""
    endpoints, rules = ip_json("mptcp endpoint show", "rule show")
    return endpoints, rules


def _flags(endpoint: dict) -> list[str]:
    """`ip -j mptcp endpoint` shows each flag as a key set to true."""
    return [f for f in ("signal", "subflow", "backup", "fullmesh") if endpoint.get(f)]


def _link(name: str) -> tuple:
    """The device behind a name and how often its carrier changed (a sysfs read each, no process)."""
    out = []
    for f in ("ifindex", "carrier_changes"):
        try:
            with open(f"/sys/class/net/{name}/{f}") as text:
                out.append(int(text.read()))
        except (OSError, ValueError):  # no such interface (yet)
            return ()
    return tuple(out)


def _down(i: Interface, ip: _Commands) -> None:
    ip.remove("addr", "flush", "dev", i.name)
    ip.remove("link", "set", i.name, "down")
    ip.remove("route", "flush", "table", "main", "proto", PROTO, "dev", i.name)
    if i.table:
        ip.remove("route", "flush", "table", str(i.table), may_fail=True)  # an empty table does not exist


def _up(i: Interface, ip: _Commands) -> None:
    sysctls.apply({f"net.ipv4.conf.{i.name}.rp_filter": "0"})
    ip.add("link", "set", i.name, "up")
    ip.add("addr", "replace", f"{i.address}/{i.prefixlen}", "dev", i.name)
    table = str(i.table)
    ip.remove("route", "flush", "table", table, may_fail=True)
    for dst in i.routes:
        ip.add("route", "replace", dst, *i.nexthop, "table", table, "proto", PROTO)
    if i.unreachable_default:
        ip.add("route", "replace", "unreachable", "default", "table", table, "proto", PROTO)
    pref = RULE_BASE + i.table
    for r in list(ip.rules):  # exactly one rule for the address, and none other at its priority
        if r.get("src") == i.address or int(r.get("priority", 0)) == pref:
            ip.delete_rule(int(r["priority"]))
    ip.add_rule(pref, i.address, i.table)
    ip.remove("route", "flush", "table", "main", "proto", PROTO, "dev", i.name)
    for dst in i.main_routes:
        ip.add("route", "replace", dst, *i.nexthop, "proto", PROTO)
    _endpoint(i, ip)


def _endpoint(i: Interface, ip: _Commands) -> None:
    """The interface's endpoint as the plan has it: one whose flags differ only in `backup` is
    changed in place; any other difference deletes and adds (each delete costs a grace period)."""
    have = [e for e in ip.endpoints if e.get("address") == i.address]
    wanted = i.endpoint_flags
    if all(sorted(_flags(e)) == wanted and e.get("dev") == i.name for e in have) and (have or not wanted):
        return
    if len(have) == 1 and wanted and have[0].get("dev") == i.name and \
            sorted(set(_flags(have[0])) - {"backup"}) == sorted(set(wanted) - {"backup"}):
        ip.set_backup(have[0], i.backup)
        return
    for e in have:
        ip.delete_endpoint(e)
    if wanted:
        ip.add_endpoint(i)


def _forget_others(plan: Plan, ip: _Commands) -> None:
    """What earlier plans left that this one does not own: rules in the rig's range and endpoints
    of addresses no interface in use has."""
    mine = {i.address for i in plan.interfaces if i.up}
    prefs = {RULE_BASE + i.table for i in plan.interfaces if i.up}
    for r in list(ip.rules):
        p = int(r.get("priority", 0))
        if RULE_BASE + TABLES[0] <= p <= RULE_BASE + TABLES[1] and p not in prefs:
            ip.delete_rule(p)
            ip.remove("route", "flush", "table", str(p - RULE_BASE), may_fail=True)
    for e in list(ip.endpoints):
        if e.get("address") not in mine:
            ip.delete_endpoint(e)


def state() -> str:
    """What the policy decides, as text: compared before and after to report a change."""
    return "\n".join([_ip("-4", "addr", "show"), _ip("rule", "show"), _ip("-4", "route", "show", "table", "all"),
                      _ip("mptcp", "endpoint", "show"), _ip("mptcp", "limits", "show")])


def apply(plan: Plan, only: str | None = None) -> None:
    """Bring the node to `plan`; with `only`, just that interface (an interface coming up) and the
    node-wide parts (sysctls, limits). Interfaces that do not exist are skipped. For a process
    that keeps no knowledge (the interface-up hook): it stamps HOOK_STAMP first, so that an agent
    running on the node queries the kernel again at its next apply."""
    _stamp_hook()
    update(plan, None, only)


def update(plan: Plan, known: Known | None, only: str | None = None) -> Known:
    """apply, for the agent: from what it applied last (`known`, the Known returned then; None:
    nothing yet), without querying the kernel unless that no longer holds (Known.current) or a
    command fails. Returns what is known afterwards."""
    sysctls.apply(plan.sysctls)
    if known is not None and known.current([i.name for i in plan.interfaces]):
        try:
            return _apply(plan, only, known)
        except _Stale:
            pass
    return _apply(plan, only, None)


def _apply(plan: Plan, only: str | None, known: Known | None) -> Known:
    stamp = _stamp()
    ip = _Commands(*_listing(), True) if known is None else _Commands(known.endpoints, known.rules, False)
    present = [i for i in plan.interfaces if _exists(i.name) and only in (None, i.name)]
    if known is None:
        ip.add("link", "set", "lo", "up")
    for i in present:
        if not i.up:
            _down(i, ip)
    if only is None:
        _forget_others(plan, ip)
    for i in present:
        if i.up:
            _up(i, ip)
    limits = (plan.subflows, plan.add_addr_accepted)
    if known is None or known.limits != limits:
        ip.add("mptcp", "limits", "set", "subflows", str(plan.subflows), "add_addr_accepted", str(plan.add_addr_accepted))
    ip.run()
    links = tuple((i.name, _link(i.name)) for i in plan.interfaces)
    return Known(tuple(ip.endpoints), tuple(ip.rules), limits, links, stamp)


def link_down(name: str) -> None:
    """The interface loses its link, as a radio that lost its signal: the kernel drops the routes
    through it; its address and MPTCP endpoint stay."""
    _ip("link", "set", name, "down")


def link_up(plan: Plan, name: str, known: Known | None = None) -> Known:
    """The link is back: up again, with its routes (apply for just this interface)."""
    _ip("link", "set", name, "up")
    return update(plan, known, only=name)


def _exists(name: str) -> bool:
    return os.path.exists(f"/sys/class/net/{name}")  # ip netns exec mounts the namespace's own sysfs
