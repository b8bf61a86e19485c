#!/usr/bin/env python3
"""`rig campaign merge` on a large campaign: its shards written by the run store, then merged.

    .venv/bin/python scripts/bench_merge.py                      # 100,000 runs, 3 shards
    .venv/bin/python scripts/bench_merge.py --runs 10000 --shards 2 --pairs 5

A campaign of --runs runs (a 100-cell matrix x repetitions; below 150 runs one cell) is expanded, split into
--shards shards (rig.campaign.shards) and each shard recorded by the run store itself
(rig.store.synthetic.write_shard: CampaignStore.write_run per run, no time series, --pairs pairs)
under a scratch directory; writing them is not timed. Then `rig campaign merge` runs in a fresh
process, as a user runs it: its wall time, CPU and peak RSS, and the merged directory is checked
(every planned run once, runs.parquet's rows). Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rig.campaign.plan import expand  # noqa: E402
from rig.campaign.shards import Shard, shard_runs  # noqa: E402
from rig.model.campaign import parse_campaign  # noqa: E402
from rig.store.reader import CampaignDir  # noqa: E402
from rig.store.synthetic import write_shard  # noqa: E402


def campaign_text(runs: int, pairs: int) -> str:
    """100 cells (2 setups x 5 connections x 2 homings x 5 CCs) x runs/100 repetitions, 2 blocks."""
    reps = max(1, runs // 100)
    return (f"name: bench-merge\nsetups: [I, II]\npairs: {pairs}\nrepetitions: {reps}\nseed: 1\nblocking: [setup]\n"
            "factors: {connections: [1, 2, 5, 10, 20], homing: [dual, lte], cc: [cubic, reno, lia, olia, balia]}\n"
            if runs >= 150 else
            f"name: bench-merge\nsetups: [I]\npairs: {pairs}\nrepetitions: {runs}\nseed: 1\nfactors: {{cc: [cubic]}}\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--shards", type=int, default=3)
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--dir", type=Path, help="scratch directory (default: a new one under /tmp)")
    args = ap.parse_args()
    scratch = args.dir or Path(tempfile.mkdtemp(prefix="bench-merge-"))
    text = campaign_text(args.runs, args.pairs)
    plan = expand(parse_campaign(text, "bench"))
    t = time.monotonic()
    dirs = []
    for k in range(1, args.shards + 1):
        runs = shard_runs(plan, Shard(k, args.shards))
        dirs.append(write_shard(scratch / f"host{k}", plan, runs, text, f"{k}/{args.shards}", f"host{k}").root)
        print(f"shard {k}/{args.shards}: {len(runs)} runs written", file=sys.stderr)
    written = time.monotonic() - t
    out = scratch / "merged" / "bench-merge-all"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "rig", "campaign", "merge",
                        *map(str, dirs), "--to", str(out)], cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"merge failed: {p.stderr}")
    merged = CampaignDir(out)
    assert len(merged.recorded_ids()) == len(plan.runs)
    rows = merged.runs_table(["run_id"]).num_rows
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print("| runs | shards | pairs | shards written (s) | merge wall (s) | merge CPU (s) | peak RSS (MB) | runs.parquet rows |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {len(plan.runs):,} | {args.shards} | {args.pairs} | {written:.0f} | {wall:.1f} | {cpu:.1f} | "
          f"{after.ru_maxrss / 1024:.0f} | {rows:,} |")  # the largest child's: the merge (Linux: KB)
    print(p.stdout.splitlines()[0])
    print(f"scratch: {scratch} (remove it when done)")


if __name__ == "__main__":
    main()
