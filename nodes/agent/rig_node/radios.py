"""The node's radios, from its own configuration, and the checks that keep every request on them.

The agent reads the node's configuration once, when it starts (NODE_CONFIG, written by the node
role on the lab and by the emulated rig for its namespaces; a request can never change it):

    {"radios": ["wlan0", "lte0"], "controller": "10.0.0.2", "management": ["10.0.0.0/24"]}

radios      the interfaces that are the rig's: the only ones a request may name or change
controller  the controller's address, management  the management subnets (both optional)

Everything else is the management plane: the management interface, loopback, their addresses
and subnets, and the routes that reach them. A routing plan may only add the rig's own tables,
rules and routes on radio interfaces: an interface that is not a radio, an address or subnet in
the management plane, a route that would take over traffic to it, a table that holds a route of
another interface, or a per-interface sysctl of another interface is refused. Without a readable
configuration the node's radios are unknown and every request that would change routing is refused.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass

from rig_node.plan import TABLES
from rig_node.routing import PROTO, RULE_BASE, ip_json
from rig_node.validate import Refused

NODE_CONFIG = "/etc/rig/node.json"
LOOPBACK = ipaddress.IPv4Network("127.0.0.0/8")


@dataclass(frozen=True)
class Node:
    radios: frozenset[str]
    controller: ipaddress.IPv4Network | None
    management: tuple[ipaddress.IPv4Network, ...]

    def configured(self) -> tuple[ipaddress.IPv4Network, ...]:
        """The management networks the configuration names: the controller (a /32) and the subnets."""
        return ((self.controller,) if self.controller else ()) + self.management


class Unknown:
    """No usable configuration: every check that needs the radios refuses, saying why."""

    def __init__(self, why: str) -> None:
        self.why = why


def load(path: str = NODE_CONFIG) -> Node | Unknown:
    """The node's configuration; Unknown (never an exception) when it is missing or malformed."""
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read(65536).decode())
        if not isinstance(doc, dict) or set(doc) - {"radios", "controller", "management"}:
            raise ValueError("not an object of radios, controller, management")
        radios = doc.get("radios")
        if not isinstance(radios, list) or not all(isinstance(r, str) and r and r != "lo" for r in radios):
            raise ValueError("radios: not a list of interface names (never lo)")
        controller = doc.get("controller")
        management = doc.get("management", [])
        if not isinstance(management, list):
            raise ValueError("management: not a list of subnets")
        return Node(frozenset(radios), ipaddress.IPv4Network(controller) if controller else None,
                    tuple(ipaddress.IPv4Network(m, strict=False) for m in management))
    except OSError as e:
        return Unknown(f"this node's radios are unknown: {path}: {e.strerror}")
    except (ValueError, TypeError, UnicodeDecodeError) as e:
        return Unknown(f"this node's radios are unknown: {path}: {e}")


def _need(node: Node | Unknown, what: str) -> Node:
    if isinstance(node, Unknown):
        raise Refused(f"{what}: {node.why}")
    return node


def interface(node: Node | Unknown, name: str, where: str) -> None:
    """`name` must be one of the node's radios."""
    n = _need(node, where)
    if name not in n.radios:
        radios = ", ".join(sorted(n.radios)) or "none"
        raise Refused(f"{where}: {name!r} is not one of this node's radios ({radios})")


def sysctl_names(node: Node | Unknown, values: dict, where: str) -> None:
    """A per-interface sysctl (net.ipv4.conf.<if>.*) only of a radio; all and default are node-wide."""
    for name in values:
        parts = name.split(".")
        if len(parts) == 5 and parts[:3] == ["net", "ipv4", "conf"] and parts[3] not in ("all", "default"):
            interface(node, parts[3], f"{where} {name}")


def target(node: Node | Unknown, address: str, where: str) -> None:
    """A traffic program's address must not be the controller's or in a management subnet (loopback
    stays the node's own). Only the configuration is read: a launch queries nothing."""
    if isinstance(node, Node):
        a = ipaddress.IPv4Address(address)
        if any(a in n for n in node.configured()):
            raise Refused(f"{where}: {address} is on the management network")


@dataclass(frozen=True)
class View:
    """What the kernel holds now outside the rig: the management plane's networks (the addresses of
    the interfaces that are not radios, with their subnets), and every table's routes that are
    neither through a radio nor the rig's own (protocol PROTO): (destination, table, metric)."""
    protected: tuple[ipaddress.IPv4Network, ...]
    routes: tuple[tuple[ipaddress.IPv4Network, str, int], ...]
    rules: tuple[dict, ...]  # as `ip -j rule show` lists them


def view(node: Node | Unknown) -> View:
    """The management plane as the kernel holds it now (one `ip` process). The agent keeps it
    while what it applied holds (routing.Known): a plan's switch then starts no query of its own."""
    radios = _need(node, "paths").radios
    docs = ip_json("addr show", "route show table all", "rule show")
    protected = [ipaddress.IPv4Network(f"{a['local']}/{a['prefixlen']}", strict=False)
                 for link in docs[0] if link.get("ifname") not in radios for a in link.get("addr_info", [])
                 if a.get("family") == "inet"]
    routes = []
    for r in docs[1]:
        if r.get("dev") in radios or str(r.get("protocol")) == PROTO:
            continue
        dst = "0.0.0.0/0" if r.get("dst") == "default" else r.get("dst", "")
        try:
            routes.append((ipaddress.IPv4Network(dst, strict=False), str(r.get("table", "main")), int(r.get("metric", 0))))
        except ValueError:
            continue  # not an IPv4 destination
    return View(tuple(protected), tuple(routes), tuple(docs[2]))


def plan(node: Node | Unknown, plan, kernel: View) -> None:
    """A routing plan (plan.Plan) that stays on the node's radios and off the management plane
    (`kernel`: as view() saw it)."""
    n = _need(node, "paths")
    for k, i in enumerate(plan.interfaces):
        interface(n, i.name, f"paths.interfaces[{k}].name")
    sysctl_names(n, plan.sysctls, "paths.sysctls")
    protected = (*n.configured(), *kernel.protected, LOOPBACK)
    others = kernel.routes
    for r in kernel.rules:  # the rig's priorities, which an apply rewrites: none may be the management's
        pref, table = int(r.get("priority", 0)), str(r.get("table", ""))
        if RULE_BASE + TABLES[0] <= pref <= RULE_BASE + TABLES[1] and (
                any(t == table for _, t, _ in others) or _in(r.get("src"), protected)):
            raise Refused(f"paths: rule {pref} (the rig's priorities) is the management plane's")
    for k, i in enumerate(plan.interfaces):
        where = f"paths.interfaces[{k}]"
        if i.table and any(table == str(i.table) for _, table, _ in others):
            raise Refused(f"{where}.table: table {i.table} holds routes of another interface")
        if not i.up:
            continue
        subnet = ipaddress.IPv4Network(f"{i.address}/{i.prefixlen}", strict=False)
        for net in protected:
            if subnet.overlaps(net):
                raise Refused(f"{where}.address: {i.address}/{i.prefixlen} overlaps the management plane ({net})")
        for dst in i.routes:
            d = _network(dst)
            hit = next((net for net in protected if d.prefixlen and d.overlaps(net)), None)
            if hit:
                raise Refused(f"{where}.routes: {dst} overlaps the management plane ({hit})")
        for dst in i.main_routes:
            _main_route(_network(dst), dst, protected, others, f"{where}.main_routes")


def _in(address: str | None, networks) -> bool:
    try:
        return address is not None and any(ipaddress.IPv4Address(address) in n for n in networks)
    except ValueError:
        return False


def _network(dst: str) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Network("0.0.0.0/0" if dst == "default" else dst)


def _main_route(d, dst: str, protected, others, where: str) -> None:
    """A main-table route through a radio may not take over traffic to the management plane: it
    may only be wider than the network, and than the route that reaches it now (the longest
    prefix wins; none reaches it: nothing to take over), nor replace a route of another
    interface (`ip route replace` at the plan's metric, 0)."""
    for net in protected:
        if not d.overlaps(net):
            continue
        if d.prefixlen >= net.prefixlen:
            raise Refused(f"{where}: {dst} would route the management plane ({net}) through a radio")
        if net.subnet_of(LOOPBACK):
            continue  # the local table answers for loopback before main
        reaching = [r.prefixlen for r, table, _ in others if table == "main" and net.subnet_of(r)]
        if reaching and d.prefixlen >= max(reaching):
            raise Refused(f"{where}: {dst} would take over the route to the management plane ({net})")
    if any(table == "main" and r == d and metric == 0 for r, table, metric in others):
        raise Refused(f"{where}: {dst} would replace a route of another interface")
