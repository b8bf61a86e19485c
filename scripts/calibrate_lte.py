"""Calibrate the TTI LTE model (emulator kind lte_tti) against ns-3's LENA cell (kind lte).

Both run the same scenario in simulated time, as fast as they go (`radio-emulator --calibrate`,
no TAPs): N UEs with constant-rate UDP (1500-byte IP packets) through a cell of each LTE
profile (radio-configs/lte/*.yaml), uplink or downlink, saturated (each UE offers twice its
share of the profile's reference rate) or light (a fifth of its share, Poisson arrivals). Prints a Markdown
table: aggregate throughput and delay percentiles of both models and the differences.

    nice -n 19 .venv/bin/python scripts/calibrate_lte.py [--ues 1 2 5 10] [--profiles band7-5mhz ...]
        [--directions ul dl] [--loads saturated light] [--json results.json]

RIG_RADIO_EMULATOR=/path/to/radio-emulator runs that build instead of building the repository's.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import asdict
from pathlib import Path

from calibration_runs import run_cases  # puts the repository on sys.path

from rig.rigs.emulated.radiospec import LteCell, LteTtiCell, lte_tti_config
from rig.model.profiles import lte_profile, lte_profiles

RLC_BUFFER_BYTES = 256 * 1024  # both models' per-UE RLC buffer (kind lte's default)
LOAD_SHARE = {"saturated": 2.0, "light": 0.2}  # offered rate per UE / (reference rate / N)


def scenario(model: str, profile: str, ues: int, direction: str, load: str, seed: int) -> dict:
    p = lte_profile(profile)
    share = p.emulation.rate_bps / ues
    offered = LOAD_SHARE[load] * share
    # Saturated: measure once every UE's RLC buffer is full (it takes buffer / share to fill).
    warmup = 1.0 + (1.5 * RLC_BUFFER_BYTES * 8 / share if load == "saturated" else 0.0)
    if model == "lte":
        lte = LteCell(prb=p.prb, sgi_address="", sgi_gateway="", dl_earfcn=p.dl_earfcn, cqi_period_ms=p.cqi_period_ms)
        cell = {**asdict(lte), "ul_earfcn": p.dl_earfcn + 18000, "distance_m": 2000.0 * math.sqrt(25 / p.prb),
                "rlc_buffer_bytes": RLC_BUFFER_BYTES}
    else:
        cell = lte_tti_config(LteTtiCell(prb=p.prb, rlc_buffer_bytes=RLC_BUFFER_BYTES))
    return {"model": model, "ues": ues, "direction": direction, "offered_bps": offered, "packet_bytes": 1500,
            "warmup_s": warmup, "measure_s": 5.0, "seed": seed, "cell": cell,
            "arrivals": "constant" if load == "saturated" else "poisson"}


def pct(new: float, ref: float) -> str:
    if not ref or math.isnan(ref) or math.isnan(new):
        return "-"
    return f"{100 * (new - ref) / ref:+.1f} %"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profiles", nargs="+", default=sorted(lte_profiles(), key=lambda n: lte_profile(n).prb))
    ap.add_argument("--ues", nargs="+", type=int, default=[1, 2, 5, 10])
    ap.add_argument("--directions", nargs="+", choices=["ul", "dl"], default=["ul"])
    ap.add_argument("--loads", nargs="+", choices=list(LOAD_SHARE), default=["saturated", "light"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path, help="also write every result here")
    args = ap.parse_args(argv)
    print("| profile | UEs | dir | load | ns-3 Mbit/s | lte_tti Mbit/s | diff | ns-3 delay p10/p50/p90/p99 ms "
          "| lte_tti delay p10/p50/p90/p99 ms | p50 diff | p90 diff | ns-3 wall s | lte_tti wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    cases = ((dict(profile=profile, ues=ues, direction=direction, load=load),
              {model: scenario(model, profile, ues, direction, load, args.seed) for model in ("lte", "lte_tti")})
             for profile in args.profiles for direction in args.directions
             for load in args.loads for ues in args.ues)
    for case, results in run_cases("--calibrate", cases, args.json):
        ref, new = results["lte"], results["lte_tti"]
        d_ref, d_new = ref["delay_ms"], new["delay_ms"]
        print(f"| {case['profile']} | {case['ues']} | {case['direction']} | {case['load']} "
              f"| {ref['aggregate_bps'] / 1e6:.2f} "
              f"| {new['aggregate_bps'] / 1e6:.2f} | {pct(new['aggregate_bps'], ref['aggregate_bps'])} "
              f"| {'/'.join(f'{d_ref[k]:.1f}' for k in ('p10', 'p50', 'p90', 'p99'))} "
              f"| {'/'.join(f'{d_new[k]:.1f}' for k in ('p10', 'p50', 'p90', 'p99'))} "
              f"| {pct(d_new['p50'], d_ref['p50'])} | {pct(d_new['p90'], d_ref['p90'])} "
              f"| {ref['wall_s']:.1f} | {new['wall_s']:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
