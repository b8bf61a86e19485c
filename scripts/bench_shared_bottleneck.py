"""The shared-bottleneck MPTCP/TCP goodput ratio of one CC over N runs, each on a fresh topology
(the one of tests/system/test_congestion_e2e.py): how far single runs scatter.

    .venv/bin/python scripts/bench_shared_bottleneck.py CC RUNS [SECONDS]
"""
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "system")]
import test_congestion_e2e as t  # noqa: E402
from fixtures.namespaces import Namespaces  # noqa: E402

from rig import congestion  # noqa: E402

cc, n = sys.argv[1], int(sys.argv[2])
secs = int(sys.argv[3]) if len(sys.argv) > 3 else t.SECONDS
congestion.ensure_registered(congestion.COUPLED)
ratios = []
for i in range(n):
    ns_reg = Namespaces(f"rs{os.getpid()}")
    try:
        with t.topology(ns_reg) as ns:
            mp, tcp, samples = t.shared_bottleneck(ns, cc, t.SHARED_RATE, t.SHARED_LOSS_PPM, secs)
    finally:
        ns_reg.remove_all()
    ratios.append(mp / tcp)
    print(f"{cc} run {i + 1}: MPTCP {mp / 1e6:.2f} TCP {tcp / 1e6:.2f} Mbit/s, ratio {mp / tcp:.2f}, "
          f"subflows per sample {[len(row) for row in samples]}", flush=True)
print(cc, "ratios", [round(r, 2) for r in ratios], "median", round(statistics.median(ratios), 2),
      "min", round(min(ratios), 2), "max", round(max(ratios), 2))
