"""A run's events: the campaign's events on the run's clock, handed before T0 to whoever acts them
out, and what became of each.

On the emulated rig an event acts on the radio model's station link (a PipeChange the emulator
applies at its time), and a path going down or up also acts on the sender's interface (the node
agent's timeline: the link goes down, as a modem that lost its signal, and comes back with its
routes). On the lab there is no radio model to change: the node agent acts out state changes, and
impairments with tc netem on what the node sends.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

import pyarrow as pa

from rig.core.errors import InputError
from rig.model.spec import Event, Run
from rig.model.topology import Pair, Topology

SCHEMA = pa.schema([("planned", pa.float64()), ("actual", pa.float64()), ("lateness_ms", pa.float64()),
                    ("at_s", pa.float64()), ("event", pa.int32()), ("path", pa.string()), ("pair", pa.int32()),
                    ("host", pa.string()), ("interface", pa.string()), ("what", pa.string()), ("values", pa.string()),
                    ("where", pa.string()), ("error", pa.string())])


@dataclass(frozen=True)
class Planned:
    """One event for one pair's sender, at unix time `at`."""

    id: str
    index: int  # the event's position in the run's list (run_events: the campaign's, then the derived ones)
    event: Event
    pair: Pair
    at: float

    @property
    def iface(self) -> str:
        return self.pair.radio(self.event.path).ifname

    def values(self) -> dict:
        e = self.event
        return {k: v for k, v in e.model_dump(include={"state", "direction", "rate_bps", "delay_ms", "jitter_ms",
                                                       "loss_pct", "trace"}).items() if v is not None}


def check_for_lab(events: list[Event], source: str) -> None:
    """What the lab's nodes cannot act out: a trace (no radio model to follow it), an impairment
    of what a node receives (tc shapes what an interface sends)."""
    for i, e in enumerate(events):
        if e.trace is not None:
            raise InputError(source, f"events[{i}].trace", "traces need the emulated rig's radio models")
        if e.kind == "impairment" and e.direction != "up":
            raise InputError(source, f"events[{i}].direction", "on the lab a node impairs only what it sends: use up")


def run_events(events: list[Event], run: Run) -> list[Event]:
    """A run's events: the campaign's, then those its loss levels imply. A level of factor
    wifi_loss_pct or lte_loss_pct is that path's loss on what the senders send from T0: the event
    `{at_s: 0, path: P, loss_pct: L, direction: up}`, applied, recorded and restored as any other."""
    derived = [Event(at_s=0, path=path, loss_pct=level, direction="up")
               for path, level in (("wifi", run.wifi_loss_pct), ("lte", run.lte_loss_pct)) if level is not None]
    return [*events, *derived]


def plan(events: list[Event], topo: Topology, t0: float) -> list[Planned]:
    return [Planned(uuid.uuid4().hex[:12], i, e, p, t0 + e.at_s)
            for i, e in enumerate(events) for p in topo.pairs if e.pairs is None or p.index in e.pairs]


def _node_actions(item: Planned, radio_acts: bool) -> list[tuple[str, dict]]:
    """(host, action) for the node agents. A path going down or coming back up: the sender's
    interface (its link; back up, its routes too). What the connection does next is its path
    manager's (docs/campaigns.md): the rig announces and renews nothing."""
    e = item.event
    if e.kind == "state":
        return [(item.pair.sender, {"id": item.id, "action": "link", "at": item.at, "iface": item.iface, "state": e.state})]
    if e.kind == "impairment" and not radio_acts:
        return [(item.pair.sender, {"id": item.id, "action": "impair", "at": item.at, "iface": item.iface,
                                    **{k: getattr(e, k) for k in ("rate_bps", "delay_ms", "jitter_ms", "loss_pct")}})]
    return []


@dataclass
class Scheduled:
    radio_ids: dict  # change id -> Planned (the backend's radios act these out)
    node_actions: list  # (Planned, host, action) handed to the agents


def schedule(ctx, items: list[Planned]) -> Scheduled:
    """Hands every event to the radios (those they act out) and the agents; returns before the
    first is due."""
    radio_ids = ctx.radios.schedule([item for item in items if ctx.radios.acts(item)])
    node_actions = [(item, host, action) for item in items
                    for host, action in _node_actions(item, ctx.radios.acts(item))]
    actions: dict[str, list[dict]] = {}
    for _, host, action in node_actions:
        actions.setdefault(host, []).append(action)
    ctx.agents.each(list(actions), lambda a: a.request("timeline", actions=actions[a.host]))
    return Scheduled(radio_ids, node_actions)


def _row(item: Planned, planned: float, actual: float | None, where: str, error: str | None = None,
         host: str | None = None, iface: str | None = None) -> dict:
    return {"planned": planned, "actual": actual, "lateness_ms": None if actual is None else round((actual - planned) * 1e3, 3),
            "at_s": item.event.at_s, "event": item.index, "path": item.event.path, "pair": item.pair.index,
            "host": host or item.pair.sender, "interface": iface or item.iface, "what": item.event.kind,
            "values": json.dumps(item.values(), sort_keys=True), "where": where, "error": error}


def collect(ctx, scheduled: Scheduled, t0: float, t_end: float, unreachable: frozenset | set = frozenset()) -> list[dict]:
    """What became of each event (one row per place it acted: radio, node); an event due after
    the run ended has a row with no actual time, and so has one on a node whose agent was lost
    (`unreachable`). Then every changed link is restored for the next run: the radios' links to
    what the block set, the nodes' interfaces by their agents."""
    rows = []
    applied = ctx.radios.applied(t0 - 1)
    for cid, item in scheduled.radio_ids.items():
        rows.append(_row(item, item.at, applied.get(cid), "radio"))
    hosts = sorted({host for _, host, _ in scheduled.node_actions} - set(unreachable))
    logs = ctx.agents.each(hosts, lambda a: a.request("timeline_log")["events"])
    by_id = {(host, e["id"]): e for host, entries in logs.items() for e in entries}
    for item, host, action in scheduled.node_actions:
        e = by_id.get((host, item.id))
        rows.append(_row(item, action["at"], e["actual"] if e else None, "node", e.get("error") if e else None,
                         host, action["iface"]))
    ctx.radios.restore()
    return sorted(rows, key=lambda r: (r["planned"], r["pair"], r["where"]))


def table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)
