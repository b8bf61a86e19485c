"""The metrics a claim can name, each once with its unit, computed per valid run.

A claim's evidence is runs (repetitions): each metric gives one value per run - a per-pair
quantity is the mean over the run's pairs (per sender, as the report's figures show it). The
runs.parquet columns are read directly (the RTTs, losses and subflow bytes among them:
rig.store.path_stats); the studies' metrics come from analysis.metrics through analysis.studies
(docs/studies.md, "Metrics").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from rig.findings.data import CampaignData
from rig.store.path_stats import PATHS


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str             # the unit of its values, as tables show them (after `scale`)
    scale: float          # values / scale = shown values (1e6: bit/s shown as Mbit/s)
    text: str
    runs: str             # which runs have it: any, volume (a data volume each) or time (a duration each)
    compute: Callable[[CampaignData], dict[str, float]]


def _mean_per_run(items) -> dict[str, float]:
    """(key, value) pairs -> key -> mean of its values that are numbers."""
    per = defaultdict(list)
    for key, value in items:
        if value is not None and value == value:
            per[key].append(float(value))
    return {k: sum(v) / len(v) for k, v in per.items()}


def _pair_column(column: str) -> Callable[[CampaignData], dict[str, float]]:
    return lambda d: _mean_per_run((r["key"], r.get(column)) for r in d.pairs)


def _path_rate(column: str) -> Callable[[CampaignData], dict[str, float]]:
    def compute(d: CampaignData) -> dict[str, float]:
        return _mean_per_run((r["key"], (r.get(column) or 0) * 8 / r["duration_s"] if r.get("duration_s") else None)
                             for r in d.pairs)
    return compute


def _lte_share(d: CampaignData) -> dict[str, float]:
    lte, total = defaultdict(float), defaultdict(float)
    for r in d.pairs:
        lte[r["key"]] += r.get("bytes_lte") or 0
        total[r["key"]] += (r.get("bytes_lte") or 0) + (r.get("bytes_wifi") or 0)
    return {k: lte[k] / t for k, t in total.items() if t > 0}


def _study(table: str, column: str, path: str | None = None) -> Callable[[CampaignData], dict[str, float]]:
    return lambda d: _mean_per_run((r["key"], r.get(column)) for r in d.study.get(table, [])
                                   if path is None or r.get("path") == path)


def _recovery(d: CampaignData) -> dict[str, float]:
    """A restore the path never recovered from counts as the rest of the run (a lower bound)."""
    return _mean_per_run((r["key"], r["recovery_s"] if r.get("recovery_s") is not None
                          else (d.runs[r["key"]].get("duration_s") or r["up_at_s"]) - r["up_at_s"])
                         for r in d.study.get("metric_recovery", []))


def _subflow_sum_ratio(d: CampaignData) -> dict[str, float]:
    """Per pair: what its subflows carried once each (runs.parquet subflow_bytes, the sender's
    counters) / what its receiver read (bytes_received); the mean over the pairs."""
    return _mean_per_run((r["key"], r["subflow_bytes"] / r["bytes_received"]) for r in d.pairs
                         if r.get("subflow_bytes") is not None and r.get("bytes_received"))


def _mismatch_share(d: CampaignData) -> dict[str, float]:
    """The share of the run's pairs whose subflow bytes disagree with what was read (subflow_mismatch)."""
    return _mean_per_run((r["key"], None if r.get("subflow_mismatch") is None else float(r["subflow_mismatch"]))
                         for r in d.pairs)


def _metrics() -> dict[str, Metric]:
    m = [
        Metric("goodput_bps", "Mbit/s", 1e6, "goodput per sender (runs.parquet goodput_bps)", "any", _pair_column("goodput_bps")),
        Metric("fct_s", "s", 1, "flow completion time per pair (runs.parquet fct_s)", "volume", _pair_column("fct_s")),
        Metric("lte_bps", "Mbit/s", 1e6, "per sender: bytes that left its LTE interface x 8 / duration_s", "any",
               _path_rate("bytes_lte")),
        Metric("wifi_bps", "Mbit/s", 1e6, "per sender: bytes that left its WiFi interface x 8 / duration_s", "any",
               _path_rate("bytes_wifi")),
        Metric("lte_share", "1", 1, "LTE's share of the bytes the senders sent (bytes_lte / (bytes_lte + bytes_wifi))",
               "any", _lte_share),
        Metric("benefit", "1", 1, "aggregation benefit Ben(M) of a dual-homed run (metric_benefit)", "time",
               _study("metric_benefit", "benefit")),
        Metric("lte_more", "1", 1, "share of a flow's busy 1 s intervals in which LTE carried more than WiFi "
               "(metric_traffic_share)", "time", _study("metric_traffic_share", "lte_more")),
        Metric("wifi_more", "1", 1, "share of a flow's busy 1 s intervals in which WiFi carried more than LTE "
               "(metric_traffic_share)", "time", _study("metric_traffic_share", "wifi_more")),
        Metric("recovery_s", "s", 1, "time from a restore until the path is back at 50 % of its pre-cut mean "
               "(metric_recovery; never back: the rest of the run), mean over the run's restores", "time", _recovery),
        Metric("subflow_sum_ratio", "1", 1, "what the subflows carried once each (sender, runs.parquet subflow_bytes) "
               "/ what the receiver read (bytes_received)", "any", _subflow_sum_ratio),
        Metric("subflow_mismatch", "1", 1, "share of the run's pairs whose subflow bytes disagree with what the receiver "
               "read (runs.parquet subflow_mismatch)", "any", _mismatch_share),
        Metric("mptcp_rtt_ms", "ms", 1, "connection-level MPTCP RTT: every subflow's smoothed RTT weighted by the bytes "
               "it carried (runs.parquet mptcp_rtt_ms)", "any", _pair_column("mptcp_rtt_ms")),
    ]
    for path in ("lte", "lte2", "wifi", "total"):
        m.append(Metric(f"path_bps_{path}", "Mbit/s", 1e6, f"mean throughput of the {path} path per 1 s interval "
                        "(metric_throughput_cv mean_bps)", "time", _study("metric_throughput_cv", "mean_bps", path)))
        m.append(Metric(f"cv_{path}", "1", 1, f"coefficient of variation of the {path} path's per-second throughput "
                        "(metric_throughput_cv)", "time", _study("metric_throughput_cv", "cv", path)))
    for path in PATHS:
        m.append(Metric(f"rtt_ms_{path}", "ms", 1, f"byte-weighted mean smoothed RTT of the {path} path's subflows "
                        f"(runs.parquet rtt_ms_{path})", "any", _pair_column(f"rtt_ms_{path}")))
        m.append(Metric(f"rtt_sd_ms_{path}", "ms", 1, f"byte-weighted standard deviation of the {path} path's smoothed "
                        f"RTT samples (runs.parquet rtt_sd_ms_{path})", "any", _pair_column(f"rtt_sd_ms_{path}")))
        m.append(Metric(f"loss_{path}", "1", 1, f"bytes the {path} path's subflows retransmitted / bytes they sent "
                        f"(runs.parquet loss_{path})", "any", _pair_column(f"loss_{path}")))
    return {x.name: x for x in m}


METRICS = _metrics()
