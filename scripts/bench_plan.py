#!/usr/bin/env python3
"""Planning cost: how fast a campaign is expanded and its duration estimated, and how plan time
and the runner's memory grow with the number of runs.

    .venv/bin/python scripts/bench_plan.py            # ~1 min on an idle 2-core host

Prints three tables (markdown, for docs/measurements/):
  1. campaigns/seed002-buffer.yaml (Fig. 7: the largest of seed 002's files) at 50 (1,800 runs)
     and 1,000 repetitions (36,000 runs):
     expand, estimate (run_estimates + plan_seconds) and runs/s, in one process, best of 3;
     and `rig campaign plan FILE` end to end (start-up and printing every run included).
  2. growth at 10, 1,000 and 100,000 runs (a 10- or 100-cell campaign x repetitions), each in a
     fresh process: expand + estimate time, plan.json (digest + JSON) time, and the peak RSS of
     a process that holds what `rig campaign run` holds before its first run (runner imported,
     the plan expanded, estimated, digested and serialised).
  3. with --runs DIR...: the per-run orchestration overhead of real campaigns (campaign
     directories), from each run's status.json: the run's wall time less its transfer, and the
     phases_ms the run recorded; medians per number of pairs. E.g. for 1, 5 and 9 pairs:
         .venv/bin/rig campaign run FILE --out /tmp/ovh   # FILE: 5 runs of 1MB, setup I, pairs N
         .venv/bin/python scripts/bench_plan.py --runs /tmp/ovh/*
Numbers are measured and printed, never asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "campaigns" / "seed002-buffer.yaml"
RIG = Path(sys.executable).with_name("rig")

# 10 cells: 2 setups x 5 connection counts; 100 cells: x 10 volumes.
GROWTH = {
    10: ("[1, 2, 3, 4, 5]", "[15MB]", 1),
    1_000: ("[1, 2, 3, 4, 5]", "[15MB]", 100),
    100_000: ("[1, 2, 3, 4, 5]", "[1MB, 2MB, 3MB, 4MB, 5MB, 6MB, 7MB, 8MB, 9MB, 10MB]", 1000),
}


def growth_campaign(runs: int) -> str:
    connections, volumes, reps = GROWTH[runs]
    return (f"name: growth{runs}\nsetups: [I, II]\npairs: 5\nrepetitions: {reps}\nseed: 3\n"
            f"blocking: [setup]\nfactors:\n  connections: {connections}\n  volume: {volumes}\n")


def timed_plan(text: str, source: str) -> dict:
    """Expand and estimate `text` once; seconds per stage."""
    from rig.campaign.estimate import plan_seconds, run_estimates
    from rig.model.campaign import parse_campaign
    from rig.campaign.plan import expand

    campaign = parse_campaign(text, source)
    t0 = time.perf_counter()
    plan = expand(campaign, source)
    t1 = time.perf_counter()
    estimates = run_estimates(plan)
    total = plan_seconds(plan, estimates)
    t2 = time.perf_counter()
    body = json.dumps({**plan.to_dict(), "campaign_id": "x"}, indent=2)  # what plan.json holds
    t3 = time.perf_counter()
    return {"runs": len(plan.runs), "expand_s": t1 - t0, "estimate_s": t2 - t1, "plan_json_s": t3 - t2,
            "estimated_h": total / 3600, "plan_json_mb": len(body) / 1e6}


def child(runs: int) -> None:
    """One growth point in this (fresh) process, as JSON on stdout."""
    try:
        import rig.campaign.runner  # noqa: F401  (what `rig campaign run` has imported)
    except ImportError as e:  # a checkout mid-change: measure without it, and say so
        print(f"note: runner not imported ({e})", file=sys.stderr)

    result = timed_plan(growth_campaign(runs), f"growth{runs}")
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over fork + exec from this script's parent.
    hwm = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmHWM:"))
    result["peak_rss_mb"] = int(hwm.split()[1]) / 1024
    print(json.dumps(result))


def main() -> None:
    text = STUDY.read_text()
    print("| campaign | runs | expand (s) | estimate (s) | runs/s expanded + estimated | `rig campaign plan` end to end (s) |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for reps in (50, 1000):
            variant = text.replace("repetitions: 50", f"repetitions: {reps}")
            best = min((timed_plan(variant, str(STUDY)) for _ in range(3)),
                       key=lambda r: r["expand_s"] + r["estimate_s"])
            path = Path(tmp) / f"study{reps}.yaml"
            path.write_text(variant)
            t0 = time.perf_counter()
            subprocess.run([str(RIG), "campaign", "plan", str(path)], check=True, stdout=subprocess.DEVNULL)
            cli_s = time.perf_counter() - t0
            both = best["expand_s"] + best["estimate_s"]
            print(f"| {STUDY.stem} x{reps} | {best['runs']:,} | {best['expand_s']:.3f} | {best['estimate_s']:.3f} "
                  f"| {best['runs'] / both:,.0f} | {cli_s:.2f} |")
    print()
    print("| runs | expand + estimate (s) | plan.json (s) | plan.json (MB) | peak RSS of the runner before its first run (MB) |")
    print("|---|---|---|---|---|")
    for runs in GROWTH:
        out = subprocess.run([sys.executable, __file__, "--child", str(runs)], check=True,
                             capture_output=True, text=True).stdout
        r = json.loads(out)
        print(f"| {r['runs']:,} | {r['expand_s'] + r['estimate_s']:.3f} | {r['plan_json_s']:.3f} "
              f"| {r['plan_json_mb']:.2f} | {r['peak_rss_mb']:.0f} |")


def _median(values: list[float]) -> float:
    values = sorted(values)
    return values[len(values) // 2] if values else float("nan")


def run_overhead(campaign_dirs: list[Path]) -> None:
    """Median per-run overhead (wall less transfer) and phases, per number of pairs."""
    from datetime import datetime

    from rig.store.reader import CampaignDir

    by_pairs: dict[int, list[dict]] = {}
    for cdir in campaign_dirs:
        for run in CampaignDir(cdir).recorded():
            status, params = run.status(), run.params()
            if not status.get("transfer_s") or "phases_ms" not in status:
                continue
            wall = (datetime.fromisoformat(status["finished_at"]) - datetime.fromisoformat(status["started_at"])).total_seconds()
            by_pairs.setdefault(params["pairs"], []).append({"overhead_ms": (wall - status["transfer_s"]) * 1000,
                                                             **status["phases_ms"]})
    print("| pairs | runs | per-run overhead (ms, wall less transfer) | configure | schedule | collect (ms) |")
    print("|---|---|---|---|---|---|")
    for pairs, rows in sorted(by_pairs.items()):
        med = {k: _median([r.get(k, float("nan")) for r in rows]) for k in ("overhead_ms", "configure", "schedule", "collect")}
        print(f"| {pairs} | {len(rows)} | {med['overhead_ms']:.0f} | {med['configure']:.1f} | {med['schedule']:.1f} | {med['collect']:.1f} |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(int(sys.argv[2]))
    elif sys.argv[1:2] == ["--runs"]:
        run_overhead([Path(p) for p in sys.argv[2:]])
    else:
        main()
