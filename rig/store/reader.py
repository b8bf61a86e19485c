"""The one reader of a campaign directory (rig.store.writer writes it):

    results/<campaign>-<id>/
      campaign.yaml  plan.json  metadata.json
      runs/<run_id>/ params.json status.json pairs.json transfers/<sender>.json timeseries/*.parquet logs/
      runs.parquet          one row per (run, pair)
      attempts/<run_id>.<n>/  earlier attempts of a run, discarded because the emulator lagged

Everything that reads a campaign directory (the writer's resume, export, the InfluxDB sync, the
report, analysis, nightly) reads it here. Each file's format is checked (a newer one is refused,
InputError) and an older one migrated to the current version (rig.store.formats), so what a
reader's caller gets is always the current format. A run is recorded once its status.json is
there; runs/.partial-* are runs being assembled (or a crash's leftovers) and are never read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from rig.core.errors import InputError
from rig.store import formats

CAMPAIGN_FILE, PLAN, METADATA, RUNS_TABLE = "campaign.yaml", "plan.json", "metadata.json", "runs.parquet"
DOCUMENTS = (CAMPAIGN_FILE, PLAN, METADATA)  # the campaign's documents, written when it is created
RUNS, ATTEMPTS = "runs", "attempts"
PARAMS, STATUS, PAIRS, TRANSFERS, TIMESERIES, LOGS = ("params.json", "status.json", "pairs.json", "transfers",
                                                      "timeseries", "logs")


def read_json(path: Path) -> object:
    return json.loads(Path(path).read_text())


class RunDir:
    """One run's directory: runs/<run_id>/ (or an attempt's)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.run_id = self.path.name

    @property
    def recorded(self) -> bool:
        return (self.path / STATUS).is_file()

    def status(self) -> dict:
        """status.json (checked); {} for a run not recorded yet."""
        f = self.path / STATUS
        if not f.is_file():
            return {}
        doc = read_json(f)
        formats.check(doc, f, formats.RUN_STATUS)
        return doc

    def params(self) -> dict:
        """params.json without its format field; {} where there is none."""
        f = self.path / PARAMS
        if not f.is_file():
            return {}
        doc = read_json(f)
        return formats.run_params(doc, formats.check(doc, f, formats.RUN_PARAMS))

    def pairs(self) -> list[dict]:
        f = self.path / PAIRS
        if not f.is_file():
            return []
        pairs = read_json(f)
        if not isinstance(pairs, list):
            raise InputError(str(f), "(top level)", "expected a JSON list of pairs")
        found = min((formats.check(p, f, formats.RUN_PAIRS) for p in pairs), default=1)
        return formats.run_pairs(pairs, found)

    def transfers(self) -> dict[str, dict]:
        """sender -> its and its receiver's transfer reports (transfers/<sender>.json)."""
        return {f.stem: read_json(f) for f in sorted((self.path / TRANSFERS).glob("*.json"))}

    def series_paths(self) -> dict[str, Path]:
        """name -> its timeseries/<name>.parquet, by name."""
        return {p.stem: p for p in sorted((self.path / TIMESERIES).glob("*.parquet"))}

    def series_names(self) -> list[str]:
        return list(self.series_paths())

    def series(self, name: str):
        """The run's time series `name` (a pyarrow Table), or None when the run has none."""
        path = self.path / TIMESERIES / f"{name}.parquet"
        return read_series(path) if path.is_file() else None

    def all_series(self) -> Iterator[tuple[str, object]]:
        """(name, table) of every time series of the run, by name."""
        for name, path in self.series_paths().items():
            yield name, read_series(path)


def read_series(path: Path):
    """One time-series file, in the current format."""
    import pyarrow.parquet as pq

    table = pq.ParquetFile(path).read()  # read_table goes through datasets: 2.5x the CPU of a small file
    return formats.series(table, formats.parquet_version(table.schema.metadata, path, formats.SERIES))


def series_schema(path: Path):
    """A time-series file's schema (checked), without reading its data."""
    import pyarrow.parquet as pq

    schema = pq.read_schema(path)
    return formats.series(schema.empty_table(), formats.parquet_version(schema.metadata, path, formats.SERIES)).schema


class CampaignDir:
    """A campaign directory, read."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.runs_dir = self.root / RUNS
        self.attempts_dir = self.root / ATTEMPTS
        self.runs_table_path = self.root / RUNS_TABLE
        self.plan_path = self.root / PLAN

    def __repr__(self) -> str:
        return f"CampaignDir({self.root})"

    # -- the campaign's documents ---------------------------------------------------------

    def has(self, name: str) -> bool:
        return (self.root / name).is_file()

    def plan(self) -> dict:
        """plan.json, checked."""
        doc = read_json(self.plan_path)
        formats.check(doc, self.plan_path, formats.PLAN)
        return doc

    def plan_runs(self) -> dict[str, dict]:
        """run_id -> the run as planned (empty if there is no readable plan)."""
        try:
            runs = self.plan().get("runs", []) if self.plan_path.is_file() else []
        except (json.JSONDecodeError, AttributeError):
            runs = []
        return {r["run_id"]: r for r in runs if isinstance(r, dict) and "run_id" in r}

    def metadata(self) -> dict:
        """metadata.json; {} where there is none."""
        f = self.root / METADATA
        return read_json(f) if f.is_file() else {}

    def campaign(self) -> dict:
        """campaign.yaml as given, parsed ({} if missing or not a mapping)."""
        import yaml

        f = self.root / CAMPAIGN_FILE
        try:
            data = yaml.safe_load(f.read_text()) if f.is_file() else {}
        except yaml.YAMLError:
            data = {}
        return data if isinstance(data, dict) else {}

    def document(self, name: str) -> tuple[str, object]:
        """(text, parsed) of one of DOCUMENTS; one that cannot be parsed is an InputError, and
        plan.json's format is checked."""
        import yaml

        path = self.root / name
        text = path.read_text()
        try:
            parsed = yaml.safe_load(text) if name.endswith(".yaml") else json.loads(text)
        except (yaml.YAMLError, json.JSONDecodeError) as e:
            raise InputError(str(path), "-", f"cannot parse: {str(e).splitlines()[0]}") from None
        if name == PLAN:
            formats.check(parsed, path, formats.PLAN)
        return text, parsed

    def names(self) -> tuple[str | None, str | None]:
        """(campaign name, campaign id), from metadata.json, else plan.json."""
        for f in (self.root / METADATA, self.plan_path):
            if f.is_file():
                doc = read_json(f)
                return doc.get("campaign"), doc.get("campaign_id")
        return None, None

    # -- runs ---------------------------------------------------------------------------

    def run(self, run_id: str) -> RunDir:
        return RunDir(self.runs_dir / run_id)

    def run_dirs(self) -> list[RunDir]:
        """Every run directory under runs/, recorded or not (never a .partial-*), by run id."""
        if not self.runs_dir.is_dir():
            return []
        return [RunDir(p) for p in sorted(self.runs_dir.iterdir()) if p.is_dir() and not p.name.startswith(".")]

    def recorded_ids(self) -> list[str]:
        return [r.run_id for r in self.run_dirs() if r.recorded]

    def recorded(self) -> list[RunDir]:
        return [r for r in self.run_dirs() if r.recorded]

    def attempts(self, run_id: str | None = None) -> list[RunDir]:
        """Attempts set aside (of one run, or of all), never .partial-*."""
        if not self.attempts_dir.is_dir():
            return []
        pattern = f"{run_id}.*" if run_id else "*"
        return [RunDir(p) for p in sorted(self.attempts_dir.glob(pattern)) if not p.name.startswith(".")]

    def outcomes(self) -> list[dict]:
        """One dict per recorded run from its status.json: run_id, status, reason, started_at,
        lag_retries (0 when none), plus its params."""
        out = []
        for run in self.recorded():
            status = run.status()
            out.append({**run.params(), "run_id": run.run_id, "status": status.get("status"),
                        "reason": status.get("reason"), "started_at": status.get("started_at"),
                        "lag_retries": status.get("lag_retries") or 0})
        return out

    # -- the runs table -------------------------------------------------------------------

    def runs_table(self, columns: list[str] | None = None):
        """runs.parquet (a pyarrow Table) in the current format (rig.store.columns)."""
        import pyarrow.parquet as pq

        if not self.runs_table_path.is_file():
            raise FileNotFoundError(f"{self.root}: no {RUNS_TABLE}")
        f = pq.ParquetFile(self.runs_table_path)
        found = formats.parquet_version(f.schema_arrow.metadata, self.runs_table_path, formats.RUNS)
        return formats.runs_table(f.read(columns=columns), found)

    def runs_rows(self) -> list[dict]:
        return self.runs_table().to_pylist()

    # -- time series over runs --------------------------------------------------------------

    def series_files(self) -> dict[str, list[tuple[str, Path]]]:
        """name -> [(run_id, file)] for every time series of every recorded run, in run order."""
        out: dict[str, list[tuple[str, Path]]] = {}
        for run in self.recorded():
            for name, path in run.series_paths().items():
                out.setdefault(name, []).append((run.run_id, path))
        return dict(sorted(out.items()))

    def series_by_run(self, name: str) -> Iterator[tuple[str, object]]:
        """(run_id, table) of one time series, run by run (streamed: one run's table at a time)."""
        for run in self.recorded():
            path = run.path / TIMESERIES / f"{name}.parquet"
            if path.is_file():
                yield run.run_id, read_series(path)

    def series(self, name: str):
        """One time series over all recorded runs, a run_id column in front (empty table: none)."""
        import pyarrow as pa

        tables = [t.add_column(0, "run_id", pa.array([run_id] * t.num_rows, pa.string()))
                  for run_id, t in self.series_by_run(name)]
        return pa.concat_tables(tables, promote_options="permissive") if tables else pa.table({})
