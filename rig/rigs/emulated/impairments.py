"""What each radio hop of the emulated rig carries: the profile's link, and on the hops a
campaign names, its impairments.

A hop is one node interface's access link: the senders' radios' links (`wifi`, `lte`, `lte2`: a
second modem), and
the receivers' side A (`receiver_a`) and side B (`receiver_b`) links. Each hop has two directions:
`up` (node -> AP or eNodeB) and `down`. A path crosses four hop directions: the sender's hop up
(the data), the receiver's hop down, and for the ACKs the receiver's hop up and the sender's hop
down; its RTT is the sum of their one-way delays (plus the radios' own timing on simulated radios).
"""

from __future__ import annotations

from dataclasses import replace

from rig.rigs.emulated.radiospec import Pipe
from rig.model.topology import RadioInterface, Topology

HOPS = ("wifi", "lte", "lte2", "receiver_a", "receiver_b")
DIRECTIONS = ("up", "down", "both")


def hop_names(topo: Topology) -> dict[tuple[str, str], str]:
    """(host, interface) -> the hop that interface's access link is."""
    out = {}
    for p in topo.pairs:
        out.update({(p.sender, r.ifname): r.role for r in p.radios})
        out[(p.receiver, p.receiver_a.ifname)] = "receiver_a"
        out[(p.receiver, p.receiver_b.ifname)] = "receiver_b"
    return out


def _impaired(base: Pipe, imp: dict) -> Pipe:
    """`base` with what the impairment sets (delay and jitter one-way, in ms; loss in %)."""
    fields = {}
    if imp.get("rate_bps") is not None:
        fields["rate_bps"] = imp["rate_bps"]
    if imp.get("delay_ms") is not None:
        fields["delay_s"] = imp["delay_ms"] / 1000
    if imp.get("jitter_ms") is not None:
        fields["jitter_s"] = imp["jitter_ms"] / 1000
    if imp.get("loss_pct") is not None:
        fields["loss"] = imp["loss_pct"] / 100
    if imp.get("queue_packets") is not None:
        fields["queue_packets"] = imp["queue_packets"]
    return replace(base, **fields)


def station_pipes(base: Pipe, hop: str | None, impairments: dict[str, dict]) -> tuple[Pipe, Pipe]:
    """The (up, down) pipes of a station on `hop`: `base`, impaired in the directions named."""
    imp = impairments.get(hop) if hop else None
    if not imp:
        return base, base
    direction = imp.get("direction", "up")
    up = _impaired(base, imp) if direction in ("up", "both") else base
    down = _impaired(base, imp) if direction in ("down", "both") else base
    return up, down


def hop_rows(network: str, stations: list[RadioInterface], pipes: list[tuple[Pipe, Pipe]], hop_of: dict,
             impairments: dict[str, dict]) -> list[dict]:
    """One row per station and direction: what is in force on that hop (the run records them)."""
    rows = []
    for s, (up, down) in zip(stations, pipes):
        hop = hop_of.get((s.host, s.ifname), "")
        for direction, pipe in (("up", up), ("down", down)):
            named = impairments.get(hop) or {}
            impaired = bool(named) and named.get("direction", "up") in (direction, "both")
            # Floats always: a model's pipe carries whole zeros, and a column's type must not depend
            # on its values (InfluxDB refuses a field that changes type between campaigns).
            rows.append({"network": network, "host": s.host, "interface": s.ifname, "hop": hop, "direction": direction,
                         "rate_bps": float(pipe.rate_bps), "delay_ms": float(pipe.delay_s * 1000),
                         "jitter_ms": float(pipe.jitter_s * 1000), "loss_pct": float(pipe.loss * 100), "impaired": impaired})
    return rows
