"""The run store: a campaign directory on disk, the source of truth for everything recorded.

    results/<campaign>-<id>/
      campaign.yaml  plan.json  metadata.json
      runs/<run_id>/ params.json status.json pairs.json transfers/<sender>.json timeseries/*.parquet logs/
      runs.parquet          one row per (run, pair)
      attempts/<run_id>.<n>/  earlier attempts of a run, discarded because the emulator lagged

Every write is atomic: a run is assembled in runs/.partial-<run_id>/ and renamed into place
only when complete, and files are written to a temporary name and renamed. So a killed
campaign leaves either a whole run or none, and `--resume` only has to look at what exists.
Every file read back carries its format version (rig.store.formats); what reads a campaign
directory back, this store's resume included, reads it through rig.store.reader.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pyarrow as pa
import pyarrow.parquet as pq

from rig.store import formats
from rig.store.columns import RUNS_SCHEMA, run_rows, runs_table
from rig.store.reader import (ATTEMPTS, LOGS, METADATA, PAIRS, PARAMS, PLAN, RUNS, RUNS_TABLE, STATUS, TIMESERIES,
                              TRANSFERS, CAMPAIGN_FILE, CampaignDir, RunDir)
from rig.core.errors import InputError
from rig.model.campaign import Campaign, differing_setting, parse_campaign
from rig.model.spec import Run
from rig.store import failures

if TYPE_CHECKING:  # the store writes a plan it is given; planning is the campaign's
    from rig.campaign.plan import Plan

# runs.parquet's columns are defined once, in rig.store.columns (RUNS_SCHEMA carries the format).
__all__ = ["RECORD", "RUNS_SCHEMA", "CampaignStore", "RunRecord", "utc_now", "write_atomic", "write_json"]
# What the store records of a run (what others add later, e.g. rig sync's influx.json, is not).
RECORD = (PARAMS, STATUS, PAIRS, TRANSFERS, TIMESERIES, LOGS)


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write `data` to `path` so that readers see the old file or the new one, never a part."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_json(path: Path, obj: object, indent: int | None = 2) -> None:
    """indent None: one line, by json's C encoder (an indented dump is pure Python, ~5 times slower)."""
    write_atomic(path, json.dumps(obj, indent=indent, sort_keys=True, default=str) + "\n")


@dataclass
class RunRecord:
    """Everything one run produced, handed to the store in one piece."""

    run: Run
    status: str  # ok | failed | invalid
    reason: str | None
    started_at: str
    finished_at: str
    pairs: list[dict]  # per pair: pair, sender, receiver, started_at, duration_s, goodput_bps, bytes_lte, bytes_wifi, status, reason
    details: dict = field(default_factory=dict)  # start spread, lag, subflow CCs ... (goes to status.json)
    transfers: dict[str, dict] = field(default_factory=dict)  # sender -> its and its receiver's transfer reports
    timeseries: dict[str, pa.Table] = field(default_factory=dict)  # name -> table
    logs: dict[str, str] = field(default_factory=dict)


class CampaignStore:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.dir = CampaignDir(self.root)  # what the store reads back, it reads through the reader
        self.runs_dir = self.root / RUNS
        self.attempts_dir = self.root / ATTEMPTS
        self._rows: list[dict] | None = None  # runs.parquet's rows, read from disk once

    # -- creation and discovery ---------------------------------------------------------

    @classmethod
    def create(cls, out: Path, plan: Plan, campaign_text: str, metadata: dict) -> "CampaignStore":
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        root = Path(out) / f"{plan.campaign.name}-{stamp}"
        suffix = 1
        while root.exists():  # two campaigns started in the same second
            suffix += 1
            root = Path(out) / f"{plan.campaign.name}-{stamp}-{suffix}"
        campaign_id = root.name.removeprefix(plan.campaign.name + "-")
        return cls.assemble(root, campaign_text, {**plan.to_dict(), "campaign_id": campaign_id},
                            {**metadata, "campaign": plan.campaign.name, "campaign_id": campaign_id})

    @classmethod
    def assemble(cls, root: Path, campaign_text: str, plan: dict, metadata: dict,
                 fill: Callable[["CampaignStore"], None] | None = None) -> "CampaignStore":
        """A new campaign directory at `root` with its documents (`plan`: plan.json's fields) and
        what `fill` puts in it (a merge links runs in: link_run, write_table), assembled beside
        `root` and renamed into place whole; nothing is left when anything fails."""
        staging = root.with_name(f".{root.name}.creating")
        (staging / RUNS).mkdir(parents=True)
        try:
            write_atomic(staging / CAMPAIGN_FILE, campaign_text)
            write_json(staging / PLAN, {**plan, "format": formats.PLAN})
            write_json(staging / METADATA, metadata)
            if fill is not None:
                fill(cls(staging))
            os.rename(staging, root)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return cls(root)

    @classmethod
    def find_resumable(cls, out: Path, plan: Plan, shard: str | None = None,
                       run_ids: set[str] | None = None, lagged: bool = False) -> "CampaignStore | None":
        """The newest unfinished campaign directory under `out` with the same plan and the same
        shard (metadata.json's `shard`; None: the whole campaign), unfinished meaning that some of
        `run_ids` (default: the plan's) are not recorded, or that the rig's faults failed one
        (set_aside_rig_faults; with `lagged`, or an emulator's lag alone). A plan.json or a run's status.json in a format this rig cannot
        read is refused (InputError) before anything is written, and so is a directory to resume
        whose campaign.yaml differs from the plan's campaign in a setting (its runs would mix two)."""
        wanted = run_ids if run_ids is not None else {r.run_id for r in plan.runs}
        candidates = sorted(Path(out).glob(f"{plan.campaign.name}-*/{PLAN}"), key=lambda p: p.parent.name, reverse=True)
        for plan_file in candidates:
            store = cls(plan_file.parent)
            try:
                saved = store.dir.plan()
                its_shard = store.dir.metadata().get("shard")
            except (OSError, json.JSONDecodeError, AttributeError):
                continue
            if saved.get("digest") != plan.digest or its_shard != shard:
                continue
            store.rows()  # reads every recorded run's status.json now, checking its format
            if not wanted <= store.finished_ids() or store.rig_faults(lagged):
                store._check_settings(plan.campaign)
                return store
        return None

    def _check_settings(self, campaign: Campaign) -> None:
        """The plan's digest covers its runs; the campaign's other settings (impairments, radios,
        the loss-aware policy ...) must be those the directory ran with too. Its description may
        differ."""
        path = str(self.root / CAMPAIGN_FILE)
        changed = differing_setting(parse_campaign(self.dir.document(CAMPAIGN_FILE)[0], path), campaign)
        if changed is not None:
            raise InputError(path, changed, "differs from the campaign file's: --resume continues a campaign with the "
                                            "settings it began with (run without --resume for a new directory)")

    @cached_property
    def _plan_head(self) -> tuple[str, str, int]:
        """(campaign name, campaign id, runs planned) as recorded in plan.json: read once per store
        (a 100,000-run plan.json is 33 MB, and every run recorded needs the names)."""
        plan = self.dir.plan()
        return plan["campaign"], plan["campaign_id"], len(plan.get("runs", []))

    @property
    def names(self) -> tuple[str, str]:
        return self._plan_head[:2]

    @property
    def planned_runs(self) -> int:
        return self._plan_head[2]

    # -- runs --------------------------------------------------------------------------

    def finished_ids(self) -> set[str]:
        return set(self.dir.recorded_ids())

    def discard_partial(self) -> list[str]:
        """Remove runs a crash left half-assembled; they are redone."""
        gone = []
        for d in [*self.runs_dir.glob(".partial-*"), *self.attempts_dir.glob(".partial-*")]:
            shutil.rmtree(d, ignore_errors=True)
            gone.append(d.name.removeprefix(".partial-"))
        return gone

    def write_run(self, rec: RunRecord) -> Path:
        final = self.runs_dir / rec.run.run_id
        if final.exists():
            raise FileExistsError(f"run {rec.run.run_id} is already recorded")
        self._assemble(rec, self.runs_dir / f".partial-{rec.run.run_id}", final)
        if self._rows is not None:
            self._rows += self.record_rows(rec)
        return final

    def record_docs(self, rec: RunRecord) -> tuple[dict, dict, list[dict]]:
        """(params, status, pairs) of a run from its record in memory, as the reader gives them
        from its files (the values go through JSON as the files do)."""
        params, status, pairs = json.loads(json.dumps([self._params(rec), self._status(rec), self._pairs(rec)],
                                                      sort_keys=True, default=str))
        return formats.run_params(params, 1), status, formats.run_pairs(pairs, 1)

    def record_rows(self, rec: RunRecord) -> list[dict]:
        """The runs.parquet rows of a run, from its record in memory: the same as from its files."""
        return run_rows(rec.run.run_id, self.names, *self.record_docs(rec))

    def attempts(self, run_id: str) -> int:
        """How many earlier attempts of this run were set aside (write_attempt, set_aside_rig_faults)."""
        return len(self.dir.attempts(run_id))

    def lagged_attempts(self, run_id: str) -> int:
        """How many of them were set aside because the emulator lagged."""
        return sum(1 for a in self.dir.attempts(run_id) if a.status().get("lagged"))

    def rig_faults(self, lagged: bool = False) -> list[RunDir]:
        """Recorded runs that failed by the rig's fault (rig.store.failures: their `failure` kind);
        with `lagged`, also those invalid only because an emulator lagged (failures.lagged)."""
        return [run for run in self.dir.recorded()
                if failures.rigs(run.status()) or (lagged and failures.lagged(run.status()))]

    def set_aside_rig_faults(self, lagged: bool = False) -> list[str]:
        """The rig_faults (with `lagged`, the lagged runs too), moved to attempts/ like a lagged
        attempt: they say nothing of the network, and are run again."""
        moved = []
        for run in self.rig_faults(lagged):
            self.attempts_dir.mkdir(exist_ok=True)
            os.rename(run.path, self.attempts_dir / f"{run.run_id}.{self.attempts(run.run_id) + 1}")
            moved.append(run.run_id)
        if moved:
            self._rows = None
        return moved

    def write_attempt(self, rec: RunRecord) -> Path:
        """Keep an attempt that will be run again, as a whole run directory outside runs/, so it
        is evidence on disk but never part of the runs table or an export."""
        self.attempts_dir.mkdir(exist_ok=True)
        final = self.attempts_dir / f"{rec.run.run_id}.{self.attempts(rec.run.run_id) + 1}"
        self._assemble(rec, self.attempts_dir / f".partial-{final.name}", final)
        return final

    def link_run(self, src: Path, attempt: bool = False) -> Path:
        """Another campaign directory's recorded run (or attempt) `src` as one of this one's, by its
        record's files (RECORD): hard links, since the store replaces files and never rewrites
        one in place; copies across filesystems."""
        parent = self.attempts_dir if attempt else self.runs_dir
        parent.mkdir(exist_ok=True)
        final = parent / src.name
        final.mkdir()
        for name in RECORD:
            p = src / name
            if p.is_dir():
                (final / name).mkdir()
                with os.scandir(p) as entries:
                    for e in entries:
                        if e.is_file():
                            _link(Path(e.path), final / name / e.name)
            elif p.is_file():
                _link(p, final / name)
        return final

    def _assemble(self, rec: RunRecord, part: Path, final: Path) -> None:
        shutil.rmtree(part, ignore_errors=True)
        (part / TRANSFERS).mkdir(parents=True)
        (part / TIMESERIES).mkdir()
        (part / LOGS).mkdir()
        write_json(part / PARAMS, self._params(rec))
        for host, doc in rec.transfers.items():
            write_json(part / TRANSFERS / f"{host}.json", doc, indent=None)  # the biggest: every interval and sample
        for name, table in rec.timeseries.items():
            versioned = table.replace_schema_metadata({**(table.schema.metadata or {}), formats.KEY: formats.SERIES})
            pq.write_table(versioned, part / TIMESERIES / f"{name}.parquet", compression="zstd")
        for name, text in rec.logs.items():
            write_atomic(part / LOGS / name, text)
        write_json(part / PAIRS, self._pairs(rec))
        # status.json last: its presence is what marks the run as recorded.
        write_json(part / STATUS, self._status(rec))
        os.rename(part, final)

    def _params(self, rec: RunRecord) -> dict:
        campaign, campaign_id = self.names
        return {**rec.run.to_dict(), "campaign": campaign, "campaign_id": campaign_id, formats.KEY: formats.RUN_PARAMS}

    @staticmethod
    def _pairs(rec: RunRecord) -> list[dict]:
        return [formats.with_format(p, formats.RUN_PAIRS) for p in rec.pairs]

    @staticmethod
    def _status(rec: RunRecord) -> dict:
        return {"status": rec.status, "reason": rec.reason, "started_at": rec.started_at, "finished_at": rec.finished_at,
                **rec.details, formats.KEY: formats.RUN_STATUS}

    # -- the runs table -------------------------------------------------------------------

    def rows(self) -> list[dict]:
        if self._rows is None:
            self._rows = [row for run_id in sorted(self.finished_ids()) for row in self._run_rows(run_id)]
        return self._rows

    def _run_rows(self, run_id: str) -> list[dict]:
        run = self.dir.run(run_id)
        return run_rows(run_id, self.names, run.params(), run.status(), run.pairs())

    def write_runs_table(self) -> Path:
        return self.write_table(runs_table(self.rows()))

    def write_table(self, table: pa.Table) -> Path:
        """runs.parquet, atomically: `table` has RUNS_SCHEMA."""
        path = self.root / RUNS_TABLE
        tmp = path.with_name(f".{RUNS_TABLE}.tmp{os.getpid()}")
        pq.write_table(table, tmp)
        os.replace(tmp, path)
        return path


def _link(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError as e:
        if e.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK):
            raise
        shutil.copy2(src, dst)
