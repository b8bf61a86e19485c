#!/usr/bin/env python3
"""The rig's orchestration overhead on the emulated rig, and where every second of it goes.

    .venv/bin/python scripts/bench_overhead.py campaigns/default.yaml --prefix ov1
    .venv/bin/python scripts/bench_overhead.py campaigns/bench-overhead.yaml --prefix ov2 --repeat 2
    .venv/bin/python scripts/bench_overhead.py --budget results/default-20261123T...   # a campaign already run

As root. Runs the campaign file the way `rig campaign run` does (same runner, same backend),
into a fresh directory under --out (default: a temporary one, removed afterwards unless --keep),
and prints, per campaign (markdown, for docs/measurements/):
  - the host's load average before and after, wall time, the sum of the runs' transfer times,
    the orchestration overhead ((wall - transfer) / wall, as `rig campaign run` prints it),
    attempts run again for emulator lag, and the senders' start spread (median / max of the runs');
  - the budget: the overhead split into where it went, from each run's (and each attempt's)
    status.json (`phases_ms`, t0, transfer_s, started_at / finished_at) and the campaign's
    start and end: bring-up, per run configure / schedule / T0 lead / tail after the last byte /
    collect / judging and tables, the gaps between runs (within a block and at block changes:
    a radio rebuild), and the end (the last run stored, runs table, teardown). Sums in seconds,
    share of the wall time, and the median per run.
Numbers are measured and printed, never asserted. On a shared host they are upper bounds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rig.store.reader import CampaignDir, RunDir  # noqa: E402


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def _attempt_dirs(root: Path) -> list[RunDir]:
    """Every executed attempt: the recorded runs and the attempts set aside for lag."""
    campaign = CampaignDir(root)
    return campaign.run_dirs() + campaign.attempts()


def budget(root: Path, end: float | None = None, wall: float | None = None) -> dict:
    """The overhead budget of the campaign directory `root` (seconds). `end`: when the campaign
    command returned (unix time; else the last run's end: teardown unknown); `wall`: the runner's."""
    started = _ts(CampaignDir(root).metadata()["started_at"])
    runs = []
    for d in _attempt_dirs(root):
        status, params = d.status(), d.params()
        runs.append({"start": _ts(status["started_at"]), "end": _ts(status["finished_at"]), "status": status,
                     "key": (params["setup"], params["wifi_standard"])})
    runs.sort(key=lambda r: r["start"])
    parts = {k: [] for k in ("configure", "schedule", "T0 lead", "tail", "collect", "judge + tables",
                             "gap in a block", "gap at a block change")}
    transfer = 0.0
    spreads = []
    for i, r in enumerate(runs):
        st, ph = r["status"], {k: v / 1000 for k, v in r["status"]["phases_ms"].items()}
        t0 = _ts(st["t0"])
        xfer = st.get("transfer_s") or 0.0
        transfer += xfer
        lead = t0 - (r["start"] + ph["configure"] + ph["schedule"])
        parts["configure"].append(ph["configure"])
        parts["schedule"].append(ph["schedule"])
        parts["T0 lead"].append(lead)
        parts["tail"].append(ph["transfer"] - lead - xfer)
        parts["collect"].append(ph["collect"])
        parts["judge + tables"].append((r["end"] - r["start"]) - sum(ph.values()))
        if st.get("start_spread_ms") is not None and r["end"]:
            spreads.append(st["start_spread_ms"])
        if i + 1 < len(runs):
            gap = runs[i + 1]["start"] - r["end"]
            parts["gap at a block change" if runs[i + 1]["key"] != r["key"] else "gap in a block"].append(gap)
    first, last = runs[0]["start"], runs[-1]["end"]
    total = (end - started) if end else (last - started)
    return {"runs": len(runs), "bring-up": first - started, "parts": parts,
            "end": (end - last) if end else None, "transfer": transfer, "total": total,
            "wall": wall, "spreads": spreads}


def print_budget(b: dict) -> None:
    wall = b["wall"] or b["total"]
    print(f"\n| where | seconds | share of wall | per run (median, ms) |\n|---|---|---|---|")
    rows = [("bring-up (namespaces, radios, agents, first block's configuration)", b["bring-up"], None)]
    rows += [(name, sum(v), statistics.median(v) * 1000 if v else None) for name, v in b["parts"].items()]
    if b["end"] is not None:
        rows.append(("end: last run stored, runs table, teardown", b["end"], None))
    for name, s, med in rows:
        print(f"| {name} | {s:.2f} | {s / wall:.1%} | {'' if med is None else f'{med:.0f}'} |")
    accounted = sum(s for _, s, _ in rows)
    print(f"| all of the above | {accounted:.2f} | {accounted / wall:.1%} | |")
    print(f"| wall less transfer | {wall - b['transfer']:.2f} | {(wall - b['transfer']) / wall:.1%} | |")


def run(file: Path, prefix: str, out: Path) -> dict:
    from rig.rigs.backends import EmulatedBackend
    from rig.campaign.runner import run_campaign

    load_before = os.getloadavg()
    backend = EmulatedBackend(prefix)
    result = run_campaign(file, out, backend)
    end = time.time()
    load_after = os.getloadavg()
    b = budget(result.store.root, end, result.wall_s)
    spreads = sorted(result.start_spreads_ms)
    overhead = (result.wall_s - result.transfer_s) / result.wall_s
    print(f"\n{file.name} ({result.store.root}): load {load_before[0]:.1f} -> {load_after[0]:.1f};"
          f" {result.ran} runs, {result.counts}; wall {result.wall_s:.1f} s, transfer {result.transfer_s:.1f} s,"
          f" orchestration overhead {overhead:.1%}; lag retries {result.lag_retries};"
          f" start spread median {spreads[len(spreads) // 2]:.2f} ms, max {spreads[-1]:.2f} ms")
    print_budget(b)
    return {"overhead": overhead, "wall": result.wall_s, "load": (load_before[0], load_after[0])}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("file", type=Path, nargs="?", help="campaign file to run")
    p.add_argument("--prefix", default="ov1", help="emulated rig prefix (one per concurrent campaign)")
    p.add_argument("--out", type=Path, help="directory for the campaign (default: a temporary one)")
    p.add_argument("--keep", action="store_true", help="keep the campaign directory")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--budget", type=Path, help="only print the budget of this campaign directory")
    a = p.parse_args()
    if a.budget:
        print_budget(budget(a.budget))
        return 0
    if a.file is None:
        p.error("a campaign file, or --budget DIR")
    out = a.out or Path(tempfile.mkdtemp(prefix="bench-overhead-"))
    try:
        results = [run(a.file, a.prefix, out) for _ in range(a.repeat)]
    finally:
        if not (a.keep or a.out):
            shutil.rmtree(out, ignore_errors=True)
    if a.repeat > 1:
        print("\noverhead per campaign: " + ", ".join(f"{r['overhead']:.1%}" for r in results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
