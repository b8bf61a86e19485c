"""What a run becomes in InfluxDB: measurements, tags (low cardinality) and fields.

Tags make the series key, so only values with few distinct values are tags: the campaign name
and the run's setup, homing, cc and wifi_standard, plus per-series names (host, interface, path,
network). Ids (run_id, campaign_id) and addresses are fields: they would grow the index with
every run. Every point's timestamp comes from the run store (sample time, run start), so writing
the same run twice writes the same points, which InfluxDB overwrites instead of duplicating.

Measurements:
  iface    one point per interface counter sample: tx_bytes, rx_bytes (cumulative counters),
           tx_rate_bps, rx_rate_bps (from the previous sample of the same interface)
  run      one point per (run, sender/receiver pair): the runs.parquet row
  run_status  one point per recorded run at its start: its status (a tag), reason, wall and
           transfer time and the campaign's planned run count (what a campaign's progress,
           status counts and orchestration overhead are read from)
  events   one point per row of timeseries/events.parquet (what became of a run's scheduled
           events) at the time the event acted (`applied`), or was planned to (not applied)
  <stem>   any other timeseries/<stem>.parquet (lag, subflows, radio, ...): string columns are
           tags, numbers are fields; id-like string columns are fields and a small `sub` tag
           (first-appearance index of their values) keeps rows apart that share a timestamp;
           free-text columns (an event's values, an error) are fields
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rig.influx.columns import (ROWS_PER_BLOCK, Block, as_array, concat, field_piece, field_text, lines, sub_index,
                                tag_prefix, time_ns)
from rig.influx.lineproto import field_set, field_value, line, seconds_to_ns
from rig.store.formats import utc_time
from rig.store.reader import CampaignDir, RunDir

# 2: run_status points, and events.parquet written (at each event's applied time).
SCHEMA_VERSION = 2
RUN_TAGS = ("campaign", "setup", "homing", "cc", "wifi_standard")
# Factors of a run summary: few values per campaign, and what a dashboard groups by.
SUMMARY_TAGS = RUN_TAGS + ("connections", "volume_bytes", "rcvbuf_bytes", "sender", "receiver")
NOT_FIELDS = ("campaign", "started_at")  # the tag (campaign name) and the timestamp
# String columns that name one flow/address/id rather than a category: kept out of the series key.
ID_LIKE = {"run_id", "campaign_id", "local", "remote", "src", "dst", "saddr", "daddr", "address",
           "flow", "token", "connection"}
# Free text: never a tag (each distinct text would be a series), and not an id either.
FREE_TEXT = {"values", "error"}
MEASUREMENT_OF_FILE = {"interfaces": "iface"}


def _started_ns(value: object) -> int:
    if isinstance(value, (int, float)):
        return seconds_to_ns(float(value))
    return seconds_to_ns(utc_time(value).timestamp())


def run_context(run_id: str, params: dict, campaign: tuple[str | None, str | None]) -> tuple[dict, dict]:
    """(tags, id fields) shared by every point of a run, from its params and the campaign's
    (name, id). The name, not the directory name, is the tag: a tag value per campaign directory
    would grow the series index with every nightly run."""
    name, cid = campaign
    tags = {**{k: params.get(k) for k in RUN_TAGS}, "campaign": name}
    ids = {"run_id": params.get("run_id", run_id), "campaign_id": cid}
    return tags, ids


def interface_blocks(table: pa.Table, tags: dict, ids: dict, rows_per_block: int = ROWS_PER_BLOCK) -> Iterator[Block]:
    """`iface` points: the counters, and the rates from the previous sample of the same interface."""
    # Rates need each interface's samples in time order; the file need not be sorted.
    table = table.take(pc.sort_indices(table, [("host", "ascending"), ("interface", "ascending"),
                                               ("path", "ascending"), ("time", "ascending")]))
    keys = {c: as_array(table.column(c)) for c in ("host", "interface", "path")}
    ts = time_ns(table.column("time"))
    time_col = as_array(table.column("time"))
    t = ts / 1e9 if pa.types.is_timestamp(time_col.type) else time_col.cast(pa.float64()).to_numpy(zero_copy_only=False)
    n = table.num_rows
    # prev[i]: row i-1 is the same interface's previous sample, with an earlier time
    prev = np.zeros(n, dtype=bool)
    if n > 1:
        same = np.ones(n - 1, dtype=bool)
        for col in keys.values():
            same &= pc.fill_null(pc.equal(col.slice(1), col.slice(0, n - 1)), False).to_numpy(zero_copy_only=False)
        prev[1:] = same & (t[1:] > t[:-1])
    fields = []
    for name in ("tx_bytes", "rx_bytes"):
        col = as_array(table.column(name))
        fields.append(field_piece(name, concat(col.cast(pa.int64(), safe=False).cast(pa.string()), "i")))
    for name in ("tx_bytes", "rx_bytes"):
        col = as_array(table.column(name))
        valid = col.is_valid().to_numpy(zero_copy_only=False)
        v = col.fill_null(0).to_numpy(zero_copy_only=False)
        ok = prev.copy()
        ok[1:] &= valid[1:] & valid[:-1] & (v[1:] >= v[:-1])
        rate = np.zeros(n)
        rate[1:] = (v[1:] - v[:-1]) * 8 / np.where(ok[1:], t[1:] - t[:-1], 1.0)
        text = pa.array(rate, mask=~ok).cast(pa.string())
        fields.append(field_piece(name.replace("_bytes", "_rate_bps"), text))
    prefix = tag_prefix("iface", tags, keys)
    yield from lines(prefix, fields, "," + field_set(ids), ts, rows_per_block)


def generic_blocks(measurement: str, table: pa.Table, tags: dict, ids: dict,
                   rows_per_block: int = ROWS_PER_BLOCK) -> Iterator[Block]:
    """Any other time series: string columns are tags, the rest fields (see the module doc)."""
    strings = [f.name for f in table.schema if f.name != "time"
               and (pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
                    or pa.types.is_dictionary(f.type))]
    tag_cols = [c for c in strings if c not in ID_LIKE and c not in FREE_TEXT and c not in tags]
    field_cols = [f.name for f in table.schema if f.name != "time" and f.name not in tag_cols]
    id_cols = [c for c in field_cols if c in strings and c not in FREE_TEXT]
    columns = {c: as_array(table.column(c)) for c in tag_cols}
    if id_cols:
        columns["sub"] = sub_index([as_array(table.column(c)) for c in id_cols])
    fields = []
    for c in field_cols:
        col = as_array(table.column(c))
        text = field_text(col)
        if text is None:  # a type the columns do not handle: one value at a time
            text = pa.array([field_value(v) for v in col.to_pylist()], pa.string())
        fields.append(field_piece(c, text))
    yield from lines(tag_prefix(measurement, tags, columns), fields, "," + field_set(ids), time_ns(table.column("time")),
                     rows_per_block)


def timeseries_blocks(run_dir: Path, rows_per_block: int = ROWS_PER_BLOCK) -> Iterator[Block]:
    """Every time-series point of a recorded run, read from the run store."""
    run = RunDir(run_dir)
    tags, ids = run_context(run.run_id, run.params(), CampaignDir(run.path.parent.parent).names())
    yield from series_blocks(run.all_series(), tags, ids, rows_per_block)


def series_blocks(series: Iterable[tuple[str, pa.Table]], tags: dict, ids: dict,
                  rows_per_block: int = ROWS_PER_BLOCK) -> Iterator[Block]:
    """Every time-series point of a run, series by series (by name), in blocks of at most
    rows_per_block lines."""
    for name, table in series:
        if name == "events":
            table = event_points(table)
        if "time" not in table.column_names or table.num_rows == 0:
            continue
        measurement = MEASUREMENT_OF_FILE.get(name, name)
        if measurement == "iface":
            yield from interface_blocks(table, tags, ids, rows_per_block)
        else:
            yield from generic_blocks(measurement, table, tags, ids, rows_per_block)


def event_points(table: pa.Table) -> pa.Table:
    """events.parquet has no sample time: each event's point is at the time it acted (`actual`),
    or, for one that did not act, at the time it was planned for, with `applied` false."""
    if "time" in table.column_names or "planned" not in table.column_names:
        return table
    actual = as_array(table.column("actual"))
    return table.append_column("time", pc.coalesce(actual, as_array(table.column("planned")))) \
        .append_column("applied", actual.is_valid())


def status_line(status: dict, tags: dict, ids: dict, planned_runs: int | None) -> str | None:
    """The `run_status` point of a recorded run, at its start (status.json): the status as a tag
    (three values), wall time (start to finished), transfer time, their difference (the run's
    orchestration overhead) and how many runs the campaign planned."""
    if not status.get("status") or not status.get("started_at"):
        return None
    started = utc_time(status["started_at"]).timestamp()
    finished = utc_time(status["finished_at"]).timestamp() if status.get("finished_at") else None
    wall = finished - started if finished is not None else None
    transfer = float(status["transfer_s"]) if status.get("transfer_s") is not None else None
    fields = {"reason": status.get("reason"), "wall_s": wall, "transfer_s": transfer,
              "overhead_s": wall - transfer if wall is not None and transfer is not None else None,
              "lag_retries": int(status.get("lag_retries") or 0), "lagged": bool(status.get("lagged")),
              "planned_runs": planned_runs, "finished_ms": round(finished * 1000) if finished else None, **ids}
    return line("run_status", {**tags, "status": status["status"]}, fields, seconds_to_ns(started))


def summary_lines(rows: list[dict], campaign: tuple[str | None, str | None],
                  run_started_at: object = None) -> Iterator[str]:
    """One `run` point per runs.parquet row, at the pair's start time (a pair that never started,
    e.g. in a failed run, at the run's start from status.json)."""
    name, cid = campaign
    for row in rows:
        started = row.get("started_at") or run_started_at
        if started is None:
            continue
        tags = {**{k: row.get(k) for k in SUMMARY_TAGS}, "campaign": name or row.get("campaign")}
        # every other column too (the run store may add some): the point is the whole row
        fields = {k: v for k, v in row.items() if k not in SUMMARY_TAGS and k not in NOT_FIELDS}
        fields["campaign_id"] = cid
        point = line("run", tags, fields, _started_ns(started))
        if point:
            yield point
