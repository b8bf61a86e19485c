"""How often this host holds off a real-time task: the floor under the emulator's lag.

    .venv/bin/python scripts/bench_host_stalls.py [--seconds 60] [--probes 2]

Runs `probes` processes at SCHED_FIFO priority 10 (the emulator's), one per CPU if there are
enough, each sleeping 1 ms in a loop and logging every wake-up more than 2 ms late. It prints the
count of late wake-ups over 2, 5 and 10 ms per probe, and how many of the worst ones were late in
every probe within the same 2 ms: those are stalls of the whole machine (a virtual machine whose
CPUs were all paused), which no scheduling inside it can avoid. A run on the emulated rig is
judged lag-invalid by a stall of more than about 10 ms (its per-second lag p99 above 1 ms), so
the stalls over 10 ms per minute bound the share of runs that pass on first attempt.
Root is needed for SCHED_FIFO. Run it with nothing else running.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

LATE_MS = 2.0


def probe(seconds: float) -> None:
    """One probe: JSON list of (unix time, lateness ms) of the wake-ups over LATE_MS late."""
    late, end = [], time.monotonic() + seconds
    while (t := time.monotonic()) < end:
        time.sleep(0.001)
        ms = (time.monotonic() - t - 0.001) * 1e3
        if ms > LATE_MS:
            late.append((time.time(), ms))
    print(json.dumps(late))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--probes", type=int, default=2)
    ap.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)  # one probe process
    a = ap.parse_args()
    if a.probe:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        probe(a.seconds)
        return
    cpus = sorted(os.sched_getaffinity(0))
    procs = [subprocess.Popen(["taskset", "-c", str(cpus[i % len(cpus)]), sys.executable, __file__, "--probe",
                               "--seconds", str(a.seconds)], stdout=subprocess.PIPE, text=True)
             for i in range(a.probes)]
    logs = [json.loads(p.communicate()[0]) for p in procs]
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"{a.probes} probes x {a.seconds:g} s at SCHED_FIFO 10, load average {load}")
    for i, log in enumerate(logs):
        counts = [sum(1 for _, ms in log if ms > x) for x in (2, 5, 10)]
        print(f"probe {i}: late wake-ups > 2 / 5 / 10 ms: {counts[0]} / {counts[1]} / {counts[2]}"
              f"  (per minute: {', '.join(f'{c * 60 / a.seconds:.1f}' for c in counts)})")
    worst = [(t, ms) for t, ms in logs[0] if ms > 5]
    together = sum(1 for t, _ in worst if all(any(abs(t - u) < 0.002 for u, _ in log) for log in logs[1:]))
    print(f"of probe 0's wake-ups > 5 ms late, {together} of {len(worst)} were late in every probe at once "
          f"(whole-machine stalls)")


if __name__ == "__main__":
    main()
