"""What each dual run's subflows on one path kept in flight over a stretch of the transfer.

From the sender's tcp_info samples (timeseries/transfer_subflows.parquet): the median of bytes
sent less retransmitted less acknowledged, the median smoothed RTT, the rate acknowledged and the
last congestion window, per run, for the path's subflow samples between FROM and TO seconds after the
run's first sample. A subflow that keeps a fixed, small amount in flight at its base RTT with a
large window is held by a window other than its own (the receiver's, or the MPTCP-level one).
Numbers printed, never asserted.

    PYTHONPATH=. .venv/bin/python scripts/subflow_in_flight.py [--path lte] [--from 3] [--to 10] \
        results/<campaign>-<id> ...
"""

from __future__ import annotations

import argparse
import statistics

from rig.store.reader import CampaignDir


def in_flight(run, path: str, start_s: float, end_s: float) -> dict | None:
    """The path's subflow samples in [start_s, end_s] of the run (a run of one connection each)."""
    samples = run.series("transfer_subflows")
    if samples is None:
        return None
    rows = sorted(samples.to_pylist(), key=lambda r: r["time"])
    if not rows:
        return None
    t0 = rows[0]["time"]
    rows = [r for r in rows if r["path"] == path and start_s <= r["time"] - t0 <= end_s]
    if len(rows) < 2:
        return None
    flight = [r["bytes_sent"] - r["bytes_retrans"] - r["bytes_acked"] for r in rows]
    acked = rows[-1]["bytes_acked"] - rows[0]["bytes_acked"]
    return {"in_flight_kb": statistics.median(flight) / 1e3,
            "rtt_ms": statistics.median(r["rtt_ms"] for r in rows),
            "rate_mbps": acked * 8 / (rows[-1]["time"] - rows[0]["time"]) / 1e6,
            "cwnd": rows[-1]["cwnd"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--path", default="lte")
    ap.add_argument("--from", dest="start", type=float, default=3.0)
    ap.add_argument("--to", dest="end", type=float, default=10.0)
    args = ap.parse_args()
    for d in args.dirs:
        for run in CampaignDir(d).recorded():
            if run.params().get("homing") != "dual":
                continue
            f = in_flight(run, args.path, args.start, args.end)
            if f:
                print(f"{run.run_id}: {args.path} {args.start:g}-{args.end:g} s: in flight "
                      f"{f['in_flight_kb']:.1f} KB, RTT {f['rtt_ms']:.1f} ms, "
                      f"{f['rate_mbps']:.1f} Mbit/s, cwnd {f['cwnd']}")


if __name__ == "__main__":
    main()
