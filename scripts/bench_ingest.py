#!/usr/bin/env python3
"""InfluxDB ingest: `rig sync` of a campaign of more than a million points into the embedded
influxd (Debian's 1.x, started here on loopback in a temporary state directory).

    .venv/bin/python scripts/bench_ingest.py                  # ~1-2 min on a 2-core host
    .venv/bin/python scripts/bench_ingest.py --samples 40 --repetitions 111   # 999 small runs
    .venv/bin/python scripts/bench_ingest.py --campaign DIR   # an existing campaign directory
    (--gzip, --batch-lines N, --writers N: the sink's settings. "Before" numbers: the same
    command with PYTHONPATH=<an older checkout>, without those options.)

Without --campaign it synthesizes one in the run store's format (rig/store/synthetic.py):
27 runs x 10 hosts x 3 interfaces x 1240 samples = 1,004,400 interface points, plus the lag,
subflow and summary points of the same runs; with --samples 40 --repetitions 111, 999 runs the
size of the default campaign's (1,200 interface points each, 1.6 M points in all). Then it measures:
  encode   the run's line protocol built in memory, no HTTP (rig.influx.schema), points/s
  sync     `rig sync` end to end into a fresh database (read, encode, compress, POST), points/s,
           and the CPU seconds influxd and the sync used (what a busy host cannot hide)
and checks exactly-once: a second sync writes nothing, and InfluxDB holds each point once
(count of iface/lag/subflows/run points = rows in the run store). Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rig.influx import Sink, server, sync  # noqa: E402
from rig.influx.config import InfluxConfig  # noqa: E402
from rig.influx import schema  # noqa: E402
from rig.influx.sync import run_dirs  # noqa: E402


def count(sink: Sink, measurement: str, field: str) -> int:
    series = sink.query(f'SELECT count("{field}") FROM "{measurement}"')["results"][0].get("series", [])
    return series[0]["values"][0][1] if series else 0


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (load-independent cost)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    hwm = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("VmHWM:"))
    return int(hwm.split()[1]) / 1024


def encode_rate(campaign: Path) -> tuple[int, float, float]:
    """Points, seconds and CPU seconds to build every run's time-series line protocol (no HTTP)."""
    t0, cpu0, n = time.perf_counter(), time.process_time(), 0
    for run_dir in run_dirs(campaign):
        if hasattr(schema, "timeseries_blocks"):
            n += sum(len(b.data) and b.points for b in schema.timeseries_blocks(run_dir))
        else:  # the per-point encoder this replaced (to measure "before" from an older checkout)
            n += sum(1 for _ in schema.timeseries_lines(run_dir))
    return n, time.perf_counter() - t0, time.process_time() - cpu0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--campaign", type=Path, help="campaign directory (default: synthesize one)")
    ap.add_argument("--samples", type=int, default=1240, help="samples per series when synthesizing")
    ap.add_argument("--batch-lines", type=int, help="the sink's batch_lines (default: its default)")
    ap.add_argument("--repetitions", type=int, default=3, help="repetitions of the 9 cells when synthesizing")
    ap.add_argument("--gzip", action="store_true", help="the sink's gzip setting")
    ap.add_argument("--writers", type=int, help="the sink's writers (POSTs in flight)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        tmp = Path(tmp)
        expected = None
        if args.campaign:
            campaign = args.campaign
        else:
            from rig.store.synthetic import write_campaign

            t0 = time.perf_counter()
            fixture = write_campaign(tmp / "results", samples_per_series=args.samples, sample_interval_s=0.1,
                                     repetitions=args.repetitions)
            campaign = fixture.path
            expected = {"iface": fixture.interface_samples, "lag": fixture.lag_samples,
                        "subflows": fixture.subflow_samples, "run": fixture.runs_rows}
            print(f"synthesized {campaign.name}: {sum(expected.values()):,} points in {time.perf_counter() - t0:.1f} s")

        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
        n, encode_s, encode_cpu = encode_rate(campaign)
        print(f"encode: {n:,} time-series points in {encode_s:.2f} s = {n / encode_s:,.0f} points/s "
              f"({encode_cpu:.2f} CPU s = {n / encode_cpu:,.0f} points per CPU second); load average before: {load}")

        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
        with server.running(tmp / "influxd") as srv:
            server.create_database(srv.url, "bench")
            settings = {"gzip": True} if args.gzip else {}
            if args.batch_lines:
                settings["batch_lines"] = args.batch_lines
            if args.writers:
                settings["writers"] = args.writers
            sink = Sink(InfluxConfig(url=srv.url, db="bench", timeout_s=120, **settings))
            influxd = int(srv.pid_file.read_text())
            cpu0, own0, t0 = cpu_s(influxd), time.process_time(), time.perf_counter()
            first = sync(campaign, sink)
            sync_s = time.perf_counter() - t0
            cpu, own = cpu_s(influxd) - cpu0, time.process_time() - own0
            print(f"sync: {len(first.written)} runs, {first.points:,} points in {sync_s:.2f} s = "
                  f"{first.points / sync_s:,.0f} points/s" + (f" (error: {first.error})" if first.error else ""))
            print(f"  CPU: influxd {cpu:.1f} s, rig sync {own:.1f} s = {first.points / (cpu + own):,.0f} points per "
                  f"CPU second of both; influxd peak RSS {peak_rss_mb(influxd):.0f} MB; load average before: {load}")
            t0 = time.perf_counter()
            second = sync(campaign, sink)
            print(f"second sync: {len(second.written)} runs written, {len(second.already)} already there "
                  f"({time.perf_counter() - t0:.2f} s)")
            if expected:
                fields = {"iface": "tx_bytes", "lag": "samples", "subflows": "cwnd", "run": "status"}
                held = {m: count(sink, m, f) for m, f in fields.items()}
                verdict = "each point once" if held == expected else f"MISMATCH, expected {expected}"
                print(f"in InfluxDB: {held} - {verdict}")


if __name__ == "__main__":
    main()
