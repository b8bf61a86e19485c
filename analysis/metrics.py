"""The studies' metrics (docs/studies.md) as pure functions over run-store rows.

Inputs are lists of dicts: rows of runs.parquet and of the time series transfer_subflows and
events (each with run_id), as analysis.load returns them (`table.to_pylist()`). Outputs are
lists of dicts, the tables the report draws and the export writes. Nothing here reads files.

Times: a run's clock starts at T0 (all senders start then; events' at_s count from it).
Throughput comes from the senders' cumulative bytes_acked per subflow, put into intervals of
`bin_s` seconds after T0: interval i covers (T0 + i*bin_s, T0 + (i+1)*bin_s] and gets the bytes
acked between a subflow's previous sample and a sample that falls in it. A subflow's first sample
counts from zero (each run opens new connections). Only whole intervals up to a pair's last
sample are kept, and a path gets a zero in every interval in which it carried nothing.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict

from analysis.stats import mean_ci
from rig.store.formats import utc_time

PATHS = ("wifi", "lte")
SINGLE_HOMED = {"wifi": "wifi", "lte": "lte"}  # homing level -> the one path it uses


def unix_time(value: object) -> float | None:
    """A time as Unix seconds, from a float, a datetime or an ISO string (runs.parquet has each)."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    return utc_time(value).timestamp()  # a datetime or an ISO string: the run store's one reading of times


def run_t0(runs: list[dict], events: list[dict] = ()) -> dict[str, float]:
    """run_id -> T0: from the run's events (the earliest planned - at_s) if it has any, else its
    pairs' earliest start."""
    t0: dict[str, float] = {}
    for r in runs:
        start = unix_time(r.get("started_at"))
        if start is not None:
            t0[r["run_id"]] = min(start, t0.get(r["run_id"], start))
    from_events: dict[str, float] = {}
    for e in events:  # planned = T0 + at_s
        if e.get("planned") is not None and e.get("at_s") is not None:
            t = e["planned"] - e["at_s"]
            from_events[e["run_id"]] = min(t, from_events.get(e["run_id"], t))
    return {**t0, **from_events}


def _subflow_key(s: dict) -> tuple:
    return (s["run_id"], s["pair"], s.get("connection"), s.get("local"), s.get("remote"))


def _binned(subflows: list[dict], t0: dict[str, float], bin_s: float, group) -> tuple[dict, dict, dict]:
    """(group -> {interval: bytes}, group -> {interval: [rtt_ms]}, (run_id, pair) -> whole intervals)."""
    by_subflow = defaultdict(list)
    for s in subflows:
        if s["run_id"] in t0 and s.get("time") is not None:
            by_subflow[_subflow_key(s)].append(s)
    acked: dict = defaultdict(lambda: defaultdict(float))
    rtts: dict = defaultdict(lambda: defaultdict(list))
    last: dict = defaultdict(float)
    for key, samples in by_subflow.items():
        samples.sort(key=lambda s: s["time"])
        start = t0[key[0]]
        previous = 0
        for s in samples:
            offset = s["time"] - start
            if offset <= 0:
                previous = s.get("bytes_acked") or 0
                continue
            i = math.ceil(offset / bin_s) - 1
            g = group(s)
            now = s.get("bytes_acked") or 0
            acked[g][i] += max(now - previous, 0)
            previous = now
            if s.get("rtt_ms"):
                rtts[g][i].append(s["rtt_ms"])
            last[(key[0], key[1])] = max(last[(key[0], key[1])], offset)
    whole = {k: int(math.floor(v / bin_s + 1e-9)) for k, v in last.items()}
    return acked, rtts, whole


def path_rates(subflows: list[dict], t0: dict[str, float], bin_s: float = 1.0) -> list[dict]:
    """Throughput per run, pair, path and interval: rows run_id, pair, path, interval, t_s (the
    interval's end after T0), bps. Subflows of all the pair's connections on a path add up."""
    acked, _, whole = _binned(subflows, t0, bin_s, lambda s: (s["run_id"], s["pair"], s["path"]))
    out = []
    for (run_id, pair, path), per in sorted(acked.items()):
        for i in range(whole.get((run_id, pair), 0)):
            out.append({"run_id": run_id, "pair": pair, "path": path, "interval": i,
                        "t_s": (i + 1) * bin_s, "bps": per.get(i, 0.0) * 8 / bin_s})
    return out


def subflow_timeline(subflows: list[dict], t0: dict[str, float], bin_s: float = 1.0) -> list[dict]:
    """Per subflow and interval: run_id, pair, path, subflow ("local>remote", connection), t_s,
    bps and rtt_ms (the mean of the interval's samples; None when it had none)."""
    acked, rtts, whole = _binned(subflows, t0, bin_s, lambda s: (s["run_id"], s["pair"], s["path"],
                                                                  s.get("connection"), f"{s.get('local')}>{s.get('remote')}"))
    out = []
    for g in sorted(acked, key=lambda k: tuple(str(x) for x in k)):
        run_id, pair, path, connection, name = g
        used = sorted(set(acked[g]) | set(rtts[g]))
        for i in range(min(used, default=0), min(max(used, default=-1) + 1, whole.get((run_id, pair), 0))):
            r = rtts[g].get(i)
            out.append({"run_id": run_id, "pair": pair, "path": path, "connection": connection, "subflow": name,
                        "t_s": (i + 1) * bin_s, "bps": acked[g].get(i, 0.0) * 8 / bin_s,
                        "rtt_ms": sum(r) / len(r) if r else None})
    return out


def cv(values: list[float]) -> float | None:
    """Coefficient of variation: sample standard deviation / mean (None for fewer than 2 values or mean 0)."""
    if len(values) < 2:
        return None
    mean = sum(values) / len(values)
    return statistics.stdev(values) / mean if mean > 0 else None


def _with_total(rates: list[dict]) -> dict[tuple, dict[int, float]]:
    """(run_id, pair, path) -> {interval: bps}, plus path "total": the paths' sum per interval."""
    series: dict = defaultdict(dict)
    for r in rates:
        series[(r["run_id"], r["pair"], r["path"])][r["interval"]] = r["bps"]
        total = series[(r["run_id"], r["pair"], "total")]
        total[r["interval"]] = total.get(r["interval"], 0.0) + r["bps"]
    return series


def throughput_cv(rates: list[dict]) -> list[dict]:
    """Per run, pair and path (wifi, lte and total): intervals, mean_bps, stdev_bps, cv."""
    out = []
    for (run_id, pair, path), per in sorted(_with_total(rates).items(), key=lambda kv: tuple(map(str, kv[0]))):
        values = [per[i] for i in sorted(per)]
        c = cv(values)
        out.append({"run_id": run_id, "pair": pair, "path": path, "intervals": len(values),
                    "mean_bps": sum(values) / len(values),
                    "stdev_bps": statistics.stdev(values) if len(values) > 1 else None, "cv": c})
    return out


def traffic_share(rates: list[dict]) -> list[dict]:
    """Per run and pair, over the intervals in which any path carried data: the share in which
    LTE carried more than WiFi (lte_more), WiFi more than LTE (wifi_more), and equal."""
    series = _with_total(rates)
    out = []
    for run_id, pair in sorted({(k[0], k[1]) for k in series}, key=lambda k: tuple(map(str, k))):
        lte, wifi = series.get((run_id, pair, "lte"), {}), series.get((run_id, pair, "wifi"), {})
        busy = [i for i in sorted(set(lte) | set(wifi)) if lte.get(i, 0) + wifi.get(i, 0) > 0]
        n = len(busy)
        more_lte = sum(1 for i in busy if lte.get(i, 0) > wifi.get(i, 0))
        more_wifi = sum(1 for i in busy if wifi.get(i, 0) > lte.get(i, 0))
        out.append({"run_id": run_id, "pair": pair, "intervals": n,
                    "lte_more": more_lte / n if n else None, "wifi_more": more_wifi / n if n else None,
                    "equal": (n - more_lte - more_wifi) / n if n else None})
    return out


def quantile(values: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    xs = sorted(values)
    pos = (len(xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def rtt_distribution(subflows: list[dict], runs: list[dict], by: tuple[str, ...] = ("homing", "path")) -> list[dict]:
    """RTT samples (rtt_ms > 0) of the senders' subflows, pooled by `by` (run columns such as
    homing, and path): samples, mean_ms, p10_ms, p25_ms, p50_ms, p75_ms, p90_ms, max_ms."""
    params = {r["run_id"]: r for r in runs}
    pooled = defaultdict(list)
    for s in subflows:
        run = params.get(s["run_id"])
        if run is None or not s.get("rtt_ms") or s["rtt_ms"] <= 0:
            continue
        pooled[tuple(s.get(k, run.get(k)) for k in by)].append(s["rtt_ms"])
    return _distributions(pooled, by)


def _distributions(pooled: dict[tuple, list[float]], by: tuple[str, ...]) -> list[dict]:
    out = []
    for key in sorted(pooled, key=lambda k: tuple(map(str, k))):
        xs = pooled[key]
        out.append({**dict(zip(by, key)), "samples": len(xs), "mean_ms": sum(xs) / len(xs),
                    **{f"p{q}_ms": quantile(xs, q / 100) for q in (10, 25, 50, 75, 90)},
                    "max_ms": max(xs)})
    return out


def connection_rtt(runs: list[dict]) -> list[dict]:
    """The connection-level MPTCP RTT (runs.parquet mptcp_rtt_ms, one value per flow) pooled per
    homing, as rtt_distribution's rows with path "mptcp" (samples: the flows)."""
    pooled = defaultdict(list)
    for r in runs:
        if r.get("mptcp_rtt_ms") is not None:
            pooled[(r.get("homing"), "mptcp")].append(r["mptcp_rtt_ms"])
    return _distributions(pooled, ("homing", "path"))


FCT_KEYS = ("setup", "cc", "connections", "volume_bytes", "homing")


def fct_by_size(runs: list[dict], keys: tuple[str, ...] = FCT_KEYS) -> list[dict]:
    """Flow completion time per combination of `keys` over the pairs that completed: pairs,
    mean_s with its 95 % CI half width (ci_s, None under 2 pairs), median_s."""
    cells = defaultdict(list)
    for r in runs:
        if r.get("fct_s") is not None:
            cells[tuple(r.get(k) for k in keys)].append(r["fct_s"])
    out = []
    for key in sorted(cells, key=lambda k: tuple((v is None, v if isinstance(v, (int, float)) else str(v)) for v in k)):
        ci = mean_ci(cells[key])
        out.append({**dict(zip(keys, key)), "pairs": ci.n, "mean_s": ci.mean,
                    "ci_s": None if math.isnan(ci.half_width) else ci.half_width,
                    "median_s": quantile(cells[key], 0.5)})
    return out


def mptcp_vs_best_single(fct: list[dict]) -> list[dict]:
    """Per combination without homing: MPTCP's (dual) mean FCT, the best single path's (lowest
    mean FCT of the wifi- and lte-homed runs), which path that is, and ratio = dual / best."""
    keys = [k for k in fct[0] if k not in ("homing", "pairs", "mean_s", "ci_s", "median_s")] if fct else []
    cells = defaultdict(dict)
    for r in fct:
        cells[tuple(r[k] for k in keys)][r["homing"]] = r["mean_s"]
    out = []
    for key, by_homing in cells.items():
        singles = {h: v for h, v in by_homing.items() if h in SINGLE_HOMED}
        if "dual" not in by_homing or not singles:
            continue
        best = min(singles, key=singles.get)
        out.append({**dict(zip(keys, key)), "dual_s": by_homing["dual"], "best_single": best,
                    "best_single_s": singles[best], "ratio": by_homing["dual"] / singles[best]})
    return out


def benefit(g: float, capacities: list[float]) -> float:
    """Aggregation benefit Ben(M) of MPTCP goodput g over paths of single-path goodputs capacities:
    (g - Cmax) / (sum Ci - Cmax) if g >= Cmax, else (g - Cmax) / Cmax. In [-1, 1] for g <= sum Ci."""
    c_max = max(capacities)
    if g >= c_max:
        rest = sum(capacities) - c_max
        return (g - c_max) / rest if rest > 0 else 0.0
    return (g - c_max) / c_max


# What makes two runs the same condition for Ben(M); duration: a time run's configured length.
BENEFIT_KEYS = ("setup", "cc", "connections", "volume_bytes", "duration", "rcvbuf_bytes", "wifi_standard",
                "lossy_path", "loss_pct", "rate_bps")


def _condition(r: dict, keys: tuple[str, ...]) -> tuple:
    time_run = r.get("volume_bytes") is None  # a time run has no volume; its duration_s is the configured one
    return tuple((r.get("duration_s") if time_run else None) if k == "duration" else r.get(k) for k in keys)


def run_goodput(runs: list[dict]) -> dict[str, float]:
    """run_id -> mean goodput per sender (bit/s) over the run's pairs that have one."""
    per = defaultdict(list)
    for r in runs:
        if r.get("goodput_bps") is not None:
            per[r["run_id"]].append(r["goodput_bps"])
    return {k: sum(v) / len(v) for k, v in per.items()}


def benefit_rows(runs: list[dict], keys: tuple[str, ...] = BENEFIT_KEYS) -> list[dict]:
    """Ben(M) of each dual-homed run: G = its goodput per sender; Ci = the highest goodput per
    sender of the wifi- and of the lte-homed runs (any repetition, any policy) with the same
    `keys` (a time run's key is its configured duration, not its measured one). Rows: run_id,
    the keys, policy, g_bps, c_wifi_bps, c_lte_bps, benefit. Dual runs without both capacities are left out."""
    goodput = run_goodput(runs)
    first = {}
    for r in runs:
        first.setdefault(r["run_id"], r)
    capacity: dict = defaultdict(dict)
    for run_id, r in first.items():
        path = SINGLE_HOMED.get(r.get("homing"))
        if path and run_id in goodput:
            cell = capacity[_condition(r, keys)]
            cell[path] = max(cell.get(path, 0.0), goodput[run_id])
    out = []
    for run_id, r in sorted(first.items()):
        caps = capacity.get(_condition(r, keys), {})
        if r.get("homing") != "dual" or run_id not in goodput or set(caps) != set(PATHS):
            continue
        out.append({"run_id": run_id, **dict(zip(keys, _condition(r, keys))), "policy": r.get("policy") or "none",
                    "g_bps": goodput[run_id], "c_wifi_bps": caps["wifi"], "c_lte_bps": caps["lte"],
                    "benefit": benefit(goodput[run_id], [caps["wifi"], caps["lte"]])})
    return out


def state_events(events: list[dict]) -> list[dict]:
    """Path cuts and restores, one per (run, pair, path, at_s): run_id, pair (None: every pair),
    path, state, at_s, actual (the earliest time any part of the rig applied it; an event that
    was never applied is left out)."""
    merged: dict = {}
    for e in events:
        if e.get("what") != "state":
            continue
        values = e.get("values")
        state = (json.loads(values) if isinstance(values, str) else values or {}).get("state")
        actual = e.get("actual")
        if actual is None:  # not applied (due after the run ended, or it failed there)
            continue
        k = (e["run_id"], e.get("pair"), e["path"], e["at_s"])
        if k not in merged or actual < merged[k]["actual"]:
            merged[k] = {"run_id": e["run_id"], "pair": e.get("pair"), "path": e["path"], "state": state,
                         "at_s": e["at_s"], "actual": actual}
    return sorted(merged.values(), key=lambda e: (e["run_id"], str(e["pair"]), e["path"], e["at_s"]))


def event_times(events: list[dict], t0: dict[str, float]) -> list[dict]:
    """The cuts and restores on each run's clock: run_id, pair, path, state, at_s (planned),
    actual_s (applied, seconds after T0)."""
    return [{"run_id": e["run_id"], "pair": e["pair"], "path": e["path"], "state": e["state"], "at_s": e["at_s"],
             "actual_s": e["actual"] - t0[e["run_id"]]} for e in state_events(events) if e["run_id"] in t0]


def recovery_times(rates: list[dict], events: list[dict], t0: dict[str, float], fraction: float = 0.5,
                   pre_s: float = 10.0) -> list[dict]:
    """After each restore (`up`) of a path that was cut (`down`): how long until the path's
    throughput is back. pre_bps = the path's mean over the whole intervals in the pre_s seconds
    before the cut (from T0 at the earliest); recovery_s = end of the first whole interval that
    starts at or after the restore's actual time with throughput >= fraction x pre_bps, minus
    that actual time (resolution: one interval). None when it never got back, or no interval
    before the cut. Rows: run_id, pair, path, down_at_s, up_at_s (actual, after T0), cut_s,
    pre_bps, recovered_at_s, recovery_s."""
    series: dict = defaultdict(dict)
    bin_s = None
    for r in rates:
        series[(r["run_id"], r["pair"], r["path"])][r["interval"]] = r["bps"]
        bin_s = r["t_s"] / (r["interval"] + 1)
    pairs: dict = defaultdict(set)
    for run_id, pair, _ in series:
        pairs[run_id].add(pair)
    out = []
    cuts: dict = {}
    for e in state_events(events):
        if e["run_id"] not in t0 or bin_s is None:
            continue
        start = t0[e["run_id"]]
        for pair in sorted(pairs.get(e["run_id"], ())) if e["pair"] is None else [e["pair"]]:
            k = (e["run_id"], pair, e["path"])
            if e["state"] == "down":
                cuts[k] = e["actual"] - start
                continue
            if e["state"] != "up" or k not in cuts:
                continue
            down, up = cuts.pop(k), e["actual"] - start
            per = series.get(k, {})
            before = [v for i, v in per.items() if i * bin_s >= max(0.0, down - pre_s) and (i + 1) * bin_s <= down]
            pre = sum(before) / len(before) if before else None
            back = None
            if pre:
                back = next(((i + 1) * bin_s for i in sorted(per) if i * bin_s >= up - 1e-9
                             and per[i] >= fraction * pre), None)
            out.append({"run_id": e["run_id"], "pair": pair, "path": e["path"], "down_at_s": down, "up_at_s": up,
                        "cut_s": up - down, "pre_bps": pre, "recovered_at_s": back,
                        "recovery_s": None if back is None else back - up})
    return out
