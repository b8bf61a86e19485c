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
  <stem>   any other timeseries/<stem>.parquet (lag, subflows, radio, ...): string columns are
           tags, numbers are fields; id-like string columns are fields and a small `sub` tag
           (first-appearance index of their values) keeps rows apart that share a timestamp
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from rig.influx.lineproto import escape_measurement, field_set, line, seconds_to_ns, tag_set, time_column_ns

SCHEMA_VERSION = 1
RUN_TAGS = ("campaign", "setup", "homing", "cc", "wifi_standard")
# Factors of a run summary: few values per campaign, and what a dashboard groups by.
SUMMARY_TAGS = RUN_TAGS + ("connections", "volume_bytes", "rcvbuf_bytes", "sender", "receiver")
NOT_FIELDS = ("campaign", "started_at")  # the tag (campaign name) and the timestamp
# String columns that name one flow/address/id rather than a category: kept out of the series key.
ID_LIKE = {"run_id", "campaign_id", "local", "remote", "src", "dst", "saddr", "daddr", "address",
           "flow", "token", "connection"}
MEASUREMENT_OF_FILE = {"interfaces": "iface"}


def _started_ns(value: object) -> int:
    if isinstance(value, datetime):
        return seconds_to_ns(value.timestamp())
    if isinstance(value, (int, float)):
        return seconds_to_ns(float(value))
    return seconds_to_ns(datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp())


def run_context(run_dir: Path) -> tuple[dict, dict]:
    """(tags, id fields) shared by every point of a run, from params.json and the campaign."""
    params = json.loads((run_dir / "params.json").read_text())
    name, cid = campaign_info(run_dir.parent.parent)
    tags = {**{k: params.get(k) for k in RUN_TAGS}, "campaign": name}
    ids = {"run_id": params.get("run_id", run_dir.name), "campaign_id": cid}
    return tags, ids


def campaign_info(campaign_dir: Path) -> tuple[str | None, str | None]:
    """(campaign name, campaign id). The name, not the directory name, is the tag: a tag value
    per campaign directory would grow the series index with every nightly run."""
    for name in ("metadata.json", "plan.json"):
        path = campaign_dir / name
        if path.is_file():
            doc = json.loads(path.read_text())
            return doc.get("campaign"), doc.get("campaign_id")
    return None, None


def interface_lines(table: pa.Table, tags: dict, ids: dict) -> Iterator[str]:
    cols = {c: table.column(c).to_pylist() for c in ("host", "interface", "path", "tx_bytes", "rx_bytes")}
    times = table.column("time").to_pylist()
    ts = time_column_ns(table.column("time"))
    prefixes: dict[tuple, str] = {}
    last: dict[tuple, tuple[float, int, int]] = {}
    id_fields = field_set(ids)
    # Rates need each interface's samples in time order; the file need not be sorted.
    for i in sorted(range(len(times)), key=lambda i: (cols["host"][i], cols["interface"][i], times[i])):
        key = (cols["host"][i], cols["interface"][i], cols["path"][i])
        prefix = prefixes.get(key)
        if prefix is None:
            prefix = "iface" + tag_set({**tags, "host": key[0], "interface": key[1], "path": key[2]})
            prefixes[key] = prefix
        tx, rx, t = cols["tx_bytes"][i], cols["rx_bytes"][i], times[i]
        fields = [] if tx is None else [f"tx_bytes={int(tx)}i"]
        if rx is not None:
            fields.append(f"rx_bytes={int(rx)}i")
        prev = last.get(key)
        if prev is not None and t is not None and t > prev[0]:
            dt = t - prev[0]
            if tx is not None and prev[1] is not None and tx >= prev[1]:
                fields.append(f"tx_rate_bps={(tx - prev[1]) * 8 / dt!r}")
            if rx is not None and prev[2] is not None and rx >= prev[2]:
                fields.append(f"rx_rate_bps={(rx - prev[2]) * 8 / dt!r}")
        last[key] = (t, tx, rx)
        if fields:
            yield f"{prefix} {','.join(fields)},{id_fields} {ts[i]}"


def generic_lines(measurement: str, table: pa.Table, tags: dict, ids: dict) -> Iterator[str]:
    strings = [f.name for f in table.schema if f.name != "time"
               and (pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
                    or pa.types.is_dictionary(f.type))]
    tag_cols = [c for c in strings if c not in ID_LIKE and c not in tags]
    field_cols = [f.name for f in table.schema if f.name != "time" and f.name not in tag_cols]
    id_cols = [c for c in field_cols if c in strings]
    ts = time_column_ns(table.column("time"))
    tag_values = {c: table.column(c).to_pylist() for c in tag_cols}
    field_values = {c: table.column(c).to_pylist() for c in field_cols}
    sub_index: dict[tuple, int] = {}
    m = escape_measurement(measurement)
    id_fields = field_set(ids)
    for i in range(table.num_rows):
        point_tags = {**tags, **{c: tag_values[c][i] for c in tag_cols}}
        if id_cols:
            ident = tuple(field_values[c][i] for c in id_cols)
            point_tags["sub"] = sub_index.setdefault(ident, len(sub_index))
        fs = field_set({c: field_values[c][i] for c in field_cols})
        if fs:
            yield f"{m}{tag_set(point_tags)} {fs},{id_fields} {ts[i]}"


def timeseries_lines(run_dir: Path) -> Iterator[str]:
    """Every time-series point of a run, file by file."""
    tags, ids = run_context(run_dir)
    for path in sorted((run_dir / "timeseries").glob("*.parquet")):
        table = pq.read_table(path)
        if "time" not in table.column_names or table.num_rows == 0:
            continue
        measurement = MEASUREMENT_OF_FILE.get(path.stem, path.stem)
        if measurement == "iface":
            yield from interface_lines(table, tags, ids)
        else:
            yield from generic_lines(measurement, table, tags, ids)


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
