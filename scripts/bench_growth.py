#!/usr/bin/env python3
"""How the rig's own cost grows with the number of runs: 10, 1,000 and 100,000.

    .venv/bin/python scripts/bench_growth.py              # ~5 min on an idle 2-core host
    .venv/bin/python scripts/bench_growth.py --sizes 10 1000 --steps plan record

Every measurement runs in a fresh process, so each peak RSS (VmHWM) is that step's alone:
  plan     `rig campaign plan FILE` end to end (a 10- or 100-cell campaign x repetitions, the
           campaigns of scripts/bench_plan.py): wall and CPU seconds, peak RSS
  record   what the runner does around each run, on the run store (rig.store.writer): create the
           campaign directory (plan.json), then record runs as `rig campaign run` does after each
           one (store.write_run + store.write_runs_table) with a 5-pair record and no time
           series: ms per run for the first and the last 10 runs recorded, peak RSS. All runs
           but one at 10 and 1,000; the first --record-cap (default 30) at 100,000, whose
           per-run cost is then dominated by the plan's size, not by the runs recorded
  resume   `--resume`'s reading of that directory in a new process (find_resumable: plan.json,
           every recorded run's status, the runs table's rows): seconds, ms per recorded run,
           peak RSS
  rows     `rig sync`'s one read of runs.parquet (5 pairs a run: 50 to 500,000 rows) into the
           per-run summary rows it writes as `run` points: seconds, ms per run's rows, peak RSS
  ingest   `rig sync` of a campaign of that many runs (rig.store.synthetic's campaign directory,
           default-campaign-sized runs: 30 interface series x 40 samples, lag and subflows)
           into the embedded influxd; points/s, CPU of the sync and of influxd, the sync's peak
           RSS. Up to --ingest-max runs (default 1,000): 100,000 such runs are 170 M points.
Numbers are printed as markdown tables, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT)]
RIG = Path(sys.executable).with_name("rig")
SIZES = (10, 1_000, 100_000)


def peak_rss_mb() -> float:
    hwm = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmHWM:"))
    return int(hwm.split()[1]) / 1024


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def in_child(step: str, *args: str) -> dict:
    """Run one step of this script in a fresh process; its JSON result."""
    out = subprocess.run([sys.executable, __file__, "--child", step, *args], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def campaign_file(tmp: Path, runs: int) -> Path:
    from bench_plan import growth_campaign

    path = tmp / f"growth{runs}.yaml"
    path.write_text(growth_campaign(runs))
    return path


# -- plan ---------------------------------------------------------------------------------------

def measure_plan(file: Path) -> dict:
    """`rig campaign plan FILE` in its own process: wall, CPU and peak RSS from wait4.
    (ru_maxrss may carry this lean parent's RSS over fork + exec: it is far below the child's.)"""
    t0 = time.perf_counter()
    proc = subprocess.Popen([str(RIG), "campaign", "plan", str(file)], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"rig campaign plan {file} exited {proc.returncode}")
    return {"wall_s": time.perf_counter() - t0, "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_rss_mb": usage.ru_maxrss / 1024}


# -- record and resume (child processes) ----------------------------------------------------------

def _record(run, store) -> None:
    from rig.store.writer import RunRecord, utc_now

    now = utc_now()
    pairs = [{"pair": p, "sender": f"s{p}", "receiver": f"r{p}", "started_at": now, "duration_s": 1.5,
              "goodput_bps": 8e7, "bytes_lte": 5_000_000, "bytes_wifi": 10_000_000, "status": "ok", "reason": None,
              "bytes_sent": 15_000_000, "bytes_received": 15_000_000, "fct_s": 1.5}
             for p in range(1, run.pairs + 1)]
    rec = RunRecord(run=run, status="ok", reason=None, started_at=now, finished_at=now, pairs=pairs,
                    details={"transfer_s": 1.5, "lag_retries": 0, "phases_ms": {}})
    store.write_run(rec)
    store.write_runs_table()


def child_record(file: str, out: str, record: int) -> dict:
    from rig.campaign.plan import load_plan
    from rig.store.writer import CampaignStore

    t0 = time.perf_counter()
    plan = load_plan(file)
    store = CampaignStore.create(Path(out), plan, Path(file).read_text(), {"rig": "bench"})
    create_s = time.perf_counter() - t0
    per_run = []
    for run in plan.runs[:record]:
        t = time.perf_counter()
        _record(run, store)
        per_run.append((time.perf_counter() - t) * 1000)
    return {"create_s": create_s, "recorded": len(per_run), "plan_json_mb": (store.root / "plan.json").stat().st_size / 1e6,
            "first_ms": statistics.median(per_run[:10]), "last_ms": statistics.median(per_run[-10:]),
            "peak_rss_mb": peak_rss_mb()}


def child_resume(file: str, out: str) -> dict:
    from rig.campaign.plan import load_plan
    from rig.store.writer import CampaignStore

    plan = load_plan(file)
    t0 = time.perf_counter()
    store = CampaignStore.find_resumable(Path(out), plan)
    assert store is not None, "nothing to resume"
    finished = len(store.finished_ids())
    rows = len(store.rows())
    return {"resume_s": time.perf_counter() - t0, "finished": finished, "rows": rows, "peak_rss_mb": peak_rss_mb()}


# -- rows (child process) --------------------------------------------------------------------------

def write_runs_table(runs: int, path: Path) -> None:
    """A runs.parquet of `runs` runs x 5 pairs in the run store's schema (values are filler)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rig.store.writer import RUNS_SCHEMA

    n = runs * 5
    columns = {}
    for f in RUNS_SCHEMA:
        if f.name == "run_id":
            columns[f.name] = pa.array([f"I-dual-cubic-c1-15MB-b1MB-n5-{i // 5:06d}" for i in range(n)])
        elif pa.types.is_string(f.type):
            columns[f.name] = pa.array(["ok"] * n)
        elif pa.types.is_timestamp(f.type):
            columns[f.name] = pa.array([1_700_000_000_000_000] * n, pa.int64()).cast(f.type)
        else:
            columns[f.name] = pa.array([1] * n).cast(f.type)
    pq.write_table(pa.table(columns), path)


def child_rows(campaign: str, runs: int) -> dict:
    from rig.influx.sink import SummaryRows

    t0 = time.perf_counter()
    rows = SummaryRows(Path(campaign))
    load_s = time.perf_counter() - t0
    sample = min(runs, 1000)
    t0 = time.perf_counter()
    for i in range(sample):
        assert len(rows.get(f"I-dual-cubic-c1-15MB-b1MB-n5-{i:06d}")) == 5
    return {"load_s": load_s, "get_ms": (time.perf_counter() - t0) * 1000 / sample, "peak_rss_mb": peak_rss_mb()}


# -- ingest (child process) -------------------------------------------------------------------------

def child_fixture(runs: int, tmp: str) -> dict:
    from rig.store.synthetic import write_campaign

    # 10 cells (2 congestion controls x 5 connection counts) x repetitions
    fixture = write_campaign(Path(tmp) / "results", ccs=("cubic", "lia"), connections=(1, 2, 3, 4, 5),
                             repetitions=max(1, runs // 10), samples_per_series=40, sample_interval_s=0.25)
    return {"path": str(fixture.path), "expected": fixture.interface_samples + fixture.lag_samples
            + fixture.subflow_samples + fixture.runs_rows}


def child_ingest(campaign: str, tmp: str) -> dict:
    from rig.influx import Sink, server, sync
    from rig.influx.config import InfluxConfig

    with server.running(Path(tmp) / "influxd") as srv:
        sink = Sink(InfluxConfig(url=srv.url, db="rig", timeout_s=120))
        influxd = int(srv.pid_file.read_text())
        c0, own0, t0 = cpu_s(influxd), time.process_time(), time.perf_counter()
        result = sync(Path(campaign), sink)
        wall = time.perf_counter() - t0
        return {"runs": len(result.written), "points": result.points, "wall_s": wall,
                "influxd_cpu_s": cpu_s(influxd) - c0, "sync_cpu_s": time.process_time() - own0,
                "peak_rss_mb": peak_rss_mb(), "error": result.error}


# -- main -----------------------------------------------------------------------------------------

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), choices=SIZES)
    ap.add_argument("--record-cap", type=int, default=30, help="runs recorded at 100,000 planned runs")
    ap.add_argument("--ingest-max", type=int, default=1_000, help="largest campaign (runs) to ingest")
    ap.add_argument("--steps", nargs="+", default=["plan", "record", "rows", "ingest"],
                    choices=["plan", "record", "rows", "ingest"], help="record includes resume")
    args = ap.parse_args()
    print(f"load average at start: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    with tempfile.TemporaryDirectory(prefix="bench-growth-") as tmp:
        tmp = Path(tmp)
        files = {n: campaign_file(tmp, n) for n in args.sizes}
        if "plan" in args.steps:
            print("\n| runs | `rig campaign plan` wall (s) | CPU (s) | peak RSS (MB) |\n|---|---|---|---|")
        for n in args.sizes if "plan" in args.steps else ():
            r = measure_plan(files[n])
            print(f"| {n:,} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['peak_rss_mb']:.0f} |")

        if "record" in args.steps:
            print("\n| planned runs | create (plan.json) (s) | plan.json (MB) | runs recorded | ms per run recorded, "
                  "first 10 | last 10 | peak RSS (MB) | resume: read (s) | ms per recorded run | peak RSS (MB) |")
            print("|---|---|---|---|---|---|---|---|---|---|")
        for n in args.sizes if "record" in args.steps else ():
            out = tmp / f"store{n}"
            record = n - 1 if n < 100_000 else min(args.record_cap, n - 1)
            r = in_child("record", str(files[n]), str(out), str(record))
            s = in_child("resume", str(files[n]), str(out))
            print(f"| {n:,} | {r['create_s']:.2f} | {r['plan_json_mb']:.2f} | {r['recorded']:,} | {r['first_ms']:.1f} "
                  f"| {r['last_ms']:.1f} | {r['peak_rss_mb']:.0f} | {s['resume_s']:.2f} "
                  f"| {s['resume_s'] * 1000 / max(1, s['finished']):.1f} | {s['peak_rss_mb']:.0f} |")

        if "rows" in args.steps:
            print("\n| runs | runs.parquet rows | read + index (s) | ms per run's rows | peak RSS (MB) |\n|---|---|---|---|---|")
        for n in args.sizes if "rows" in args.steps else ():
            d = tmp / f"rows{n}"
            d.mkdir()
            write_runs_table(n, d / "runs.parquet")
            r = in_child("rows", str(d), str(n))
            print(f"| {n:,} | {n * 5:,} | {r['load_s']:.2f} | {r['get_ms']:.2f} | {r['peak_rss_mb']:.0f} |")

        if "ingest" in args.steps:
            print("\n| runs | points | `rig sync` (s) | points/s | CPU: sync / influxd (s) | sync peak RSS (MB) | check |")
            print("|---|---|---|---|---|---|---|")
        for n in (n for n in args.sizes if n <= args.ingest_max and "ingest" in args.steps):
            d = tmp / f"ingest{n}"
            d.mkdir()
            fixture = in_child("fixture", str(n), str(d))
            r = in_child("ingest", fixture["path"], str(d))
            check = "every point written" if r["points"] == fixture["expected"] and not r["error"] else \
                f"MISMATCH: {r['points']} of {fixture['expected']} ({r['error']})"
            print(f"| {r['runs']:,} | {r['points']:,} | {r['wall_s']:.2f} | {r['points'] / r['wall_s']:,.0f} "
                  f"| {r['sync_cpu_s']:.1f} / {r['influxd_cpu_s']:.1f} | {r['peak_rss_mb']:.0f} | {check} |")
    print(f"\nload average at end: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        step, rest = sys.argv[2], sys.argv[3:]
        if step == "record":
            result = child_record(rest[0], rest[1], int(rest[2]))
        elif step == "resume":
            result = child_resume(rest[0], rest[1])
        elif step == "rows":
            result = child_rows(rest[0], int(rest[1]))
        elif step == "fixture":
            result = child_fixture(int(rest[0]), rest[1])
        else:
            result = child_ingest(rest[0], rest[1])
        print(json.dumps(result))
    else:
        main()
