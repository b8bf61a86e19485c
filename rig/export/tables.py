"""The dataset's tables, built from a campaign directory read through rig.store.reader.

runs.parquet is taken as the reader gives it (the current format: started_at a UTC timestamp,
whatever the run store used). Each time series becomes one table over all runs with a run_id
column in front. Tables are streamed run by run into the Parquet writer, so memory stays
bounded by one row group however long the campaign.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rig.export.secrets import is_secret_key
from rig.store.reader import CampaignDir, read_series, series_schema

ROW_GROUP_ROWS = 1_000_000
COMPRESSION = "zstd"


def runs_table(campaign: CampaignDir) -> pa.Table:
    """runs.parquet as exported: without secret columns."""
    table = campaign.runs_table()
    return table.drop_columns([c for c in table.column_names if is_secret_key(c)])


def _with_run_id(table: pa.Table, run_id: str, schema: pa.Schema) -> pa.Table:
    columns = {"run_id": pa.array([run_id] * table.num_rows, pa.string())}
    for f in schema:
        if f.name == "run_id":
            continue
        if f.name in table.column_names:
            columns[f.name] = pc.cast(table.column(f.name), f.type)
        else:
            columns[f.name] = pa.nulls(table.num_rows, f.type)
    return pa.table(columns, schema=schema)


def _batches(files: list[tuple[str, Path]], schema: pa.Schema) -> Iterator[pa.Table]:
    pending: list[pa.Table] = []
    rows = 0
    for run_id, path in files:
        t = _with_run_id(read_series(path), run_id, schema)
        pending.append(t)
        rows += t.num_rows
        if rows >= ROW_GROUP_ROWS:
            yield pa.concat_tables(pending)
            pending, rows = [], 0
    if pending:
        yield pa.concat_tables(pending)


def write_series(files: list[tuple[str, Path]], out: Path) -> tuple[pa.Schema, int]:
    """Concatenate one series over runs into `out`; returns (schema, rows)."""
    merged = pa.unify_schemas([series_schema(p) for _, p in files], promote_options="permissive")
    keep = [f for f in merged if f.name != "run_id" and not is_secret_key(f.name)]
    schema = pa.schema([pa.field("run_id", pa.string())] + keep)
    rows = 0
    with pq.ParquetWriter(out, schema, compression=COMPRESSION) as writer:
        for batch in _batches(files, schema):
            writer.write_table(batch, row_group_size=ROW_GROUP_ROWS)
            rows += batch.num_rows
    return schema, rows


def write_table(table: pa.Table, out: Path) -> None:
    pq.write_table(table, out, compression=COMPRESSION)


def string_values_containing(table_path: Path, needles: set[str]) -> str | None:
    """The first column of a Parquet file whose strings contain one of `needles`, or None."""
    if not needles:
        return None
    pf = pq.ParquetFile(table_path)
    strings = [f.name for f in pf.schema_arrow
               if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
               or pa.types.is_dictionary(f.type)]
    for name in strings:
        uniques = pc.unique(pf.read(columns=[name]).column(name).cast(pa.string()))
        for needle in needles:
            if pc.any(pc.match_substring(uniques, needle)).as_py():
                return name
    return None
