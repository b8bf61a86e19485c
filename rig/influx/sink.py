"""Writes runs to InfluxDB over the v1-compatible write API (POST /write?db=..&precision=ns).

InfluxDB 1.x, 2.x (v1 compatibility) and 3.x all accept that endpoint. A run that was written
completely gets a marker, runs/<run_id>/influx.json, naming the destination (server and database,
never credentials) so that `rig sync` writes each run once per destination.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import socket
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlencode

import pyarrow.compute as pc
import pyarrow.parquet as pq

from rig.influx.config import InfluxConfig, load_config
from rig.influx.schema import SCHEMA_VERSION, campaign_info, summary_lines, timeseries_lines

log = logging.getLogger(__name__)
MARKER = "influx.json"


class SinkError(Exception):
    """The server refused or could not be reached; the message never holds credentials."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status  # the HTTP status, when the server answered


class SinkUnreachable(SinkError):
    pass


@dataclass(frozen=True)
class WriteStats:
    points: int
    summary_rows: int


class Sink:
    def __init__(self, config: InfluxConfig):
        self.config = config

    def __repr__(self) -> str:
        return f"Sink({self.config.destination})"

    # -- HTTP -------------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        c = self.config
        headers = {"Content-Type": "text/plain; charset=utf-8"}
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
        """Write line-protocol points in batches; returns how many were written."""
        batch: list[str] = []
        written = 0
        for point in lines:
            batch.append(point)
            if len(batch) >= self.config.batch_lines:
                self._write("\n".join(batch).encode())
                written += len(batch)
                batch.clear()
        if batch:
            self._write("\n".join(batch).encode())
            written += len(batch)
        return written

    def _write(self, body: bytes) -> None:
        params = {"db": self.config.db, "precision": "ns"}
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
        entry = read_marker(run_dir).get(self.config.destination)
        return bool(entry and entry.get("complete"))

    def write_run_or_raise(self, run_dir: Path, rows: list[dict] | None = None) -> WriteStats:
        run_dir = Path(run_dir)
        if rows is None:
            rows = summary_rows(run_dir)
        points = self.write_lines(timeseries_lines(run_dir))
        status = _read_json(run_dir / "status.json")
        points += self.write_lines(summary_lines(rows, campaign_info(run_dir.parent.parent),
                                                 status.get("started_at")))
        # Complete once the run has finished and its summary rows are in; until then
        # `rig sync` writes it again (same timestamps, so nothing is duplicated).
        complete = (run_dir / "status.json").is_file() and bool(rows)
        _write_marker(run_dir, self.config.destination, {
            "points": points, "summary_rows": len(rows), "complete": complete,
            "schema": SCHEMA_VERSION, "written_at": datetime.now(timezone.utc).isoformat()})
        return WriteStats(points, len(rows))

    def write_run(self, run_dir: Path, rows: list[dict] | None = None) -> bool:
        """Write one run; False (and a warning, no exception) if the server failed.

        `rows` are the run's runs.parquet rows when the caller has them at hand; by default
        they are read from the campaign's runs.parquet.
        """
        try:
            self.write_run_or_raise(run_dir, rows)
            return True
        except SinkError as e:
            log.warning("InfluxDB write of run %s failed, `rig sync` will retry: %s", Path(run_dir).name, e)
            return False


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
    path = run_dir.parent.parent / "runs.parquet"
    if not path.is_file():
        return []
    table = pq.read_table(path)
    return table.filter(pc.equal(table.column("run_id"), run_dir.name)).to_pylist()


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
