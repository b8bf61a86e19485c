"""Writes runs to InfluxDB over the v1-compatible write API (POST /write?db=..&precision=ns).

InfluxDB 1.x, 2.x (v1 compatibility) and 3.x all accept that endpoint. A run that was written
completely gets a marker, runs/<run_id>/influx.json, naming the destination (server and database,
never credentials) so that `rig sync` writes each run once per destination.

The campaign runner hands over each run the store has just written from memory (write_record:
its record and runs rows, nothing read back from disk); `rig sync` reads the run store through
rig.store.reader (encode_run, SummaryRows).
"""

from __future__ import annotations

import base64
import gzip
import itertools
import json
import logging
import os
import socket
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlencode

import pyarrow as pa
import pyarrow.compute as pc

from rig.influx.config import InfluxConfig, load_config
from rig.influx.columns import Block
from rig.influx.schema import SCHEMA_VERSION, run_context, series_blocks, status_line, summary_lines
from rig.store.columns import run_rows
from rig.store.reader import CampaignDir, RunDir

if TYPE_CHECKING:
    from rig.store.writer import CampaignStore, RunRecord

log = logging.getLogger(__name__)
MARKER = "influx.json"
# influxd 1.x refuses a body over 25 MB ([http] max-body-size); batch_lines points of a wide
# time series could pass that, so a POST also stops at this size.
MAX_BODY_BYTES = 10_000_000


class SinkError(Exception):
    """The server refused or could not be reached; the message never holds credentials."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status  # the HTTP status, when the server answered


class SinkUnreachable(SinkError):
    pass


@dataclass(frozen=True)
class EncodedRun:
    run_dir: Path
    blocks: tuple[Block, ...]  # its time series, then its summary points
    summary_rows: int
    recorded: bool = True  # the run store has recorded the run (its status.json is there)


@dataclass(frozen=True)
class WriteStats:
    points: int
    summary_rows: int


class Sink:
    def __init__(self, config: InfluxConfig):
        self.config = config
        self._planned: dict[Path, int] = {}  # campaign directory -> runs in its plan, read once

    def __repr__(self) -> str:
        return f"Sink({self.config.destination})"

    # -- HTTP -------------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        c = self.config
        headers = {"Content-Type": "text/plain; charset=utf-8"}
        if self.config.gzip:
            headers["Content-Encoding"] = "gzip"
        if c.token is not None:
            headers["Authorization"] = "Token " + c.token.get_secret_value()
        elif c.user:
            pw = c.password.get_secret_value() if c.password else ""
            headers["Authorization"] = "Basic " + base64.b64encode(f"{c.user}:{pw}".encode()).decode()
        return headers

    def _request(self, path: str, params: dict, body: bytes | None = None) -> bytes:
        url = f"{self.config.url}{path}?{urlencode(params)}"
        req = urllib.request.Request(url, data=body, headers=self._headers(),
                                     method="POST" if body is not None else "GET")
        try:
            with urllib.request.urlopen(req, timeout=self.config.timeout_s) as resp:
                return resp.read()
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace").strip()[:300]
            raise SinkError(f"{self.config.destination}: HTTP {e.code}: {detail}", e.code) from None
        except (urllib.error.URLError, socket.timeout, ConnectionError) as e:
            reason = getattr(e, "reason", e)
            raise SinkUnreachable(f"{self.config.destination}: unreachable: {reason}") from None

    def ping(self) -> bool:
        try:
            self._request("/ping", {})
            return True
        except SinkError:
            return False

    def write_lines(self, lines: Iterable[str]) -> int:
        """Write line-protocol points (one string each) in batches; returns how many were written."""
        def blocks() -> Iterator[Block]:
            points = iter(lines)
            while batch := list(itertools.islice(points, self.config.batch_lines)):
                yield Block("".join(p + "\n" for p in batch).encode(), len(batch))

        return self.write_blocks(blocks())

    def write_blocks(self, blocks: Iterable[Block]) -> int:
        """Write blocks of lines, POSTing up to batch_lines points and MAX_BODY_BYTES at a time;
        returns how many points were written."""
        batch: list[bytes] = []
        pending = size = written = 0
        for block in (piece for b in blocks for piece in pieces(b)):
            if pending and (pending + block.points > self.config.batch_lines or size + len(block.data) > MAX_BODY_BYTES):
                self.post(b"".join(batch))
                written += pending
                batch, pending, size = [], 0, 0
            batch.append(block.data)
            pending += block.points
            size += len(block.data)
        if pending:
            self.post(b"".join(batch))
            written += pending
        return written

    def post(self, body: bytes) -> None:
        """POST complete lines (at most batch_lines points and MAX_BODY_BYTES: see write_blocks)."""
        params = {"db": self.config.db, "precision": "ns"}
        if self.config.gzip:
            body = gzip.compress(body, compresslevel=1)
        try:
            self._request("/write", params, body)
        except SinkError as e:
            if e.status != 404:  # 404: no such database (1.x) or bucket/mapping (2.x, 3.x)
                raise
            self.create_database(e)
            self._request("/write", params, body)

    def create_database(self, missing: SinkError | None = None) -> None:
        """CREATE DATABASE (InfluxDB 1.x; a no-op if it exists). Where the server cannot or may not
        (2.x/3.x, a user without admin rights), the error says how to create it by hand."""
        db = self.config.db.replace("\\", "\\\\").replace('"', '\\"')
        try:
            answer = json.loads(self._request("/query", {"q": f'CREATE DATABASE "{db}"'}, b"") or b"{}")
            refused = next((r["error"] for r in answer.get("results", []) if r.get("error")), None)
        except SinkUnreachable:
            raise
        except (SinkError, ValueError) as e:
            refused = str(e)
        if refused:
            raise SinkError(missing_database_help(self.config, str(missing or ""), refused), 404)
        log.warning("InfluxDB database %r did not exist on %s: created it", self.config.db, self.config.url)

    def query(self, q: str) -> dict:
        """An InfluxQL query (1.x /query API), for tests and `rig influx status`."""
        return json.loads(self._request("/query", {"db": self.config.db, "q": q}))

    # -- runs -------------------------------------------------------------------------------

    def is_written(self, run_dir: Path) -> bool:
        """Written completely, in this schema (a run written in an older one is written again:
        its points are overwritten and what the newer schema adds joins them)."""
        entry = read_marker(run_dir).get(self.config.destination)
        return bool(entry and entry.get("complete") and entry.get("schema") == SCHEMA_VERSION)

    def planned_runs(self, campaign: CampaignDir) -> int:
        if campaign.root not in self._planned:
            self._planned[campaign.root] = len(campaign.plan_runs())
        return self._planned[campaign.root]

    def encode_run(self, run_dir: Path, rows: list[dict] | None = None) -> EncodedRun:
        """A recorded run's points, read from the run store, as the blocks send_run POSTs (no HTTP
        here: `rig sync` encodes the next run while this one is sent). `rows`: the run's
        runs.parquet rows, when the caller has them at hand."""
        run = RunDir(run_dir)
        campaign = CampaignDir(run.path.parent.parent)
        if rows is None:
            rows = summary_rows(run.path)
        return self.encode(run.path, campaign.names(), run.params(), run.status(), run.all_series(),
                           rows, self.planned_runs(campaign), run.recorded)

    def encode_record(self, store: CampaignStore, record: RunRecord) -> EncodedRun:
        """The run the store has just written, from its record in memory."""
        params, status, pairs = store.record_docs(record)
        rows = run_rows(record.run.run_id, store.names, params, status, pairs)
        return self.encode(store.runs_dir / record.run.run_id, store.names, params, status,
                           sorted(record.timeseries.items()), rows, store.planned_runs, True)

    def encode(self, run_dir: Path, campaign: tuple[str | None, str | None], params: dict, status: dict,
               series: Iterable[tuple[str, pa.Table]], rows: list[dict], planned_runs: int | None,
               recorded: bool) -> EncodedRun:
        tags, ids = run_context(Path(run_dir).name, params, campaign)
        blocks = list(series_blocks(series, tags, ids, self.config.batch_lines))
        summary = list(summary_lines(rows, campaign, status.get("started_at")))
        if point := status_line(status, tags, ids, planned_runs):
            summary.append(point)
        for start in range(0, len(summary), self.config.batch_lines):
            batch = summary[start:start + self.config.batch_lines]
            blocks.append(Block("".join(p + "\n" for p in batch).encode(), len(batch)))
        return EncodedRun(Path(run_dir), tuple(blocks), len(rows), recorded)

    def send_run(self, run: EncodedRun) -> WriteStats:
        """POST an encoded run; once all of it is in, mark the run written to this destination."""
        return self.mark_written(run, self.write_blocks(run.blocks))

    def mark_written(self, run: EncodedRun, points: int) -> WriteStats:
        """Record that all of `run` is in: call only once every POST that carried its points succeeded."""
        # Complete once the run has finished and its summary rows are in; until then
        # `rig sync` writes it again (same timestamps, so nothing is duplicated).
        complete = run.recorded and run.summary_rows > 0
        _write_marker(run.run_dir, self.config.destination, {
            "points": points, "summary_rows": run.summary_rows, "complete": complete,
            "schema": SCHEMA_VERSION, "written_at": datetime.now(timezone.utc).isoformat()})
        return WriteStats(points, run.summary_rows)

    def write_run_or_raise(self, run_dir: Path, rows: list[dict] | None = None) -> WriteStats:
        return self.send_run(self.encode_run(run_dir, rows))

    def write_run(self, run_dir: Path, rows: list[dict] | None = None) -> bool:
        """Write one recorded run read from the run store; False (and a warning, no exception) if
        the server failed.

        `rows` are the run's runs.parquet rows when the caller has them at hand; by default
        they are read from the campaign's runs.parquet.
        """
        return self._write(Path(run_dir).name, lambda: self.encode_run(run_dir, rows))

    def write_record(self, store: CampaignStore, record: RunRecord) -> bool:
        """Write the run `store` has just written, from memory (the campaign runner's live write);
        False (and a warning) if the server failed."""
        return self._write(record.run.run_id, lambda: self.encode_record(store, record))

    def _write(self, run_id: str, encode) -> bool:
        try:
            self.send_run(encode())
            return True
        except SinkError as e:
            log.warning("InfluxDB write of run %s failed, `rig sync` will retry: %s", run_id, e)
            return False


def pieces(block: Block, max_bytes: int = MAX_BODY_BYTES) -> Iterator[Block]:
    """The block, cut at line ends into pieces of at most max_bytes (a longer line goes alone)."""
    data, start = block.data, 0
    if len(data) <= max_bytes:
        yield block
        return
    while start < len(data):
        end = data.rfind(b"\n", start, start + max_bytes) + 1
        if end <= start:
            end = data.index(b"\n", start) + 1
        piece = data[start:end]
        yield Block(piece, piece.count(b"\n"))
        start = end


def missing_database_help(config: InfluxConfig, write_error: str, create_error: str) -> str:
    """One line: the database is missing, creating it failed, and how to create it by hand."""
    db = config.db
    return (f"{config.destination}: database {db!r} does not exist and could not be created "
            f"({create_error.strip()[:200]}; the write said: {write_error.split(': ', 1)[-1][:200]}). Create it: "
            f"InfluxDB 1.x: influx -host HOST -execute 'CREATE DATABASE \"{db}\"' (as an admin user); InfluxDB 2.x: influx bucket create -n {db}, then "
            f"influx v1 dbrp create --db {db} --rp autogen --bucket-id BUCKET_ID --default; InfluxDB 3.x: "
            f"influxdb3 create database {db}")


def summary_rows(run_dir: Path) -> list[dict]:
    """The run's rows of the campaign's runs.parquet (empty if it does not list the run yet)."""
    campaign = CampaignDir(Path(run_dir).parent.parent)
    if not campaign.runs_table_path.is_file():
        return []
    table = campaign.runs_table()
    return table.filter(pc.equal(table.column("run_id"), Path(run_dir).name)).to_pylist()


class SummaryRows:
    """summary_rows of every run from one read of the campaign's runs.parquet, each run's rows
    made Python dicts only when asked for (a 100,000-run campaign has 500,000 rows: as dicts
    all at once, 1.3 GB)."""

    def __init__(self, campaign_dir: Path):
        campaign = CampaignDir(campaign_dir)
        self.table = campaign.runs_table().sort_by("run_id") if campaign.runs_table_path.is_file() else None
        self.span: dict[str, tuple[int, int]] = {}  # run id -> (first row, rows), rows sorted by run id
        if self.table is not None:
            for i, run_id in enumerate(self.table.column("run_id").to_pylist()):
                first, count = self.span.get(run_id, (i, 0))
                self.span[run_id] = (first, count + 1)

    def get(self, run_id: str) -> list[dict]:
        if run_id not in self.span or self.table is None:
            return []
        return self.table.slice(*self.span[run_id]).to_pylist()


def read_marker(run_dir: Path) -> dict:
    return _read_json(Path(run_dir) / MARKER)


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def _write_marker(run_dir: Path, destination: str, entry: dict) -> None:
    marker = read_marker(run_dir)
    marker[destination] = entry
    tmp = run_dir / (MARKER + ".tmp")
    tmp.write_text(json.dumps(marker, indent=2) + "\n")
    os.replace(tmp, run_dir / MARKER)


def sink_from_env() -> Sink | None:
    """The configured sink, or None when InfluxDB is not configured."""
    config = load_config()
    return Sink(config) if config else None
