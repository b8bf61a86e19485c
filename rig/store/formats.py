"""The versions of the files the rig writes and reads back, and the migration of older ones.

Each versioned file carries its format, "<kind>/<version>": a JSON object in its "format" field,
a Parquet file in its schema metadata (key "format"), and pairs.json, a list, in each pair. A
reader takes its own kind up to the version it knows; a file without a format was written before
formats were versioned and is version 1. A newer or unknown format is refused (InputError, exit 2)
before the reader acts on the file: a newer rig may have changed what the fields mean. Older
versions are migrated here, and only here (rig.store.reader applies it to what it reads).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from rig.core.errors import InputError

KEY = "format"
PLAN = "rig-plan/1"  # a campaign directory's plan.json
RUN_STATUS = "rig-run-status/1"  # each recorded run's status.json
RUN_PARAMS = "rig-run-params/1"  # each run's params.json
RUN_PAIRS = "rig-run-pairs/1"  # each pair of a run's pairs.json
# runs.parquet. 1 (no format): started_at a timestamp, an ISO string or Unix seconds, as older
# rigs wrote it; 2: started_at a timestamp[us, UTC], like first_byte_at and last_byte_at.
RUNS = "rig-runs/2"
SERIES = "rig-series/1"  # each run's timeseries/<name>.parquet
EXPORT = "rig-export/1"  # an exported bundle's datapackage.json


MISSING = object()  # a file without a format: version 1


def version(found: object, path: Path | str, current: str) -> int:
    """The version of `found` (a format string; MISSING: none), refused unless it is `current`'s
    kind at a version up to `current`'s."""
    kind, _, known = current.partition("/")
    found = f"{kind}/1" if found is MISSING else found
    name, sep, number = found.partition("/") if isinstance(found, str) else ("", "", "")
    if name == kind and sep and number.isdigit() and int(number) <= int(known):
        return int(number)
    if name == kind and sep and number.isdigit():
        raise InputError(str(path), "format", f"{found} is newer than this rig reads (up to {current}); "
                                               "use the rig that wrote it or a newer one")
    raise InputError(str(path), "format", f"unknown format {found!r}; this rig reads {current}")


def check(doc: object, path: Path | str, current: str) -> int:
    """Refuse `doc` (read from `path`) unless its format is `current`'s kind at a version up to
    `current`'s; no format field is version 1. Returns the version."""
    return version(doc.get(KEY, MISSING) if isinstance(doc, dict) else None, path, current)


def check_file(path: Path, current: str) -> None:
    """check() on the JSON file at `path`; a file that is missing or not JSON is left to the
    caller's own checks (a bundle's checksums report it)."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return
    check(doc, path, current)


def parquet_version(metadata: dict | None, path: Path | str, current: str) -> int:
    """version() of a Parquet file from its schema metadata."""
    found = (metadata or {}).get(KEY.encode())
    return version(MISSING if found is None else found.decode(errors="replace"), path, current)


def with_format(doc: dict, current: str) -> dict:
    return {**doc, KEY: current}


def without_format(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != KEY}


def utc_time(value: object) -> datetime | None:
    """A time as a UTC datetime, from any spelling the rig has written: a datetime (naive is UTC),
    Unix seconds, or an ISO 8601 string (a trailing Z is UTC)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value, tz=timezone.utc)
    t = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


# -- migrations: what a reader gets is always the current version ------------------------------


def runs_table(table, version_found: int):
    """runs.parquet of `version_found` as the current version (RUNS)."""
    import pyarrow as pa  # here: the CLI's input checks import this module without pyarrow
    import pyarrow.compute as pc

    if "started_at" in table.column_names:  # version 1: any spelling of started_at
        col = table.column("started_at")
        want = pa.timestamp("us", tz="UTC")
        if pa.types.is_timestamp(col.type):
            fixed = pc.cast(col, pa.timestamp("us", tz=col.type.tz or "UTC")) if col.type != want else col
        else:
            fixed = pa.array([utc_time(t) for t in col.to_pylist()], want)
        table = table.set_column(table.column_names.index("started_at"), "started_at", fixed)
    return table.replace_schema_metadata({k: v for k, v in (table.schema.metadata or {}).items() if k != KEY.encode()})


def run_params(doc: dict, version_found: int) -> dict:
    return without_format(doc)


def run_pairs(pairs: list, version_found: int) -> list[dict]:
    return [without_format(p) for p in pairs]


def series(table, version_found: int):
    return table.replace_schema_metadata({k: v for k, v in (table.schema.metadata or {}).items() if k != KEY.encode()})
