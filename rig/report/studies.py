"""The report's study sections (docs/studies.md): each figure in its paper's form, next to a
table of the numbers behind it, drawn only when the campaign's data has what it needs."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib.pyplot as plt

from analysis.studies import study_tables
from analysis.study_figures import (benefit_curves, benefit_figure, cv_figure, fct_figure, rtt_figure, size_label,
                                    timeline_figure, traffic_figure)

MAX_TIMELINES = 3  # runs drawn as timelines (cut runs first); the recovery table has them all


def _n(value, digits: int = 2, scale: float = 1.0) -> str:
    return "-" if value is None else f"{value / scale:.{digits}f}"


def _item(out: Path, kind: str, fig, alt: str, columns: list[str], rows: list[list[str]]) -> dict:
    name = f"study-{kind}.png"
    fig.savefig(out / name, dpi=100)
    plt.close(fig)
    return {"kind": kind, "src": name, "alt": alt, "columns": columns, "rows": rows}


def _mean(xs: list) -> float | None:
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def _variability(t: dict, out: Path) -> dict:
    cv_rows, rtt_rows, shares = t["metric_throughput_cv"], t["metric_rtt"], t.get("metric_traffic_share", [])
    cells = defaultdict(list)
    for r in cv_rows:
        cells[(r["homing"], r["path"])].append(r)
    cv_table = [[h, p, str(len(c)), _n(_mean([r["mean_bps"] for r in c]), 2, 1e6), _n(_mean([r["cv"] for r in c]))]
                for (h, p), c in sorted(cells.items())]
    rtt_table = [[r["homing"], r["path"], str(r["samples"]), _n(r["mean_ms"], 1), _n(r["p10_ms"], 1),
                  _n(r["p50_ms"], 1), _n(r["p90_ms"], 1)] for r in rtt_rows]
    share_table = [[s["run_id"], str(s["pair"]), str(s["intervals"]), _n(s["lte_more"]), _n(s["wifi_more"])]
                   for s in shares if s.get("homing") == "dual"]
    items = [
        _item(out, "cv", cv_figure(cv_rows), "coefficient of variation per path",
              ["homing", "path", "flows", "mean Mbit/s", "mean CV"], cv_table),
        _item(out, "rtt", rtt_figure(rtt_rows), "RTT distribution per path",
              ["homing", "path", "samples", "mean ms", "p10", "p50", "p90"], rtt_table),
    ]
    if share_table:
        items.append(_item(out, "traffic", traffic_figure(t["metric_path_throughput"], shares),
                           "per-interval LTE vs WiFi throughput", ["run", "pair", "intervals", "LTE more", "WiFi more"],
                           share_table))
    return {"id": "study-variability", "title": "Long uplink flows: variability, RTT, traffic distribution",
            "text": "Per-second throughput of each path from the senders' subflow samples (bytes acked). "
                    "CV = standard deviation / mean over a flow's seconds.", "items": items}


def _fct(t: dict, out: Path) -> dict:
    table = [[r["cc"], size_label(r["volume_bytes"]), _n(r["dual_s"], 3), r["best_single"],
              _n(r["best_single_s"], 3), _n(r["ratio"])] for r in t.get("metric_fct_vs_best_single", [])]
    item = _item(out, "fct", fct_figure(t["metric_fct"]), "flow completion time vs flow size",
                 ["cc", "size", "MPTCP s", "best single path", "its s", "MPTCP / best"], table)
    return {"id": "study-fct", "title": "Completion time vs flow size", "items": [item],
            "text": "Mean flow completion time per size; MPTCP (dual-homed) against the best single path."}


def _cell_order(key: tuple) -> tuple:
    """(lossy path, loss, rate, policy) in numeric order, empty values first."""
    return tuple((v is not None, v if isinstance(v, (int, float)) else str(v)) for v in key)


def _benefit(t: dict, out: Path) -> dict:
    rows = t["metric_benefit"]
    cells = defaultdict(list)
    for r in rows:
        cells[(r["lossy_path"], r["loss_pct"], r["rate_bps"], r["policy"])].append(r)
    table = [[str(k[0] or "-"), "-" if k[1] is None else f"{k[1]:g}", _n(k[2], 0, 1e6), k[3], str(len(c)),
              _n(_mean([r["benefit"] for r in c])), _n(min(r["benefit"] for r in c)), _n(max(r["benefit"] for r in c)),
              _n(_mean([r["g_bps"] for r in c]), 2, 1e6), _n(c[0]["c_wifi_bps"], 2, 1e6), _n(c[0]["c_lte_bps"], 2, 1e6)]
             for k, c in sorted(cells.items(), key=lambda kv: _cell_order(kv[0]))]
    items = [_item(out, "benefit", benefit_figure(rows), "aggregation benefit Ben(M)",
                   ["lossy link", "loss %", "rate Mbit/s", "policy", "runs", "mean Ben(M)", "min", "max",
                    "G Mbit/s", "C wifi", "C lte"], table)]
    if len({r["rate_bps"] for r in rows if r["rate_bps"] is not None}) > 1:  # a grid of rates: Fig. 3's goodput too
        items.append(_item(out, "benefit-goodput", benefit_curves(rows, "g_bps"), "MPTCP goodput per policy", [], []))
    return {"id": "study-benefit", "title": "Aggregation benefit Ben(M) on a lossy link", "items": items,
            "text": "Ben(M) = (G - Cmax) / (sum Ci - Cmax) when G >= Cmax, else (G - Cmax) / Cmax; Ci: the best "
                    "single-path goodput of the same cell (lossy link, loss, rate) over its repetitions."}


def _timeline(t: dict, out: Path) -> dict:
    timeline, events = t["metric_subflow_timeline"], t.get("metric_path_events", [])
    recovery = t.get("metric_recovery", [])
    cut = {e["run_id"] for e in events}
    runs = sorted({(r["run_id"], r["pair"]) for r in timeline}, key=lambda k: (k[0] not in cut, k[0], k[1]))
    table = [[r["run_id"], str(r["pair"]), r["path"], _n(r["down_at_s"]), _n(r["up_at_s"]), _n(r["pre_bps"], 2, 1e6),
              _n(r["recovery_s"])] for r in recovery]
    items = []
    for i, (run_id, pair) in enumerate(runs[:MAX_TIMELINES]):
        fig = timeline_figure(timeline, events, run_id, pair)
        if i == 0:  # the table once, next to the first timeline
            items.append(_item(out, f"timeline-{i}", fig, f"timeline of {run_id}",
                               ["run", "pair", "path", "cut at s", "restored at s", "before Mbit/s", "recovery s"],
                               table))
        else:
            items.append(_item(out, f"timeline-{i}", fig, f"timeline of {run_id}", [], []))
    note = f" ({len(runs) - MAX_TIMELINES} more runs in the exported table)" if len(runs) > MAX_TIMELINES else ""
    return {"id": "study-timeline", "title": "Per-subflow throughput and RTT over time", "items": items,
            "text": "Dashed lines: a path cut (red) and restored (green), when the rig applied it. Recovery: from the "
                    "restore to the end of the first second at >= 50 % of the path's mean in the 10 s before the "
                    f"cut.{note}"}


def study_sections(campaign_dir: Path, statuses, out: Path) -> list[dict]:
    """The sections whose tables the campaign has, with their PNGs written into `out`."""
    t = study_tables(campaign_dir, tuple(statuses))
    sections = []
    if {"metric_throughput_cv", "metric_rtt"} <= set(t):
        sections.append(_variability(t, out))
    if "metric_fct" in t:
        sections.append(_fct(t, out))
    if "metric_benefit" in t:
        sections.append(_benefit(t, out))
    if "metric_subflow_timeline" in t:
        sections.append(_timeline(t, out))
    return sections
