"""A campaign's study tables (docs/studies.md): which of the metrics its data supports, computed.

study_tables(dir) reads a campaign directory or an export (analysis.load) and returns
name -> rows for each table the data has what it needs for; the report draws them and the
export writes them as data/<name>.parquet. Only runs with the given statuses count (ok by default).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from analysis.load import load_runs, load_series, run_outcomes
from rig.store.reader import CampaignDir
from analysis.metrics import (PATHS, benefit_rows, connection_rtt, fct_by_size, event_times, mptcp_vs_best_single, path_rates, recovery_times,
                              rtt_distribution, run_t0, state_events, subflow_timeline, throughput_cv, traffic_share)

BIN_S = 1.0  # throughput intervals, seconds (the paper's iperf reports were per second)
RECOVERY_FRACTION = 0.5  # a restored path is back when an interval reaches this share of its pre-cut mean
PRE_CUT_S = 10.0  # the window before a cut whose mean throughput a recovery is measured against
# Run parameters runs.parquet may not carry: taken from the run's params.json or the plan.
PARAMS = ("policy", "backup", "duration_s", "link_rate_bps", "wifi_loss_pct", "lte_loss_pct")


def lossy_condition(campaign: dict, run: dict | None = None) -> dict:
    """The lossy link of a run (seed 003): lossy_path (wifi/lte; None if neither sender hop
    loses packets), its loss_pct and rate_bps. The loss comes from the campaign's `impairments`,
    an event at t=0 (which wins) or the run's level of factor wifi_loss_pct / lte_loss_pct (which
    wins over both, a 0 % level included); the rate from the run's link_rate_bps level, else that
    event, else the hop's impairment."""
    run = run or {}
    hops = campaign.get("impairments") or {}
    lossy = {p: (hops.get(p) or {}).get("loss_pct") for p in PATHS}
    rate = {p: (hops.get(p) or {}).get("rate_bps") for p in PATHS}
    for e in campaign.get("events") or []:
        if e.get("at_s") == 0 and e.get("path") in PATHS and e.get("loss_pct") is not None:
            lossy[e["path"]] = e["loss_pct"]
            rate[e["path"]] = e.get("rate_bps", rate[e["path"]])
    leveled = [p for p in PATHS if run.get(f"{p}_loss_pct") is not None]
    for p in leveled:
        lossy[p] = run[f"{p}_loss_pct"]
    path = leveled[0] if leveled else next((p for p in PATHS if lossy[p]), None)
    link_rate = run.get("link_rate_bps")
    if path is None:
        return {"lossy_path": None, "loss_pct": None, "rate_bps": None if link_rate is None else float(link_rate)}
    path_rate = link_rate if link_rate is not None else rate[path]
    return {"lossy_path": path, "loss_pct": float(lossy[path]),
            "rate_bps": None if path_rate is None else float(path_rate)}


def _rows(table: pa.Table, run_ids: set[str]) -> list[dict]:
    """The rows of these runs (filtered in Arrow: a long campaign's series are large)."""
    if not table.num_columns or not run_ids:
        return []
    return table.filter(pc.is_in(table.column("run_id"), pa.array(sorted(run_ids), table.schema.field("run_id").type))).to_pylist()


def load_study_rows(path: Path, statuses=("ok",)) -> tuple[list[dict], list[dict], list[dict]]:
    """(runs, transfer_subflows, events) rows of the runs with these statuses (the series of the
    time runs only: nothing here uses a volume run's); each runs row also has the run's PARAMS
    (from params.json, else plan.json, where runs.parquet lacks them) and its lossy condition."""
    path = Path(path)
    params = CampaignDir(path).plan_runs()  # a campaign directory and an export have plan.json
    for o in run_outcomes(path):
        params[o["run_id"]] = {**params.get(o["run_id"], {}), **o}
    campaign = CampaignDir(path).campaign()
    runs = []
    for r in load_runs(path):
        if r.get("status") not in statuses:
            continue
        p = params.get(r["run_id"], {})
        row = {**{k: p.get(k) for k in PARAMS}, **{k: v for k, v in r.items() if v is not None or k not in PARAMS}}
        runs.append({**lossy_condition(campaign, row), **row})
    time_runs = {r["run_id"] for r in runs if r.get("volume_bytes") is None}  # only time runs use the series
    subflows = _rows(load_series(path, "transfer_subflows"), time_runs)
    events = _rows(load_series(path, "events"), time_runs)
    return runs, subflows, events


def _fct_applies(runs: list[dict]) -> bool:
    """Seed 001's figure: completion times over several flow sizes, MPTCP and a single path."""
    timed = [r for r in runs if r.get("fct_s") is not None]
    homings = {r.get("homing") for r in timed}
    return len({r.get("volume_bytes") for r in timed}) > 1 and "dual" in homings and bool(homings & set(PATHS))


def _benefit_applies(runs: list[dict]) -> bool:
    """Seed 003's: time runs (goodput over a duration) on a lossy link or with the loss-aware
    policy, with MPTCP and both single paths."""
    runs = [r for r in runs if r.get("volume_bytes") is None]
    homings = {r.get("homing") for r in runs}
    lossy = any(r.get("lossy_path") for r in runs) or any(r.get("policy") == "loss-aware" for r in runs)
    return lossy and {"dual", *PATHS} <= homings


def study_tables(path: Path, statuses=("ok",)) -> dict[str, list[dict]]:
    runs, subflows, events = load_study_rows(path, statuses)
    tables: dict[str, list[dict]] = {}
    time_runs = {r["run_id"] for r in runs if r.get("volume_bytes") is None}
    timed_subflows = [s for s in subflows if s["run_id"] in time_runs]
    if timed_subflows:
        t0 = run_t0([r for r in runs if r["run_id"] in time_runs], events)
        cut_runs = {e["run_id"] for e in state_events(events)}
        # the intervals of the configured duration: after it the sender's queue drains, not counted
        duration = {r["run_id"]: r.get("duration_s") or float("inf") for r in runs if r["run_id"] in time_runs}
        rates = [r for r in path_rates(timed_subflows, t0, BIN_S) if r["t_s"] <= duration[r["run_id"]] + 1e-9]
        steady = [r for r in rates if r["run_id"] not in cut_runs]
        if steady:  # seed 000: long flows without cuts
            steady_subflows = [s for s in timed_subflows if s["run_id"] not in cut_runs]
            tables["metric_path_throughput"] = steady
            tables["metric_throughput_cv"] = _with_params(throughput_cv(steady), runs)
            tables["metric_traffic_share"] = _with_params(traffic_share(steady), runs)
            steady_runs = [r for r in runs if r["run_id"] in time_runs and r["run_id"] not in cut_runs]
            tables["metric_rtt"] = (rtt_distribution(steady_subflows, runs, ("homing", "path"))
                                    + connection_rtt(steady_runs))
        tables["metric_subflow_timeline"] = [r for r in subflow_timeline(timed_subflows, t0, BIN_S)  # seed 004
                                             if r["t_s"] <= duration[r["run_id"]] + 1e-9]
        if cut_runs:
            tables["metric_path_events"] = event_times(events, t0)
            tables["metric_recovery"] = recovery_times([r for r in rates if r["run_id"] in cut_runs], events, t0,
                                                       RECOVERY_FRACTION, PRE_CUT_S)
    if _fct_applies(runs):  # seed 001
        fct = fct_by_size(runs)
        tables["metric_fct"] = fct
        tables["metric_fct_vs_best_single"] = mptcp_vs_best_single(fct)
    if _benefit_applies(runs):  # seed 003
        tables["metric_benefit"] = benefit_rows(runs)
    return {name: rows for name, rows in tables.items() if rows}


def _with_params(rows: list[dict], runs: list[dict], keys=("homing", "cc")) -> list[dict]:
    """Rows keyed by run_id with the run's homing and cc next to it (what the figures group by)."""
    params = {r["run_id"]: r for r in runs}
    return [{"run_id": r["run_id"], **{k: params.get(r["run_id"], {}).get(k) for k in keys},
             **{k: v for k, v in r.items() if k != "run_id"}} for r in rows]


# Column meanings for the exported tables (datapackage.json reads them from the Arrow field metadata).
DESCRIPTIONS = {
    "pair": "sender/receiver pair index (1-based)",
    "path": "wifi or lte (total: both paths' sum per interval; metric_rtt's mptcp: the connection-level RTT, one "
            "sample per flow)",
    "homing": "sender interfaces used: dual (MPTCP over both), lte or wifi",
    "interval": "interval index after T0 (interval i covers (i, i+1] x the interval length)",
    "t_s": "end of the interval, seconds after T0",
    "bps": "bytes acked by the receiver in the interval x 8 / interval length, bit/s",
    "intervals": "whole intervals counted",
    "mean_bps": "mean throughput over the intervals, bit/s",
    "stdev_bps": "sample standard deviation of the per-interval throughput, bit/s",
    "cv": "coefficient of variation: stdev_bps / mean_bps",
    "lte_more": "share of the intervals with traffic in which LTE carried more than WiFi",
    "wifi_more": "share of the intervals with traffic in which WiFi carried more than LTE",
    "equal": "share of the intervals with traffic in which both carried the same",
    "samples": "RTT samples (the senders' subflow samples with an RTT)",
    "mean_ms": "mean smoothed RTT, ms", "p10_ms": "10th percentile RTT, ms", "p50_ms": "median RTT, ms",
    "p90_ms": "90th percentile RTT, ms", "p25_ms": "25th percentile RTT, ms", "p75_ms": "75th percentile RTT, ms", "max_ms": "largest RTT sample, ms",
    "connection": "MPTCP connection index of the sender",
    "subflow": "the subflow's local>remote address:port",
    "rtt_ms": "mean smoothed RTT of the interval's samples, ms",
    "pairs": "completed pairs (flows) in the cell",
    "mean_s": "mean flow completion time, s", "ci_s": "half width of its 95 % confidence interval, s",
    "median_s": "median flow completion time, s",
    "dual_s": "MPTCP (dual-homed) mean flow completion time, s",
    "best_single": "the single path with the lowest mean flow completion time",
    "best_single_s": "its mean flow completion time, s", "ratio": "dual_s / best_single_s",
    "duration": "configured duration of a time run, s (empty for volume runs)",
    "lossy_path": "the sender hop made lossy in the run's cell (wifi or lte)",
    "loss_pct": "its packet loss in the cell (the run's wifi_loss_pct / lte_loss_pct level, or the campaign's), %",
    "rate_bps": "its rate cap in the cell (the run's link_rate_bps level, or the campaign's), bit/s",
    "policy": "node-side path policy: none or loss-aware",
    "g_bps": "MPTCP goodput per sender of the run (G), bit/s",
    "c_wifi_bps": "highest single-path goodput over WiFi in the same condition (C_wifi), bit/s",
    "c_lte_bps": "highest single-path goodput over LTE in the same condition (C_lte), bit/s",
    "benefit": "aggregation benefit Ben(M) in [-1, 1]",
    "state": "down (the path is cut) or up (restored)", "at_s": "when the campaign planned it, s after T0",
    "actual_s": "when the rig applied it (the earliest of radio and node), s after T0",
    "down_at_s": "when the cut was applied, s after T0", "up_at_s": "when the restore was applied, s after T0",
    "cut_s": "length of the cut, s", "pre_bps": "the path's mean throughput in the 10 s before the cut, bit/s",
    "recovered_at_s": "end of the first interval after the restore at >= 50 % of pre_bps, s after T0",
    "recovery_s": "recovered_at_s - up_at_s (empty: never recovered)",
}
_INTEGERS = {"pair", "interval", "intervals", "samples", "pairs", "connections", "connection", "volume_bytes",
             "rcvbuf_bytes", "repetition"}
_STRINGS = {"run_id", "path", "state", "homing", "cc", "setup", "subflow", "best_single", "lossy_path", "policy",
            "wifi_standard"}


def as_arrow(rows: list[dict]) -> pa.Table:
    """A study table as an Arrow table with fixed column types and descriptions in field metadata."""
    fields = []
    for name in rows[0]:
        kind = pa.int64() if name in _INTEGERS else pa.string() if name in _STRINGS else pa.float64()
        meta = {"description": DESCRIPTIONS[name]} if name in DESCRIPTIONS else None
        fields.append(pa.field(name, kind, metadata=meta))
    schema = pa.schema(fields)
    return pa.Table.from_pylist([{f.name: r.get(f.name) for f in schema} for r in rows], schema=schema)


def study_arrow_tables(path: Path) -> dict[str, pa.Table]:
    """The study tables of a campaign's ok runs as Arrow tables (what `rig export` writes)."""
    return {name: as_arrow(rows) for name, rows in study_tables(path).items()}
