"""Loading a campaign's tables from a campaign directory or from an exported bundle."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from rig.store import formats


def _check_bundle(path: Path) -> None:
    """An exported bundle (it has a datapackage.json) must be of a format this code reads."""
    formats.check_file(path / "datapackage.json", formats.EXPORT)


def _runs_path(path: Path) -> Path:
    _check_bundle(path)
    for candidate in (path / "runs.parquet", path / "data" / "runs.parquet"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{path}: no runs.parquet (neither a campaign directory nor an export)")


def load_runs(path: Path) -> list[dict]:
    """One dict per (run, pair), the columns of runs.parquet."""
    return pq.read_table(_runs_path(Path(path))).to_pylist()


def load_series(path: Path, name: str) -> pa.Table:
    """A time series over all runs (with run_id), from an export or gathered from a campaign dir."""
    path = Path(path)
    _check_bundle(path)
    exported = path / "data" / f"{name}.parquet"
    if exported.is_file():
        return pq.read_table(exported)
    tables = []
    for f in sorted(path.glob(f"runs/*/timeseries/{name}.parquet")):
        t = pq.read_table(f)
        tables.append(t.add_column(0, "run_id", pa.array([f.parent.parent.name] * t.num_rows)))
    return pa.concat_tables(tables, promote_options="permissive") if tables else pa.table({})


def load_metadata(path: Path) -> dict:
    f = Path(path) / "metadata.json"
    return json.loads(f.read_text()) if f.is_file() else {}


def run_outcomes(path: Path) -> list[dict]:
    """One dict per recorded run from its status.json: run_id, status, reason, lag_retries, plus its params."""
    out = []
    for status_file in sorted(Path(path).glob("runs/*/status.json")):
        run_dir = status_file.parent
        status = json.loads(status_file.read_text())
        formats.check(status, status_file, formats.RUN_STATUS)
        params_file = run_dir / "params.json"
        params = json.loads(params_file.read_text()) if params_file.is_file() else {}
        out.append({**params, "run_id": run_dir.name, "status": status.get("status"),
                    "reason": status.get("reason"), "started_at": status.get("started_at"),
                    "lag_retries": status.get("lag_retries") or 0})
    return out
