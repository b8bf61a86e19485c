"""The figures of a campaign report, in the form of seed 002's Figs. 5-11.

share_figure: per factor value, one stacked bar per congestion control: mean LTE throughput
below, mean WiFi throughput above (Mbit/s per sender), the WiFi share written on top.
goodput_figure: per factor value and congestion control, mean goodput per sender with its
95 % confidence interval over the runs (repetitions).
"""

from __future__ import annotations

import math
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from analysis.factors import LABELS, fmt, ordered, slices, title  # noqa: E402
from analysis.stats import mean_ci  # noqa: E402

LTE_COLOR, WIFI_COLOR = "#1f77b4", "#ff7f0e"
HATCHES = ("", "//", "..", "xx", "\\\\", "oo")


def measured(rows: list[dict]) -> list[dict]:
    """Rows with a transfer to plot. Which statuses count (ok only, by default) is the caller's choice."""
    return [r for r in rows if r.get("duration_s")]


def path_mbps(row: dict, column: str) -> float:
    return (row.get(column) or 0) * 8 / row["duration_s"] / 1e6


def _panels(n: int) -> tuple[Figure, list]:
    """n panels as small multiples, every one drawn: 3 a row, 4 (smaller) beyond 9 panels."""
    cols = min(n, 3 if n <= 9 else 4)
    rows = math.ceil(n / cols)
    width, height = (5.2, 3.8) if n <= 9 else (4.4, 3.3)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _grouped_positions(n_groups: int, n_bars: int, width: float = 0.8):
    bar = width / max(n_bars, 1)
    return bar, [[g + (b - (n_bars - 1) / 2) * bar for b in range(n_bars)] for g in range(n_groups)]


def _cc_list(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(r["cc"] for r in sorted(rows, key=lambda r: str(r["cc"]))))


def _finish(fig: Figure, factor: str, what: str) -> Figure:
    fig.suptitle(f"{what} vs. {LABELS.get(factor, factor)}")
    fig.tight_layout()
    return fig


def share_figure(rows: list[dict], factor: str) -> Figure:
    data = measured(rows)
    groups = slices(data, factor)
    fig, axes = _panels(len(groups))
    ccs = _cc_list(data)
    for ax, (fixed, panel) in zip(axes, groups):
        values = ordered(factor, [r.get(factor) for r in panel])
        bar, xs = _grouped_positions(len(values), len(ccs))
        cells = defaultdict(list)
        top = 0.0
        for r in panel:
            cells[(r.get(factor), r["cc"])].append(r)
        for gi, value in enumerate(values):
            for bi, cc in enumerate(ccs):
                cell = cells.get((value, cc))
                if not cell:
                    continue
                lte = sum(path_mbps(r, "bytes_lte") for r in cell) / len(cell)
                wifi = sum(path_mbps(r, "bytes_wifi") for r in cell) / len(cell)
                x, hatch = xs[gi][bi], HATCHES[bi % len(HATCHES)]
                ax.bar(x, lte, bar * 0.95, color=LTE_COLOR, hatch=hatch, edgecolor="white")
                ax.bar(x, wifi, bar * 0.95, bottom=lte, color=WIFI_COLOR, hatch=hatch, edgecolor="white")
                top = max(top, lte + wifi)
                if lte + wifi > 0:
                    ax.text(x, lte + wifi, f"{wifi / (lte + wifi):.0%}", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(values)), [fmt(factor, v) for v in values])
        ax.set_xlabel(LABELS.get(factor, factor))
        ax.set_ylabel("throughput per sender (Mbit/s)")
        ax.set_title(title(fixed), fontsize=9)
        ax.set_ylim(0, top * 1.15 or 1)  # room for the share labels
    handles = [plt.Rectangle((0, 0), 1, 1, color=LTE_COLOR), plt.Rectangle((0, 0), 1, 1, color=WIFI_COLOR)]
    labels = ["LTE", "WiFi"]
    for bi, cc in enumerate(ccs):
        handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="#bbbbbb", hatch=HATCHES[bi % len(HATCHES)],
                                     edgecolor="white"))
        labels.append(cc)
    axes[-1].legend(handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1),
                    title="% on top: WiFi share", title_fontsize=8)
    return _finish(fig, factor, "LTE/WiFi throughput share")


def per_run_goodput(rows: list[dict]) -> dict[str, float]:
    """run_id -> mean goodput per sender of that run (Mbit/s), over its ok pairs."""
    per_run = defaultdict(list)
    for r in measured(rows):
        if r.get("goodput_bps") is not None:
            per_run[r["run_id"]].append(r["goodput_bps"] / 1e6)
    return {run: sum(g) / len(g) for run, g in per_run.items()}


def goodput_cells(rows: list[dict], factor: str) -> dict:
    """(factor value, cc) -> MeanCI over runs of their mean goodput per sender (Mbit/s)."""
    groups = defaultdict(list)
    for r in rows:
        groups[(r.get(factor), r["cc"])].append(r)
    return {k: mean_ci(list(per_run_goodput(g).values())) for k, g in groups.items()}


def goodput_figure(rows: list[dict], factor: str) -> Figure:
    data = measured(rows)
    groups = slices(data, factor)
    fig, axes = _panels(len(groups))
    ccs = _cc_list(data)
    colors = plt.get_cmap("tab10").colors
    for ax, (fixed, panel) in zip(axes, groups):
        values = ordered(factor, [r.get(factor) for r in panel])
        bar, xs = _grouped_positions(len(values), len(ccs))
        cells = goodput_cells(panel, factor)
        for bi, cc in enumerate(ccs):
            pts = [(xs[gi][bi], cells[(v, cc)]) for gi, v in enumerate(values) if (v, cc) in cells]
            if not pts:
                continue
            err = [0 if math.isnan(c.half_width) else c.half_width for _, c in pts]
            ax.bar([x for x, _ in pts], [c.mean for _, c in pts], bar * 0.95, yerr=err, capsize=3,
                   color=colors[bi % len(colors)], label=cc)
        ax.set_xticks(range(len(values)), [fmt(factor, v) for v in values])
        ax.set_xlabel(LABELS.get(factor, factor))
        ax.set_ylabel("goodput per sender (Mbit/s)")
        ax.set_title(title(fixed), fontsize=9)
    axes[-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1), title="mean, 95 % CI",
                    title_fontsize=8)
    return _finish(fig, factor, "Goodput")
