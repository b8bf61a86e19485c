"""Loading a campaign's tables from a campaign directory (through rig.store.reader, which checks
and migrates its formats) or from an exported bundle (its data/ tables)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from rig.store import formats
from rig.store.reader import RUNS_TABLE, CampaignDir


def _bundle_data(path: Path) -> Path | None:
    """An exported bundle's data/ directory (its format checked), or None for a campaign directory."""
    formats.check_file(path / "datapackage.json", formats.EXPORT)
    data = path / "data"
    return data if (data / RUNS_TABLE).is_file() and not (path / RUNS_TABLE).is_file() else None


def load_runs(path: Path) -> list[dict]:
    """One dict per (run, pair), the columns of runs.parquet."""
    path = Path(path)
    data = _bundle_data(path)
    if data is not None:
        return pq.read_table(data / RUNS_TABLE).to_pylist()
    if not (path / RUNS_TABLE).is_file():
        raise FileNotFoundError(f"{path}: no {RUNS_TABLE} (neither a campaign directory nor an export)")
    return CampaignDir(path).runs_rows()


def load_series(path: Path, name: str) -> pa.Table:
    """A time series over all runs (with run_id), from an export or gathered from a campaign dir."""
    path = Path(path)
    _bundle_data(path)
    exported = path / "data" / f"{name}.parquet"
    if exported.is_file():
        return pq.read_table(exported)
    return CampaignDir(path).series(name)


def load_metadata(path: Path) -> dict:
    return CampaignDir(path).metadata()


def run_outcomes(path: Path) -> list[dict]:
    """One dict per recorded run from its status.json: run_id, status, reason, lag_retries, plus its params."""
    return CampaignDir(path).outcomes()
