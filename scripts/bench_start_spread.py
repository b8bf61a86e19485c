#!/usr/bin/env python3
"""Who holds the CPUs when a run's sources start: a campaign under a kernel scheduler trace.

    .venv/bin/python scripts/bench_start_spread.py campaigns/bench-overhead.yaml --prefix ss1
    .venv/bin/python scripts/bench_start_spread.py campaigns/bench-overhead.yaml --prefix ss1 --runs 2   # + 2 runs' events
    .venv/bin/python scripts/bench_start_spread.py --trace /tmp/t.txt --campaign /tmp/c/bench-overhead-...  # again

As root. Records sched_switch and sched_wakeup (every task) and the sources' connect() calls in
a tracefs instance of its own (mounting tracefs if needed; trace clock `tai`, which reads the
wall clock the sources stamp with), runs the campaign file with scripts/bench_overhead.py (same
runner and backend as `rig campaign run`, kept under --out), then prints per run the start
spread, each source's lateness after T0, and the CPU time both cores gave each kind of task from
T0 to the last source's start (`started_at`, just before its connect()): sources (`rig-source`),
real-time tasks (the radio emulators at SCHED_FIFO, and sources at real-time priority), other
tasks, idle; then the sums over the runs. `--runs N`: the events of the N runs with the largest
spread, one line each. The trace holds every task on the host (other jobs too): the kinds are by
priority and name, not by campaign. The buffer holds the campaign's last ~60 s on a busy host;
runs before it are left out. Nothing is asserted; on a shared host the numbers are upper bounds.
"""

from __future__ import annotations

import argparse
import bisect
import re
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INSTANCE = "rig-start-spread"
EVENTS = ("sched/sched_switch", "sched/sched_wakeup", "raw_syscalls/sys_enter")
CONNECT_FILTER = 'comm == "rig-source" && id == 42'  # x86-64 connect(2)
BUFFER_KB = 65536  # per CPU
LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)$")
SWITCH = re.compile(r"prev_state=(\S+) ==> next_comm=(.*) next_pid=(\d+) next_prio=(\d+)")


@dataclass
class Event:
    t: float
    cpu: int
    comm: str
    pid: int
    kind: str
    rest: str


def tracefs() -> Path:
    for path in (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing")):
        if (path / "instances").is_dir():
            return path
    subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=True)
    return Path("/sys/kernel/tracing")


def start_trace() -> Path:
    inst = tracefs() / "instances" / INSTANCE
    if not inst.is_dir():
        inst.mkdir()
    (inst / "tracing_on").write_text("0")
    (inst / "trace_clock").write_text("tai")
    (inst / "buffer_size_kb").write_text(str(BUFFER_KB))
    (inst / "events/raw_syscalls/sys_enter/filter").write_text(CONNECT_FILTER)
    for event in EVENTS:
        (inst / "events" / event / "enable").write_text("1")
    (inst / "trace").write_text("")
    (inst / "tracing_on").write_text("1")
    return inst


def stop_trace(inst: Path, out: Path) -> None:
    (inst / "tracing_on").write_text("0")
    with open(inst / "trace", "rb") as src, open(out, "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
    inst.rmdir()  # the instance and its buffers go


def read_trace(path: Path) -> list[Event]:
    events = []
    with open(path, errors="replace") as f:
        for line in f:
            if m := LINE.match(line):
                events.append(Event(float(m[4]), int(m[3]), m[1], int(m[2]), m[5], m[6]))
    events.sort(key=lambda e: e.t)
    return events


def runs_of(campaign: Path) -> list[dict]:
    """Each executed run: its exact T0 (status.json's is rounded to the ms) and sources' starts."""
    from rig.store.reader import CampaignDir

    runs = []
    for run in CampaignDir(campaign).recorded():
        status = run.status()
        late = status.get("start_late_ms") or {}
        starts = {}
        for sender, doc in run.transfers().items():
            source = doc.get("source") or {}
            if "started_at" in source and sender in late:
                starts[sender] = source["started_at"]
        if not starts:
            continue
        t0 = statistics.median(starts[s] - late[s] / 1000 for s in starts)
        runs.append({"name": run.run_id, "t0": t0, "spread_ms": status["start_spread_ms"],
                     "late_ms": sorted(late.values()), "last": max(starts.values()),
                     "t0_iso": datetime.fromtimestamp(t0).isoformat()})
    return sorted(runs, key=lambda r: r["t0"])


def kind_of(comm: str, prio: int) -> str:
    if comm.startswith("swapper"):
        return "idle"
    if prio < 100:
        return "real-time: sources" if comm == "rig-source" else "real-time: emulators and others"
    return "sources" if comm == "rig-source" else "other tasks"


def cpu_shares(events: list[Event], times: list[float], a: float, b: float) -> dict[str, float]:
    """CPU time (s) per kind of task over [a, b], both cores."""
    running: dict[int, tuple[str, float]] = {}
    for e in events[bisect.bisect_left(times, a - 0.1):bisect.bisect_left(times, a)]:
        if e.kind == "sched_switch" and (m := SWITCH.search(e.rest)):
            running[e.cpu] = (kind_of(m[2], int(m[4])), a)
    shares: dict[str, float] = {}
    for e in events[bisect.bisect_left(times, a):bisect.bisect_right(times, b)]:
        if e.kind == "sched_switch" and (m := SWITCH.search(e.rest)):
            if e.cpu in running:
                kind, since = running[e.cpu]
                shares[kind] = shares.get(kind, 0.0) + e.t - since
            running[e.cpu] = (kind_of(m[2], int(m[4])), e.t)
    for kind, since in running.values():
        shares[kind] = shares.get(kind, 0.0) + b - since
    return shares


def event_lines(events: list[Event], times: list[float], a: float, b: float, t0: float) -> list[str]:
    out = []
    for e in events[bisect.bisect_left(times, a):bisect.bisect_right(times, b)]:
        at = f"{(e.t - t0) * 1000:8.3f} ms cpu{e.cpu}"
        if e.kind == "sched_switch" and (m := SWITCH.search(e.rest)):
            out.append(f"{at} {e.comm}-{e.pid} [{m[1]}] -> {m[2]}-{m[3]} prio {m[4]}")
        elif e.kind == "sched_wakeup" and "rig-source" in e.rest:
            out.append(f"{at}   wakes {e.rest.split(' target')[0]}")
        elif e.kind == "sys_enter" and e.rest.startswith("NR 42 "):
            out.append(f"{at}   {e.comm}-{e.pid} connect()")
    return out


def report(trace: Path, campaign: Path, detail_runs: int) -> None:
    events = read_trace(trace)
    if not events:
        sys.exit(f"{trace}: no events")
    times = [e.t for e in events]
    runs = [r for r in runs_of(campaign) if r["t0"] - 0.01 > times[0]]
    print(f"{len(runs)} runs inside the trace ({len(events)} events)")
    print("| run | spread ms | sources late after T0, ms | CPU ms from T0 - 2 ms to the last start |")
    print("|---|---|---|---|")
    total: dict[str, float] = {}
    for r in runs:
        shares = cpu_shares(events, times, r["t0"] - 0.002, r["last"])
        for k, v in shares.items():
            total[k] = total.get(k, 0.0) + v
        print(f"| {r['name']} | {r['spread_ms']:.3f} | {', '.join(f'{x:.3f}' for x in r['late_ms'])} | "
              + ", ".join(f"{k} {v * 1000:.2f}" for k, v in sorted(shares.items(), key=lambda kv: -kv[1])) + " |")
    spreads = sorted(r["spread_ms"] for r in runs)
    if spreads:
        print(f"\nspread median {spreads[len(spreads) // 2]:.3f} ms, max {spreads[-1]:.3f} ms over {len(runs)} runs")
    whole = sum(total.values()) or 1.0
    print("CPU over all runs' windows: " + ", ".join(f"{k} {v * 1000:.1f} ms ({100 * v / whole:.0f} %)"
                                                     for k, v in sorted(total.items(), key=lambda kv: -kv[1])))
    for r in sorted(runs, key=lambda r: -r["spread_ms"])[:detail_runs]:
        print(f"\n{r['name']} (T0 {r['t0_iso']}, spread {r['spread_ms']} ms), times after T0:")
        print("\n".join(event_lines(events, times, r["t0"] - 0.0025, r["last"] + 0.0003, r["t0"])))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("file", nargs="?", help="campaign file to run under the trace")
    p.add_argument("--prefix", default="ss1", help="emulated rig prefix (one per concurrent campaign)")
    p.add_argument("--out", help="directory for the campaign and the trace (default: a new temporary one, kept)")
    p.add_argument("--runs", type=int, default=0, help="print the events of this many runs (largest spread first)")
    p.add_argument("--trace", help="only report: a trace this script saved ...")
    p.add_argument("--campaign", help="... and its campaign directory")
    a = p.parse_args()
    if a.trace or a.campaign:
        if not (a.trace and a.campaign):
            p.error("--trace and --campaign go together")
        report(Path(a.trace), Path(a.campaign), a.runs)
        return 0
    if not a.file:
        p.error("a campaign file, or --trace and --campaign")
    out = Path(a.out or tempfile.mkdtemp(prefix="start-spread-"))
    out.mkdir(parents=True, exist_ok=True)
    inst = start_trace()
    try:
        done = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_overhead.py"), a.file, "--prefix", a.prefix,
                               "--out", str(out), "--keep"])
    finally:
        stop_trace(inst, out / "trace.txt")
    campaigns = sorted(d for d in out.iterdir() if d.is_dir())
    if done.returncode != 0 or not campaigns:
        sys.exit(f"the campaign failed (exit {done.returncode}); trace in {out / 'trace.txt'}")
    print(f"\ntrace: {out / 'trace.txt'}, campaign: {campaigns[-1]}")
    report(out / "trace.txt", campaigns[-1], a.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
