"""What each dual run's subflows on one path kept in flight over a stretch of the transfer.

From the sender's tcp_info samples (timeseries/transfer_subflows.parquet), per subflow of the
path between FROM and TO seconds after the run's first sample: the median of bytes sent less
retransmitted less acknowledged, the median smoothed RTT, the rate acknowledged and the last
congestion window. A subflow that keeps a fixed, small amount in flight at its base RTT with a
large window is held by a window other than its own: each row also shows the median window the
receiver offered (snd_wnd in timeseries/subflows.parquet, where the run recorded it; docs/
campaigns.md, "Receive buffers"). Numbers printed, never asserted.

    PYTHONPATH=. .venv/bin/python scripts/subflow_in_flight.py [--path lte] [--from 3] [--to 10] \
        results/<campaign>-<id> ...
"""

from __future__ import annotations

import argparse
import statistics

from rig.store.reader import CampaignDir


def in_flight(rows: list[dict], t0: float, path: str, start_s: float, end_s: float) -> list[dict]:
    """One row per subflow of the path with at least two samples in [start_s, end_s] after t0."""
    subflows = {}
    for r in sorted(rows, key=lambda r: r["time"]):
        if r["path"] == path and start_s <= r["time"] - t0 <= end_s:
            subflows.setdefault((r["pair"], r["connection"], r["local"], r["remote"]), []).append(r)
    return [{"subflow": key,
             "in_flight_kb": statistics.median(
                 r["bytes_sent"] - r["bytes_retrans"] - r["bytes_acked"] for r in rs) / 1e3,
             "rtt_ms": statistics.median(r["rtt_ms"] for r in rs),
             "rate_mbps": (rs[-1]["bytes_acked"] - rs[0]["bytes_acked"]) * 8
                          / (rs[-1]["time"] - rs[0]["time"]) / 1e6,
             "cwnd": rs[-1]["cwnd"]}
            for key, rs in subflows.items() if len(rs) >= 2]


def offered_windows(run, t0: float, start_s: float, end_s: float) -> dict[tuple[str, str], float]:
    """(local, remote) -> the median window the receiver offered the sender's subflow in the
    stretch, from the socket snapshots."""
    snaps = run.series("subflows")
    if snaps is None or "snd_wnd" not in snaps.column_names:
        return {}
    windows = {}
    for r in snaps.to_pylist():
        if r["snd_wnd"] is not None and start_s <= r["time"] - t0 <= end_s:
            windows.setdefault((r["local"], r["remote"]), []).append(r["snd_wnd"])
    return {key: statistics.median(w) for key, w in windows.items()}


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
            samples = run.series("transfer_subflows")
            rows = samples.to_pylist() if samples is not None else []
            if not rows:
                continue
            t0 = min(r["time"] for r in rows)  # the stretch counts from the transfer's first sample
            windows = offered_windows(run, t0, args.start, args.end)
            for f in in_flight(rows, t0, args.path, args.start, args.end):
                pair, connection, local, remote = f["subflow"]
                window = windows.get((local, remote))
                print(f"{run.run_id} pair {pair} conn {connection} {local}: {args.path} "
                      f"{args.start:g}-{args.end:g} s: in flight "
                      f"{f['in_flight_kb']:.1f} KB, RTT {f['rtt_ms']:.1f} ms, "
                      f"{f['rate_mbps']:.1f} Mbit/s, cwnd {f['cwnd']}"
                      + (f", window offered {window / 1e3:.1f} KB" if window is not None else ""))


if __name__ == "__main__":
    main()
