"""How the runs' subflows were made: per setup and path, how long after a connection's first
SYN its subflow on that path was established (the path manager's events, rig.run.joins), over the
dual-homed connections of the runs shown."""

from __future__ import annotations

import statistics
from pathlib import Path

from analysis.load import load_series

COLUMNS = ["setup", "path", "connections", "established", "median s", "max s", "never established"]


def join_rows(path: Path, runs: list[dict]) -> list[list[str]]:
    """One row per (setup, path) over the dual-homed runs among `runs` (rows of runs.parquet)."""
    dual = {r["run_id"]: r["setup"] for r in runs if r.get("homing") == "dual"}
    if not dual:
        return []
    life = load_series(path, "subflow_life")
    if life.num_rows == 0:
        return []
    first: dict[tuple, float | None] = {}  # (setup, path, run, host, connection) -> its first establishment
    for r in life.to_pylist():
        if r["run_id"] not in dual or r["path"] not in ("wifi", "lte"):
            continue
        key = (dual[r["run_id"]], r["path"], r["run_id"], r["host"], r["connection"])
        at = r["established_s"]
        if key not in first or (at is not None and (first[key] is None or at < first[key])):
            first[key] = at
    # a connection with no subflow on a path at all: never established there
    conns = {k[2:] + (k[0],) for k in first}
    for run_id, host, conn, setup in conns:
        for p in ("wifi", "lte"):
            first.setdefault((setup, p, run_id, host, conn), None)
    out = []
    for setup, p in sorted({k[:2] for k in first}, key=lambda k: (k[0], k[1] != "wifi")):
        times = [v for k, v in first.items() if k[:2] == (setup, p)]
        done = [t for t in times if t is not None]
        out.append([setup, p.upper() if p == "lte" else "WiFi", str(len(times)), str(len(done)),
                    f"{statistics.median(done):.3f}" if done else "-", f"{max(done):.3f}" if done else "-",
                    str(len(times) - len(done))])
    return out
