#!/usr/bin/env python3
"""Configured vs measured path RTT on the emulated rig (links radios), per setup: each path's RTT
is the sum of its four hop directions' one-way delays (rig.rigs.emulated.impairments); the minimum of 40
pings from the sender's address on that path measures it. Jitter is set to 0 on every hop.

    .venv/bin/python scripts/bench_path_rtt.py            # needs root; ~10 s per setup
"""

from __future__ import annotations

import re
import subprocess
import uuid

from rig.rigs.backends import configure_setup
from rig.run.execute import RunSettings
from rig.model.campaign import Limits
from rig.rigs.emulated import impairments
from rig.rigs.emulated.emulated_rig import EmulatedRig
from rig.model.block import BlockSettings
from rig.agents.client import AgentPool
from rig.agents.netns import NetnsTransport

STEADY = {hop: {"jitter_ms": 0.0, "direction": "both"} for hop in impairments.HOPS}
IMPAIRED = {**STEADY, "wifi": {"delay_ms": 10.0, "jitter_ms": 0.0, "direction": "both"},
            "lte": {"delay_ms": 30.0, "jitter_ms": 0.0, "direction": "both"},
            "receiver_b": {"delay_ms": 4.0, "jitter_ms": 0.0, "direction": "both"}}


def min_rtt_ms(netns: str, src: str, dst: str) -> float:
    out = subprocess.run(["ip", "netns", "exec", netns, "ping", "-n", "-q", "-c", "40", "-i", "0.02", "-I", src, dst],
                         capture_output=True, text=True, timeout=60).stdout
    return float(re.search(r"= ([\d.]+)/", out).group(1))


def measure(setup: str, imp: dict) -> list[tuple[str, float, float]]:
    rig = EmulatedRig("rb" + uuid.uuid4().hex[:5])
    settings = BlockSettings(setup, "n5", "band7-10mhz", 1, imp)
    try:
        rig.up(settings)
        with AgentPool(NetnsTransport(rig.prefix, node_dir=rig.node_dir), rig.topo.nodes) as agents:
            ctx = configure_setup(rig, agents, settings, RunSettings(Limits()))
        delay = {(h["hop"], h["direction"]): h["delay_ms"] for h in ctx.radios.hops}
        p, out = rig.topo.pairs[0], []
        for path, hops, src, dst in (("wifi", ("wifi", "receiver_a"), p.radio("wifi"), p.receiver_a),
                                     ("lte", ("lte", "receiver_b"), p.radio("lte"), p.receiver_b)):
            want = sum(delay[(h, d)] for h in hops for d in ("up", "down"))
            out.append((path, want, min_rtt_ms(rig.ns("s1"), str(src.address), str(dst.address))))
        return out
    finally:
        rig.down()


def main() -> None:
    print("| setup | impairments | path | configured RTT (ms) | measured min RTT (ms) | difference |")
    print("|---|---|---|---|---|---|")
    for setup in ("I", "II", "III"):
        for name, imp in (("profile delays", STEADY), ("wifi 10, lte 30, receiver_b 4 ms", IMPAIRED)):
            for path, want, got in measure(setup, imp):
                print(f"| {setup} | {name} | {path} | {want:.1f} | {got:.2f} | +{got - want:.2f} |", flush=True)


if __name__ == "__main__":
    main()
