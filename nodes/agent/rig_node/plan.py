"""A node's routing plan: its one definition, for the controller that builds plans
(rig/model/routing.py) and the agent that applies them (routing.py).

A plan lists the node's radio interfaces, the MPTCP limits and the node's sysctls. Each field
of an interface is declared once, in Interface, with its default and its check: parse() checks
a plan's JSON form against it (a field outside it is refused), to_json() writes that form. A new
field is one line here and its value where the controller decides it.

An interface the plan marks down carries only its name and its table (emptied, if given).

Standard library only, like all of rig_node (copied as is onto the lab's boards).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from rig_node import sysctls, validate as v
from rig_node.validate import Refused

TABLES = (1, 252)  # 253-255 are the kernel's default, main and local tables
ENDPOINT_FLAGS = ("subflow", "signal", "none")
MOST_ROUTES = 32


def _routes(value: object, where: str) -> tuple[str, ...]:
    return tuple(v.destination(r, where) for r in v.listed(value, where, MOST_ROUTES))


def _gateway(value: object, where: str) -> str | None:
    return None if value in (None, "") else v.ipv4(value, where)


def _spec(check, *, required: bool = False, down=None, optional: bool = False, **kw):
    """A field of the plan's JSON form. check(value, where) -> the value, or Refused; required: an
    interface in use must give it; down: the check of a down interface's value (None: a down
    interface has no such field); optional: to_json() leaves it out while it has its default."""
    return field(metadata={"check": check, "required": required, "down": down, "optional": optional}, **kw)


@dataclass(frozen=True)
class Interface:
    name: str = _spec(v.ifname, required=True, down=v.ifname)
    up: bool = _spec(v.boolean, down=v.boolean, default=True)
    address: str = _spec(v.ipv4, required=True, default="")
    prefixlen: int = _spec(lambda x, w: v.integer(x, w, 1, 32), required=True, default=0)
    gateway: str | None = _spec(_gateway, default=None)  # None on a point-to-point link (a raw-IP LTE modem)
    table: int = _spec(lambda x, w: v.integer(x, w, *TABLES), required=True,
                       down=lambda x, w: v.integer(x, w, 0, TABLES[1]), default=0)
    routes: tuple[str, ...] = _spec(_routes, default=())  # the interface's own table
    unreachable_default: bool = _spec(v.boolean, default=False)
    main_routes: tuple[str, ...] = _spec(_routes, default=())
    endpoint: str = _spec(lambda x, w: v.one_of(x, w, ENDPOINT_FLAGS), default="none")
    # the endpoint's subflows are MPTCP backup subflows (used when no other path is)
    backup: bool = _spec(v.boolean, optional=True, default=False)
    # a `subflow` endpoint that opens a subflow to every address the peer has, not only its first
    fullmesh: bool = _spec(v.boolean, optional=True, default=False)

    @property
    def endpoint_flags(self) -> list[str]:
        """The MPTCP endpoint's flags as `ip mptcp endpoint add` takes them, sorted; none: no endpoint."""
        if self.endpoint == "none":
            return []
        return sorted([self.endpoint, *(["backup"] if self.backup else []), *(["fullmesh"] if self.fullmesh else [])])

    @property
    def nexthop(self) -> list[str]:
        return ["via", self.gateway, "dev", self.name] if self.gateway else ["dev", self.name]

    def to_json(self) -> dict:
        if not self.up:
            return {f.name: getattr(self, f.name) for f in fields(self) if f.metadata["down"]}
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if not (f.metadata["optional"] and value == f.default):
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


@dataclass(frozen=True)
class Plan:
    interfaces: tuple[Interface, ...]
    subflows: int = 2
    add_addr_accepted: int = 0
    sysctls: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"interfaces": [i.to_json() for i in self.interfaces],
                "limits": {"subflows": self.subflows, "add_addr_accepted": self.add_addr_accepted},
                "sysctls": dict(self.sysctls)}


def _interface(d: object, where: str) -> Interface:
    d = v.mapping(d, where, 16)
    v.only(d, {f.name for f in fields(Interface)}, where)
    v.need(d, "name", where)  # up or down
    values: dict = {}
    for f in fields(Interface):  # name and up first: the other fields' checks depend on up
        check = f.metadata["check"] if values.get("up", True) else f.metadata["down"]
        if check is None:
            continue  # a down interface's other fields are not looked at
        if f.name in d:
            values[f.name] = check(d[f.name], f"{where}.{f.name}")
        elif f.metadata["required"] and values.get("up", True):
            v.need(d, f.name, where)
    if values.get("fullmesh") and values.get("endpoint") != "subflow":
        raise Refused(f"{where}.fullmesh: only a subflow endpoint can be fullmesh")
    return Interface(**values)


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
