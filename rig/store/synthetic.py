"""A synthetic campaign directory in the run store's on-disk format (what writer.py writes), for
the tests of its readers (export, report, InfluxDB sync, formats, the nightly) and for the
benchmarks in scripts/ (any size: runs x samples per series).

Data in the real format, not a mock: the same layout the campaign runner writes, with plausible
numbers (cumulative interface counters, lag percentiles, subflow samples, raw iperf3 JSON), a
failed and an invalid run, and optionally secrets in campaign.yaml/metadata.json so that the
export's secret scrubbing can be tested.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import product
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

T0 = datetime(2024, 5, 1, 1, 0, 0, tzinfo=timezone.utc).timestamp()
SENDERS = [f"s{i}" for i in range(1, 6)]
RECEIVERS = [f"r{i}" for i in range(1, 6)]
# interface name -> path, as the emulated nodes name them
INTERFACES = {"lte0": "lte", "wlan0": "wifi", "eth0": "mgmt"}
CCS = ("cubic", "lia", "olia")
# Rough per-sender rates (bit/s) so the share figures show something plausible.
RATE = {"cubic": (4e6, 9e6), "lia": (3e6, 8e6), "olia": (3.5e6, 7e6)}

SECRET_PSK = "correct-horse-battery-staple"
SECRET_KI = "465B5CE8B199B49FAA5F0A2EE238A6BC"
SECRET_TOKEN = "influx-token-9f8e7d6c5b4a"


@dataclass
class FixtureCampaign:
    path: Path
    run_ids: list[str]
    ok_run_ids: list[str]
    runs_rows: int  # rows in runs.parquet
    interface_samples: int  # rows over all runs' interfaces.parquet
    lag_samples: int
    subflow_samples: int
    bad_runs: dict[str, tuple[str, str]] = field(default_factory=dict)  # run_id -> (status, reason)


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).isoformat()


def write_campaign(
    root: Path,
    *,
    name: str = "fixture",
    campaign_id: str = "20240501T010000Z",
    ccs: tuple[str, ...] = CCS,
    connections: tuple[int, ...] = (1, 5, 10),
    setups: tuple[str, ...] = ("I",),
    homings: tuple[str, ...] = ("dual",),
    repetitions: int = 3,
    samples_per_series: int = 40,
    sample_interval_s: float = 0.25,
    with_secrets: bool = False,
    started_at_as_timestamp: bool = False,
    transfer_subflows: bool = False,
) -> FixtureCampaign:
    """Write results/<name>-<campaign_id>/ under root and describe what was written.
    `transfer_subflows`: each run also has the senders' own subflow samples (transfer_subflows),
    and its runs.parquet rows the columns computed from them (rig.store.path_stats) with
    bytes_received; the first ok run's first pair carried 15 % more than its receiver read."""
    rng = np.random.default_rng(7)
    cdir = root / f"{name}-{campaign_id}"
    (cdir / "runs").mkdir(parents=True)

    campaign = {
        "name": name,
        "setups": list(setups),
        "wifi_standard": "n5",
        "repetitions": repetitions,
        "factors": {"cc": list(ccs), "connections": list(connections), "homing": list(homings)},
        "volume_bytes": 15_000_000,
        "rcvbuf_bytes": 1_000_000,
    }
    if with_secrets:
        campaign["radio"] = {"wifi": {"ssid": "rig-ap1", "psk": SECRET_PSK},
                             "lte": {"sims": [{"imsi": "001010000000001", "ki": SECRET_KI,
                                               "opc": SECRET_KI[::-1]}]}}
    (cdir / "campaign.yaml").write_text(yaml.safe_dump(campaign, sort_keys=False))

    plan_runs = []
    for rep, setup, homing, cc, conn in product(range(repetitions), setups, homings, ccs, connections):
        i = len(plan_runs)
        plan_runs.append({
            "run_id": f"{i:04d}-{cc}-c{conn}-r{rep}", "campaign": cdir.name, "setup": setup,
            "homing": homing, "cc": cc, "connections": conn, "volume_bytes": 15_000_000,
            "rcvbuf_bytes": 1_000_000, "wifi_standard": "n5", "repetition": rep,
            "pairs": len(SENDERS), "block": rep,
        })
    (cdir / "plan.json").write_text(json.dumps(
        {"campaign": name, "campaign_id": campaign_id, "seed": 42, "runs": plan_runs}, indent=2))

    metadata = {
        "campaign": name, "campaign_id": campaign_id, "rig": "emulated", "rig_version": "0.1.0",
        "git_commit": "0123456789abcdef0123456789abcdef01234567", "kernel": "6.18.0-test",
        "tools": {"iperf3": "3.12", "ns3": "3.44.post0"}, "host": "controller",
        "started_at": _iso(T0),
    }
    if with_secrets:
        metadata["influx"] = {"url": "http://127.0.0.1:8086", "token": SECRET_TOKEN}
    (cdir / "metadata.json").write_text(json.dumps(metadata, indent=2))

    # One failed and one invalid run, the rest ok.
    reasons = [("failed", "iperf3 on s3 exited 1: unable to connect"),
               ("invalid", "emulator lagged 35.2 ms behind wall clock (max 10 ms)")]
    bad = {plan_runs[i]["run_id"]: why for i, why in zip((1, 4), reasons) if i < len(plan_runs)}
    rows: list[dict] = []
    n_iface = n_lag = n_sub = 0
    duration_s = samples_per_series * sample_interval_s
    for i, p in enumerate(plan_runs):
        rid = p["run_id"]
        rdir = cdir / "runs" / rid
        for sub in ("iperf", "timeseries", "logs"):
            (rdir / sub).mkdir(parents=True)
        start = T0 + i * (duration_s + 20.0)
        status, reason = bad.get(rid, ("ok", None))
        (rdir / "params.json").write_text(json.dumps(p, indent=2))
        (rdir / "status.json").write_text(json.dumps({
            "status": status, "reason": reason, "started_at": _iso(start),
            "finished_at": _iso(start + duration_s)}))
        (rdir / "logs" / "runner.log").write_text(f"run {rid} {status}\n")

        times = start + np.arange(samples_per_series) * sample_interval_s
        lte_bps, wifi_bps = RATE[p["cc"]]
        lte_bps *= {"I": 1.0, "II": 1.6, "III": 1.2}[p["setup"]]
        if p["homing"] != "dual":  # single-homed: the other radio only carries control traffic
            lte_bps, wifi_bps = (lte_bps, 1e4) if p["homing"] == "lte" else (1e4, wifi_bps)
        scale = 1.0 + 0.1 * np.log(p["connections"])
        iface = {k: [] for k in ("time", "host", "interface", "path", "tx_bytes", "rx_bytes")}
        sent = {}
        for host in SENDERS + RECEIVERS:
            is_sender = host in SENDERS
            for ifname, path in INTERFACES.items():
                rate = {"lte": lte_bps, "wifi": wifi_bps, "mgmt": 8e3}[path] * scale
                inc = rng.gamma(4.0, rate * sample_interval_s / 8 / 4.0, samples_per_series)
                inc[0] = 0
                big = np.cumsum(inc).astype(np.int64) + 1_000_000
                small = (np.cumsum(inc) / 20).astype(np.int64) + 50_000  # ACK direction
                tx, rx = (big, small) if is_sender else (small, big)
                if is_sender:
                    sent[(host, path)] = int(tx[-1] - tx[0])
                iface["time"].append(times)
                iface["host"] += [host] * samples_per_series
                iface["interface"] += [ifname] * samples_per_series
                iface["path"] += [path] * samples_per_series
                iface["tx_bytes"].append(tx)
                iface["rx_bytes"].append(rx)
        table = pa.table({
            "time": np.concatenate(iface["time"]), "host": iface["host"],
            "interface": iface["interface"], "path": iface["path"],
            "tx_bytes": np.concatenate(iface["tx_bytes"]),
            "rx_bytes": np.concatenate(iface["rx_bytes"])})
        pq.write_table(table, rdir / "timeseries" / "interfaces.parquet")
        n_iface += table.num_rows

        lag_n = max(2, samples_per_series // 4)
        lag_t = start + np.arange(lag_n) * sample_interval_s * 4
        nets = ["ap1", "ap2", "cell"]
        lag = pa.table({
            "time": np.tile(lag_t, len(nets)), "network": np.repeat(nets, lag_n).tolist(),
            "p50_ms": rng.uniform(0.05, 0.3, lag_n * len(nets)),
            "p99_ms": rng.uniform(0.5, 2.0, lag_n * len(nets)),
            "max_ms": rng.uniform(2.0, 5.0, lag_n * len(nets)),
            "samples": rng.integers(900, 1100, lag_n * len(nets)).astype(np.int64)})
        pq.write_table(lag, rdir / "timeseries" / "lag.parquet")
        n_lag += lag.num_rows

        sub_t, sub_host, sub_local, sub_remote = [], [], [], []
        for k, host in enumerate(SENDERS):
            for path_ip in ("10.1", "10.2"):
                sub_t.append(times)
                sub_host += [host] * samples_per_series
                sub_local += [f"{path_ip}.{k}.2:{40000 + k}"] * samples_per_series
                sub_remote += [f"10.9.{k}.2:5201"] * samples_per_series
        n = len(sub_host)
        subflows = pa.table({
            "time": np.concatenate(sub_t), "host": sub_host, "local": sub_local,
            "remote": sub_remote, "cwnd": rng.integers(10, 400, n).astype(np.int64),
            "rtt_ms": rng.uniform(5, 80, n)})
        pq.write_table(subflows, rdir / "timeseries" / "subflows.parquet")
        n_sub += subflows.num_rows

        pair_stats = {}
        if transfer_subflows:
            ok_runs = [q["run_id"] for q in plan_runs if q["run_id"] not in bad]
            pair_stats = _transfer_subflows(rdir, times, p, status != "failed", extra=rid == ok_runs[0])
        for pair, (s, r) in enumerate(zip(SENDERS, RECEIVERS)):
            volume = p["volume_bytes"] // len(SENDERS)
            ok = status != "failed"  # an invalid run completed: it has its numbers
            # goodput: what the interfaces carried, less headers and retransmissions
            goodput = (sent[(s, "lte")] + sent[(s, "wifi")]) * 8 * 0.93 / duration_s if ok else None
            (rdir / "iperf" / f"{s}.json").write_text(json.dumps({
                "start": {"connecting_to": {"host": f"10.9.{pair}.2", "port": 5201},
                          "test_start": {"protocol": "TCP", "num_streams": p["connections"],
                                         "bytes": volume}},
                "intervals": [],
                "end": {"sum_sent": {"seconds": duration_s, "bytes": volume,
                                     "bits_per_second": volume * 8 / duration_s},
                        "sum_received": {"seconds": duration_s, "bytes": volume,
                                         "bits_per_second": volume * 8 / duration_s}}}))
            rows.append({
                "run_id": rid, "campaign": cdir.name, "setup": p["setup"], "homing": p["homing"], "cc": p["cc"],
                "connections": p["connections"], "volume_bytes": p["volume_bytes"],
                "rcvbuf_bytes": p["rcvbuf_bytes"], "wifi_standard": "n5",
                "repetition": p["repetition"], "pair": pair, "sender": s, "receiver": r,
                # as the run store does: a pair of a failed run has no start time
                "started_at": start if status != "failed" else None,
                "duration_s": duration_s if ok else None,
                "goodput_bps": goodput,
                "bytes_lte": sent[(s, "lte")] if ok else None,
                "bytes_wifi": sent[(s, "wifi")] if ok else None,
                "status": status, "reason": reason, **pair_stats.get(pair, {})})

    runs = pa.Table.from_pylist(rows)
    starts = [r["started_at"] for r in rows]
    if started_at_as_timestamp:
        started = pa.array([t and datetime.fromtimestamp(t, tz=timezone.utc) for t in starts],
                           pa.timestamp("us", tz="UTC"))
    else:
        started = pa.array([t and _iso(t) for t in starts], pa.string())
    runs = runs.set_column(runs.schema.get_field_index("started_at"), "started_at", started)
    runs = runs.cast(runs.schema.set(runs.schema.get_field_index("duration_s"),
                                     pa.field("duration_s", pa.float64())))
    pq.write_table(runs, cdir / "runs.parquet")

    ids = [p["run_id"] for p in plan_runs]
    return FixtureCampaign(
        path=cdir, run_ids=ids, ok_run_ids=[r for r in ids if r not in bad],
        runs_rows=runs.num_rows, interface_samples=n_iface, lag_samples=n_lag,
        subflow_samples=n_sub, bad_runs=bad)


# Per path of the synthetic subflows: (local address prefix, mean smoothed RTT ms, its swing ms,
# share of the bytes, share retransmitted)
SUBFLOW_PATHS = {"wifi": ("10.1", 20.0, 4.0, 0.6, 0.02), "lte": ("10.2", 60.0, 15.0, 0.4, 0.005)}


def _transfer_subflows(rdir: Path, times, p: dict, ok: bool, extra: bool) -> dict[int, dict]:
    """Write the run's transfer_subflows series (rig.run.tables' columns; a wifi and an lte subflow
    per pair, cumulative counters growing evenly, RTTs swinging around each path's) and return
    pair -> its columns
    (rig.store.path_stats) with bytes_received. `extra`: the first pair sent 15 % more than read."""
    from rig.store.path_stats import pair_path_stats

    volume = p["volume_bytes"] // len(SENDERS)
    rows, stats = [], {}
    steps = np.arange(1, len(times) + 1) / len(times)
    for pair, host in enumerate(SENDERS):
        carried = volume * (1.15 if extra and pair == 0 else 1.0)
        pair_rows = []
        for path, (prefix, rtt, swing, share, lost) in SUBFLOW_PATHS.items():
            for t, step in zip(times, steps):
                first = int(carried * share * step)
                retrans = int(first * lost)
                pair_rows.append({"time": float(t), "host": host, "pair": pair, "connection": 0,
                                  "local": f"{prefix}.{pair}.2:{40000 + pair}", "remote": f"10.9.{pair}.2:5201",
                                  "path": path, "bytes_acked": first, "bytes_sent": first + retrans,
                                  "bytes_retrans": retrans, "rtt_ms": rtt + swing * np.sin(8 * step + pair),
                                  "cwnd": 40, "ssthresh": 30})
        rows += pair_rows
        stats[pair] = {**pair_path_stats(pair_rows, volume if ok else None), "bytes_received": volume if ok else None}
    pq.write_table(pa.Table.from_pylist(rows), rdir / "timeseries" / "transfer_subflows.parquet")
    return stats


def synthetic_record(run):
    """A finished run of `run.pairs` pairs in the writer's real types, with made-up numbers and no
    time series: what a merge or a resume reads of a run, cheap enough for 100,000 of them."""
    from rig.store.writer import RunRecord

    started = _iso(T0 + run.index)
    pairs = [{"pair": k, "sender": f"s{k}", "receiver": f"r{k}", "started_at": started, "duration_s": 1.0 + run.index % 7,
              "goodput_bps": 8e6, "bytes_lte": 1000 * k, "bytes_wifi": 2000 * k, "status": "ok", "reason": None}
             for k in range(1, run.pairs + 1)]
    return RunRecord(run=run, status="ok", reason=None, started_at=started, finished_at=started, pairs=pairs,
                     details={"lag_retries": 0})


def write_shard(out: Path, plan, runs, campaign_text: str, shard: str | None = None, host: str = "emu1"):
    """A campaign directory of `plan` (rig.campaign.plan.Plan) holding `runs` recorded, written by
    the run store itself as a campaign (or a shard, `shard` "K/N") run on `host` would be."""
    from rig.store.writer import CampaignStore

    metadata = {"rig": "emulated", "rig_version": "0.1.0", "git_commit": "0" * 40, "kernel": "6.18.0-test",
                "host": host, "tools": {}, "started_at": _iso(T0)}
    if shard:
        metadata.update(shard=shard, shard_runs=len(runs))
    store = CampaignStore.create(out, plan, campaign_text, metadata)
    for run in runs:
        store.write_run(synthetic_record(run))
    store.write_runs_table()
    return store
