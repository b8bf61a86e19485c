#!/usr/bin/env python3
"""The emulated rig's own cost, without any run: bring-up, each block change and the end, as
the campaign runner meets them (the same backend calls), for a campaign file's blocks.

    .venv/bin/python scripts/bench_rig_cost.py campaigns/default.yaml --prefix rc1 --repeat 5

As root. Per repetition one line (milliseconds): the first block (namespaces, radio emulators,
node agents, the first block's configuration), each further block (radio networks restarted,
their TAPs opened in the hosts' namespaces, receivers routed) and close() (agents quit, emulators stopped, namespaces
deleted), with the host's load average. Measured and printed, never asserted; on a shared host
upper bounds. scripts/bench_overhead.py gives the same parts inside a whole campaign.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def once(file: Path, prefix: str) -> list[float]:
    from rig.rigs.backends import EmulatedBackend
    from rig.run.execute import RunSettings
    from rig.model.campaign import load_campaign
    from rig.campaign.plan import expand
    from rig.model.block import BlockSettings

    campaign = load_campaign(file)
    plan = expand(campaign, str(file))
    backend = EmulatedBackend(prefix)
    backend.check(campaign, str(file))
    times, seen = [], []
    try:
        for run in plan.runs:
            if run.radio_key in seen:
                continue
            seen.append(run.radio_key)
            settings = BlockSettings(run.setup, run.wifi_standard, campaign.lte_profile, campaign.pairs, {}, campaign.radios)
            t = time.monotonic()
            backend.block(settings, RunSettings(campaign.limits))
            times.append(time.monotonic() - t)
    finally:
        t = time.monotonic()
        backend.close()
        times.append(time.monotonic() - t)
    return times


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("file", type=Path, help="campaign file (its blocks: setups x WiFi standards)")
    p.add_argument("--prefix", default="rc1", help="emulated rig prefix (one per concurrent rig)")
    p.add_argument("--repeat", type=int, default=1)
    a = p.parse_args()
    print("load (1 min) | first block ms | further blocks ms | close ms")
    for _ in range(a.repeat):
        load = os.getloadavg()[0]
        t = once(a.file, a.prefix)
        print(f"{load:.1f} | {t[0] * 1000:.0f} | {' '.join(f'{x * 1000:.0f}' for x in t[1:-1]) or '-'} | {t[-1] * 1000:.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
