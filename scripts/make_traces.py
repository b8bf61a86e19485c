"""Writes the link traces in radio-configs/traces/ (Mahimahi format, docs/emulator.md).

    .venv/bin/python scripts/make_traces.py [--out radio-configs/traces]

Deterministic (fixed seeds): running it again rewrites the same files. Each trace is a rate
profile, one value per 100 ms step, turned into delivery opportunities (one 1500-byte packet
each) by carrying the fractional part from one millisecond to the next.

- wifi-20mbit.mahi: a steady 20 Mbit/s (1 s, repeating).
- lte-cell-edge-uplink.mahi: 60 s of a cell-edge LTE uplink: a slow log-normal fading around
  4 Mbit/s (AR(1) in dB, sigma 3 dB, correlation 0.9 per 100 ms) with deep fades (every 4-12 s,
  0.3-1.5 s long, down to 0.1-0.4 Mbit/s), clipped to [0.1, 10] Mbit/s.
"""

from __future__ import annotations

import argparse
import math
import random
from pathlib import Path

STEP_MS = 100
PACKET_BITS = 1500 * 8


def opportunities(rates_bps: list[float], step_ms: int = STEP_MS) -> list[int]:
    """Millisecond timestamps of delivery opportunities for a rate held over each step."""
    out, carry = [], 0.0
    for i, rate in enumerate(rates_bps):
        per_ms = rate / PACKET_BITS / 1000
        for ms in range(i * step_ms + 1, (i + 1) * step_ms + 1):
            carry += per_ms
            while carry >= 1.0:
                out.append(ms)
                carry -= 1.0
    last = len(rates_bps) * step_ms
    if not out or out[-1] != last:  # the last line is the period: keep it at the profile's end
        out.append(last)
    return out


def cell_edge_uplink(seconds: int = 60, seed: int = 11) -> list[float]:
    rng = random.Random(seed)
    steps = seconds * 1000 // STEP_MS
    db, rates = 0.0, []
    next_fade = rng.uniform(4, 12) * 1000 // STEP_MS
    fade_left, fade_rate = 0, 0.0
    for step in range(steps):
        db = 0.9 * db + math.sqrt(1 - 0.9**2) * rng.gauss(0, 3.0)
        rate = 4e6 * 10 ** (db / 10)
        if step >= next_fade and fade_left == 0:
            fade_left = int(rng.uniform(0.3, 1.5) * 1000 // STEP_MS)
            fade_rate = rng.uniform(0.1e6, 0.4e6)
            next_fade = step + fade_left + rng.uniform(4, 12) * 1000 // STEP_MS
        if fade_left:
            rate, fade_left = fade_rate, fade_left - 1
        rates.append(min(10e6, max(0.1e6, rate)))
    return rates


def write(path: Path, stamps: list[int]) -> None:
    path.write_text("".join(f"{t}\n" for t in stamps))
    rate = len(stamps) * PACKET_BITS / (stamps[-1] / 1000)
    print(f"{path}: {len(stamps)} opportunities over {stamps[-1] / 1000:g} s, mean {rate / 1e6:.2f} Mbit/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "radio-configs" / "traces")
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    write(out / "wifi-20mbit.mahi", opportunities([20e6] * (1000 // STEP_MS)))
    write(out / "lte-cell-edge-uplink.mahi", opportunities(cell_edge_uplink()))


if __name__ == "__main__":
    main()
