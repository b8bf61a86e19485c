"""What the rig transfer's subflow sampling (rig_transfer.py source --sample-ms) costs the sender.

    .venv/bin/python scripts/bench_transfer_sampling.py [--runs 5] [--seconds 3] [--connections 2]

Runs rig_transfer.py over the loopback of a throw-away namespace (bsm<hex>, deleted at the
end), the fastest path there is and so the one where sampling weighs most, with --sample-ms 0
(off: only the final sample), 100 (the default) and 10, in turn, and prints per setting the
receiver's goodput, how late the source started after its --at (ms) and the source's CPU time
per GB sent. Root needed (a namespace). Run it under `nice -n 19` on a shared machine; the
spread between runs there is mostly other load.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import time
from pathlib import Path

TRANSFER = Path(__file__).resolve().parents[1] / "nodes" / "agent" / "rig_transfer.py"
PORT = "5410"


def one(ns: str, sample_ms: str, seconds: str, connections: str) -> tuple[float, float, float]:
    """(goodput bit/s, start lateness s, source CPU s per GB)."""
    prog = ["ip", "netns", "exec", ns, sys.executable, "-I", str(TRANSFER)]
    sink = subprocess.Popen([*prog, "sink", "--port", PORT, "--connections", connections],
                            stdout=subprocess.PIPE, text=True)
    time.sleep(0.3)
    at = time.time() + 0.3
    src = subprocess.Popen([*prog, "source", "--target", "127.0.0.1", "--port", PORT, "--connections", connections,
                            "--seconds", seconds, "--sample-ms", sample_ms, "--at", repr(at)],
                           stdout=subprocess.PIPE, text=True)
    out = src.stdout.read()
    _, _, usage = os.wait4(src.pid, 0)
    got, sent = json.loads(sink.communicate()[0])["connections"], json.loads(out)
    total = sum(c["bytes"] for c in got)
    span = max(c["last_byte_at"] for c in got) - min(c["first_byte_at"] for c in got)
    return total * 8 / span, sent["started_at"] - at, (usage.ru_utime + usage.ru_stime) / (total / 1e9)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", default="3")
    ap.add_argument("--connections", default="2")
    a = ap.parse_args()
    ns = "bsm" + secrets.token_hex(3)
    subprocess.run(["ip", "netns", "add", ns], check=True)
    results: dict[str, list[tuple[float, float, float]]] = {}
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        for _ in range(a.runs):
            for ms in ("0", "100", "10"):  # interleaved: load changes hit every setting alike
                results.setdefault(ms, []).append(one(ns, ms, a.seconds, a.connections))
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
    for ms, runs in results.items():
        gp = [r[0] / 1e9 for r in runs]
        print(f"--sample-ms {ms:>3}: goodput median {statistics.median(gp):.2f} Gbit/s "
              f"({' '.join(f'{g:.2f}' for g in gp)}), start lateness median {statistics.median(r[1] for r in runs) * 1e3:.1f} ms, "
              f"source CPU {statistics.median(r[2] for r in runs):.3f} s/GB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
