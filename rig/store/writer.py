"""The run store: a campaign directory on disk, the source of truth for everything recorded.

    results/<campaign>-<id>/
      campaign.yaml  plan.json  metadata.json
      runs/<run_id>/ params.json status.json pairs.json transfers/<sender>.json timeseries/*.parquet logs/
      runs.parquet          one row per (run, pair)
      attempts/<run_id>.<n>/  earlier attempts of a run, discarded because the emulator lagged

Every write is atomic: a run is assembled in runs/.partial-<run_id>/ and renamed into place
only when complete, and files are written to a temporary name and renamed. So a killed
campaign leaves either a whole run or none, and `--resume` only has to look at what exists.
plan.json and each status.json carry their format version (rig.store.formats).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from rig.store import formats
from rig.model.spec import Run

if TYPE_CHECKING:  # the store writes a plan it is given; planning is the campaign's
    from rig.campaign.plan import Plan

RUNS_COLUMNS = [
    ("run_id", pa.string()), ("campaign", pa.string()), ("campaign_id", pa.string()), ("setup", pa.string()), ("homing", pa.string()),
    ("cc", pa.string()), ("connections", pa.int32()), ("volume_bytes", pa.int64()), ("rcvbuf_bytes", pa.int64()),
    ("wifi_standard", pa.string()), ("repetition", pa.int32()), ("pair", pa.int32()), ("sender", pa.string()),
    ("receiver", pa.string()), ("started_at", pa.timestamp("us", tz="UTC")), ("duration_s", pa.float64()),
    ("goodput_bps", pa.float64()), ("bytes_lte", pa.int64()), ("bytes_wifi", pa.int64()),
    ("status", pa.string()), ("reason", pa.string()), ("bytes_sent", pa.int64()), ("bytes_received", pa.int64()),
    ("retrans_segs", pa.int64()), ("reinjections", pa.int64()), ("lag_retries", pa.int32()),
    ("fct_s", pa.float64()), ("first_byte_at", pa.timestamp("us", tz="UTC")), ("last_byte_at", pa.timestamp("us", tz="UTC")),
    ("backup", pa.string()), ("policy", pa.string()),
    ("subflows", pa.int32()), ("join_s", pa.float64()), ("mp_join_syn_tx", pa.int64()),
    ("mp_join_synack_rx", pa.int64()), ("add_addr_rx", pa.int64()),
]
RUNS_SCHEMA = pa.schema(RUNS_COLUMNS)


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
        self.runs_dir = self.root / "runs"
        self.attempts_dir = self.root / "attempts"
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
        staging = root.with_name(f".{root.name}.creating")
        (staging / "runs").mkdir(parents=True)
        write_atomic(staging / "campaign.yaml", campaign_text)
        campaign_id = root.name.removeprefix(plan.campaign.name + "-")
        write_json(staging / "plan.json", {**plan.to_dict(), "campaign_id": campaign_id, "format": formats.PLAN})
        write_json(staging / "metadata.json", {**metadata, "campaign": plan.campaign.name, "campaign_id": campaign_id})
        os.rename(staging, root)
        return cls(root)

    @classmethod
    def find_resumable(cls, out: Path, plan: Plan) -> "CampaignStore | None":
        """The newest unfinished campaign directory under `out` with the same plan. A plan.json or
        a run's status.json in a format this rig cannot read is refused (InputError) before
        anything is written."""
        candidates = sorted(Path(out).glob(f"{plan.campaign.name}-*/plan.json"), key=lambda p: p.parent.name, reverse=True)
        for plan_file in candidates:
            store = cls(plan_file.parent)
            try:
                saved = json.loads(plan_file.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            formats.check(saved, plan_file, formats.PLAN)
            if saved.get("digest") == plan.digest and len(store.finished_ids()) < len(plan.runs):
                store.rows()  # reads every recorded run's status.json now, checking its format
                return store
        return None

    @cached_property
    def names(self) -> tuple[str, str]:
        """(campaign name, campaign id) as recorded in plan.json: read once per store (a 100,000-run
        plan.json is 33 MB, and every run recorded needs the names)."""
        plan = json.loads((self.root / "plan.json").read_text())
        return plan["campaign"], plan["campaign_id"]

    # -- runs --------------------------------------------------------------------------

    def finished_ids(self) -> set[str]:
        if not self.runs_dir.is_dir():
            return set()
        return {d.name for d in self.runs_dir.iterdir() if not d.name.startswith(".") and (d / "status.json").is_file()}

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
            self._rows += self._run_rows(rec.run.run_id)
        return final

    def attempts(self, run_id: str) -> int:
        """How many earlier attempts of this run were set aside (write_attempt)."""
        return len(list(self.attempts_dir.glob(f"{run_id}.*"))) if self.attempts_dir.is_dir() else 0

    def write_attempt(self, rec: RunRecord) -> Path:
        """Keep an attempt that will be run again, as a whole run directory outside runs/, so it
        is evidence on disk but never part of the runs table or an export."""
        self.attempts_dir.mkdir(exist_ok=True)
        final = self.attempts_dir / f"{rec.run.run_id}.{self.attempts(rec.run.run_id) + 1}"
        self._assemble(rec, self.attempts_dir / f".partial-{final.name}", final)
        return final

    def _assemble(self, rec: RunRecord, part: Path, final: Path) -> None:
        shutil.rmtree(part, ignore_errors=True)
        (part / "transfers").mkdir(parents=True)
        (part / "timeseries").mkdir()
        (part / "logs").mkdir()
        campaign, campaign_id = self.names
        write_json(part / "params.json", {**rec.run.to_dict(), "campaign": campaign, "campaign_id": campaign_id})
        for host, doc in rec.transfers.items():
            write_json(part / "transfers" / f"{host}.json", doc, indent=None)  # the biggest: every interval and sample
        for name, table in rec.timeseries.items():
            pq.write_table(table, part / "timeseries" / f"{name}.parquet", compression="zstd")
        for name, text in rec.logs.items():
            write_atomic(part / "logs" / name, text)
        write_json(part / "pairs.json", rec.pairs)
        # status.json last: its presence is what marks the run as recorded.
        write_json(
            part / "status.json",
            {"status": rec.status, "reason": rec.reason, "started_at": rec.started_at, "finished_at": rec.finished_at, **rec.details,
             "format": formats.RUN_STATUS},
        )
        os.rename(part, final)

    # -- the runs table -------------------------------------------------------------------

    def rows(self) -> list[dict]:
        if self._rows is None:
            self._rows = [row for run_id in sorted(self.finished_ids()) for row in self._run_rows(run_id)]
        return self._rows

    def _run_rows(self, run_id: str) -> list[dict]:
        campaign, campaign_id = self.names
        d = self.runs_dir / run_id
        params = json.loads((d / "params.json").read_text())
        status = json.loads((d / "status.json").read_text())
        formats.check(status, d / "status.json", formats.RUN_STATUS)
        lag_retries = status.get("lag_retries")
        out = []
        for p in json.loads((d / "pairs.json").read_text()):
            out.append(
                {
                    "run_id": run_id, "campaign": campaign, "campaign_id": campaign_id, "setup": params["setup"], "homing": params["homing"],
                    "cc": params["cc"], "connections": params["connections"], "volume_bytes": params["volume_bytes"],
                    "rcvbuf_bytes": params["rcvbuf_bytes"], "wifi_standard": params["wifi_standard"],
                    "repetition": params["repetition"], "pair": p["pair"], "sender": p["sender"],
                    "receiver": p["receiver"], "started_at": datetime.fromisoformat(p["started_at"]) if p.get("started_at") else None,
                    "duration_s": p.get("duration_s"), "goodput_bps": p.get("goodput_bps"),
                    "bytes_lte": p.get("bytes_lte"), "bytes_wifi": p.get("bytes_wifi"),
                    "status": p["status"], "reason": p.get("reason"),
                    "bytes_sent": p.get("bytes_sent"), "bytes_received": p.get("bytes_received"),
                    "retrans_segs": p.get("retrans_segs"), "reinjections": p.get("reinjections"),
                    "lag_retries": lag_retries, "fct_s": p.get("fct_s"),
                    "first_byte_at": datetime.fromisoformat(p["first_byte_at"]) if p.get("first_byte_at") else None,
                    "last_byte_at": datetime.fromisoformat(p["last_byte_at"]) if p.get("last_byte_at") else None,
                    "backup": params.get("backup", "none"), "policy": params.get("policy", "none"),
                    **{k: p.get(k) for k in ("subflows", "join_s", "mp_join_syn_tx", "mp_join_synack_rx", "add_addr_rx")},
                }
            )
        return out

    def write_runs_table(self) -> Path:
        table = pa.Table.from_pylist(self.rows(), schema=RUNS_SCHEMA)
        path = self.root / "runs.parquet"
        tmp = path.with_name(f".runs.parquet.tmp{os.getpid()}")
        pq.write_table(table, tmp)
        os.replace(tmp, path)
        return path
