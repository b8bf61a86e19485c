"""The studies' figures (docs/studies.md), drawn from the tables of analysis.studies.

cv_figure, rtt_figure, traffic_figure: long uplink flows (coefficient of variation per path,
RTT distribution per path, per-interval LTE vs WiFi scatter with the 45 degree line).
fct_figure: flow completion time vs flow size per homing. benefit_figure: Ben(M) per lossy
condition and policy (boxes); benefit_curves: over a grid of link rates, Ben(M) or MPTCP's
goodput over the loss, a curve per rate (seed 003's Figs. 2 and 3). timeline_figure: per-subflow
throughput and RTT of one run over time, with its cuts and restores marked.
"""

from __future__ import annotations

import math
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402


PATH_COLORS = {"lte": "#1f77b4", "wifi": "#ff7f0e", "total": "#555555", "mptcp": "#2ca02c"}
HOMING_ORDER = ("lte", "wifi", "dual")
POLICY_COLORS = {"none": "#d62728", "loss-aware": "#2ca02c"}


def size_label(n: int) -> str:
    """Flow sizes as the studies name them (powers of 1000, like the campaign files)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


def _order(values, known=HOMING_ORDER) -> list:
    return sorted(set(values), key=lambda v: (known.index(v) if v in known else len(known), str(v)))


def cv_figure(cv_rows: list[dict]) -> Figure:
    """Mean CV per homing and path (bars), each pair of each run a dot."""
    fig, ax = plt.subplots(figsize=(7, 4))
    homings = _order(r["homing"] for r in cv_rows)
    paths = [p for p in ("lte", "wifi", "total") if any(r["path"] == p for r in cv_rows)]
    width = 0.8 / len(paths)
    for pi, path in enumerate(paths):
        for hi, homing in enumerate(homings):
            values = [r["cv"] for r in cv_rows if r["homing"] == homing and r["path"] == path and r["cv"] is not None]
            if not values:
                continue
            x = hi + (pi - (len(paths) - 1) / 2) * width
            ax.bar(x, sum(values) / len(values), width * 0.95, color=PATH_COLORS[path], label=path)
            ax.plot([x] * len(values), values, "k.", markersize=4)
    ax.set_xticks(range(len(homings)), [f"{h}-homed" if h != "dual" else "MPTCP (dual)" for h in homings])
    ax.set_ylabel("CV of per-second throughput")
    ax.set_title("Throughput variability per path (bars: mean, dots: each flow)", fontsize=10)
    _dedup_legend(ax)
    fig.tight_layout()
    return fig


def _dedup_legend(ax, **kw) -> None:
    handles, labels = ax.get_legend_handles_labels()
    seen = dict(zip(labels, handles))
    if seen:
        ax.legend(seen.values(), seen.keys(), fontsize=8, **kw)


def rtt_figure(rtt_rows: list[dict]) -> Figure:
    """Box per homing and path: p25-p75 box, median line, p10/p90 whiskers, mean marker; path
    "mptcp" is the connection-level RTT (one value per flow: seed 000's Fig. 6 MPTCP)."""
    fig, ax = plt.subplots(figsize=(7, 4))
    rows = sorted(rtt_rows, key=lambda r: (HOMING_ORDER.index(r["homing"]) if r["homing"] in HOMING_ORDER else 9,
                                           r["path"] == "mptcp", str(r["path"])))  # the connection's after its paths
    stats = [{"label": f"{r['homing']}\n{r['path']}", "med": r["p50_ms"], "q1": r["p25_ms"], "q3": r["p75_ms"],
              "whislo": r["p10_ms"], "whishi": r["p90_ms"], "mean": r["mean_ms"], "fliers": []} for r in rows]
    boxes = ax.bxp(stats, showmeans=True, patch_artist=True, medianprops={"color": "black"})
    for patch, r in zip(boxes["boxes"], rows):
        patch.set_facecolor(PATH_COLORS.get(r["path"], "#999999"))
    ax.set_ylabel("RTT (ms)")
    ax.set_title("RTT per homing and path (box p25-p75, whiskers p10-p90, triangle: mean)\n"
                 "mptcp: the connection-level RTT, one value per flow", fontsize=10)
    fig.tight_layout()
    return fig


def traffic_figure(rates: list[dict], shares: list[dict]) -> Figure:
    """Per-interval LTE vs WiFi throughput of the dual-homed flows, with the 45 degree line."""
    fig, ax = plt.subplots(figsize=(5.5, 5))
    dual = {(s["run_id"], s["pair"]) for s in shares if s.get("homing") == "dual"}
    per = defaultdict(dict)
    for r in rates:
        if (r["run_id"], r["pair"]) in dual and r["path"] in ("lte", "wifi"):
            per[(r["run_id"], r["pair"], r["interval"])][r["path"]] = r["bps"] / 1e6
    xs = [v.get("wifi", 0) for v in per.values()]
    ys = [v.get("lte", 0) for v in per.values()]
    ax.scatter(xs, ys, s=8, alpha=0.5, color=PATH_COLORS["lte"])
    top = max(xs + ys + [0.1])
    ax.plot([0, top], [0, top], "k--", linewidth=1)
    cells = [s for s in shares if (s["run_id"], s["pair"]) in dual and s["intervals"]]
    n = sum(s["intervals"] for s in cells)
    lte_more = sum(s["lte_more"] * s["intervals"] for s in cells) / n if n else math.nan
    ax.set_xlabel("WiFi throughput (Mbit/s)")
    ax.set_ylabel("LTE throughput (Mbit/s)")
    ax.set_title(f"Traffic distribution (1 s intervals): LTE carries more in {lte_more:.0%}", fontsize=10)
    fig.tight_layout()
    return fig


def fct_figure(fct_rows: list[dict]) -> Figure:
    """Mean flow completion time (95 % CI) vs flow size, one line per homing, a panel per cc."""
    ccs = _order((r["cc"] for r in fct_rows), ())
    fig, axes = plt.subplots(1, len(ccs), figsize=(5.2 * len(ccs), 4), squeeze=False)
    for ax, cc in zip(axes[0], ccs):
        for homing in _order(r["homing"] for r in fct_rows):
            pts = sorted((r["volume_bytes"], r["mean_s"], r["ci_s"] or 0) for r in fct_rows
                         if r["cc"] == cc and r["homing"] == homing)
            ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[p[2] for p in pts], marker="o", capsize=3,
                        label=homing, color=PATH_COLORS.get(homing, "#2ca02c"))
        ax.set_xscale("log")
        ax.set_yscale("log")
        sizes = sorted({r["volume_bytes"] for r in fct_rows})
        ax.set_xticks(sizes, [size_label(s) for s in sizes], rotation=45, fontsize=7)
        ax.minorticks_off()
        ax.set_xlabel("flow size")
        ax.set_ylabel("completion time (s)")
        ax.set_title(f"{cc}", fontsize=10)
        ax.legend(fontsize=8, title="homing", title_fontsize=8)
    fig.suptitle("Flow completion time vs flow size (mean, 95 % CI)")
    fig.tight_layout()
    return fig


def benefit_figure(rows: list[dict]) -> Figure:
    """Ben(M) per loss level and policy (boxes over runs, a dot per run); over a grid of link rates
    (several rate_bps), curves: benefit_curves."""
    losses = _levels(rows, "loss_pct") or [None]
    rates = _levels(rows, "rate_bps")
    policies = _order((r["policy"] for r in rows), tuple(POLICY_COLORS))
    if len(rates) > 1:
        return benefit_curves(rows, "benefit", losses, rates, policies)
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(policies)
    for pi, policy in enumerate(policies):
        data, xs = [], []
        for li, loss in enumerate(losses):
            vals = [r["benefit"] for r in rows if r["policy"] == policy and r["loss_pct"] == loss]
            if vals:
                data.append(vals)
                xs.append(li + (pi - (len(policies) - 1) / 2) * width)
        color = POLICY_COLORS.get(policy, "#999999")
        if data:
            box = ax.boxplot(data, positions=xs, widths=width * 0.9, patch_artist=True, manage_ticks=False,
                             medianprops={"color": "black"}, showfliers=False)
            for patch in box["boxes"]:
                patch.set_facecolor(color)
                patch.set_alpha(0.5)
            for x, vals in zip(xs, data):  # every run, so that one run per box still shows
                ax.plot([x] * len(vals), vals, "o", color=color, markersize=4)
            ax.plot([], [], "s", color=color, label=policy)
    ax.set_xticks(range(len(losses)), ["-" if v is None else f"{v:g} %" for v in losses])
    ax.set_xlabel(f"loss on {_lossy_link(rows) or 'no'} link")
    ax.axhline(0, color="k", linewidth=0.8)
    ax.set_ylim(-1.05, 1.05)
    ax.set_ylabel("Ben(M)")
    ax.set_title("Aggregation benefit of MPTCP over the best single path", fontsize=10)
    ax.legend(fontsize=8, title="policy", title_fontsize=8)
    fig.tight_layout()
    return fig


def _levels(rows: list[dict], key: str) -> list[float]:
    return sorted({r[key] for r in rows if r.get(key) is not None})


def _lossy_link(rows: list[dict]) -> str | None:
    return next((r["lossy_path"] for r in rows if r.get("lossy_path")), None)


def benefit_curves(rows: list[dict], column: str, losses: list | None = None, rates: list | None = None,
                   policies: list | None = None) -> Figure:
    """Seed 003's grid in the paper's form: `column` (benefit: Ben(M), Fig. 2; g_bps: MPTCP's
    goodput, Fig. 3) over the loss levels, a curve per link rate through the cells' means and a dot
    per run, a panel per policy. The levels sit evenly spaced (the grid's losses are decades)."""
    losses = losses or _levels(rows, "loss_pct") or [None]
    rates = rates or _levels(rows, "rate_bps") or [None]
    policies = policies or _order((r["policy"] for r in rows), tuple(POLICY_COLORS))
    goodput = column == "g_bps"
    scale = 1e6 if goodput else 1.0
    fig, axes = plt.subplots(1, len(policies), figsize=(5.2 * len(policies), 4), squeeze=False, sharey=True)
    cmap = plt.get_cmap("viridis")
    for ax, policy in zip(axes[0], policies):
        for ri, rate in enumerate(rates):
            color = cmap(0.85 * ri / max(1, len(rates) - 1))
            xs, means = [], []
            for li, loss in enumerate(losses):
                vals = [r[column] / scale for r in rows
                        if (r["policy"], r.get("rate_bps"), r.get("loss_pct")) == (policy, rate, loss)]
                if vals:
                    xs.append(li)
                    means.append(sum(vals) / len(vals))
                    ax.plot([li] * len(vals), vals, ".", color=color, alpha=0.6)
            label = "-" if rate is None else f"{rate / 1e6:g} Mbit/s"
            ax.plot(xs, means, "o-", color=color, label=label)
            if goodput:  # the best single path of each cell (C_max), which Fig. 3's claim compares with
                best = {li: max(r["c_wifi_bps"], r["c_lte_bps"]) / scale for li, loss in enumerate(losses) for r in rows
                        if (r.get("rate_bps"), r.get("loss_pct")) == (rate, loss)}
                ax.plot(list(best), list(best.values()), "--", color=color, linewidth=1,
                        label="best single path" if ri == len(rates) - 1 else None)
        ax.set_xticks(range(len(losses)), ["-" if v is None else f"{v:g}" for v in losses])
        ax.set_xlabel(f"loss on the {_lossy_link(rows) or 'no'} link (%)")
        ax.set_title(f"policy {policy}", fontsize=10)
        if not goodput:
            ax.axhline(0, color="k", linewidth=0.8)
            ax.set_ylim(-1.05, 1.05)
    axes[0][0].set_ylabel("MPTCP goodput G (Mbit/s)" if goodput else "Ben(M)")
    axes[0][-1].legend(fontsize=8, title="both links at", title_fontsize=8)
    fig.suptitle("MPTCP goodput over the loss, per link rate (mean; dots: runs; dashed: best single path)" if goodput else
                 "Aggregation benefit Ben(M) over the loss, per link rate (mean; dots: runs)", fontsize=10)
    fig.tight_layout()
    return fig


def timeline_figure(timeline: list[dict], events: list[dict], run_id: str, pair) -> Figure:
    """One run's pair: throughput per subflow and their sum (top), RTT per subflow (bottom), over
    seconds after T0; cuts (red) and restores (green) as vertical lines at their applied times."""
    rows = [r for r in timeline if r["run_id"] == run_id and r["pair"] == pair]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 5.5), sharex=True)
    total = defaultdict(float)
    for name in sorted({r["subflow"] for r in rows}):
        sub = [r for r in rows if r["subflow"] == name]
        color = PATH_COLORS.get(sub[0]["path"], "#2ca02c")
        label = f"{sub[0]['path']} {name}"
        top.plot([r["t_s"] for r in sub], [r["bps"] / 1e6 for r in sub], color=color, label=label, linewidth=1)
        timed = [r for r in sub if r["rtt_ms"] is not None]
        bottom.plot([r["t_s"] for r in timed], [r["rtt_ms"] for r in timed], color=color, linewidth=1)
        for r in sub:
            total[r["t_s"]] += r["bps"] / 1e6
    top.plot(sorted(total), [total[t] for t in sorted(total)], color=PATH_COLORS["total"], linestyle=":",
             label="sum")
    for e in events:
        if e["run_id"] == run_id and e["pair"] in (None, pair):
            for ax in (top, bottom):
                ax.axvline(e["actual_s"], color="#d62728" if e["state"] == "down" else "#2ca02c", linestyle="--")
            top.text(e["actual_s"], 0.02, f" {e['path']} {e['state']}", transform=top.get_xaxis_transform(), fontsize=7,
                     rotation=90, va="bottom")
    top.set_ylabel("throughput (Mbit/s)")
    bottom.set_ylabel("RTT (ms)")
    bottom.set_xlabel("seconds after T0")
    top.set_title(f"{run_id}, pair {pair}: per-subflow throughput and RTT", fontsize=10)
    top.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    return fig
