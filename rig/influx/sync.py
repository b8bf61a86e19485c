"""`rig sync`: write every finished run that the destination has not got yet."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from rig.errors import InputError, RigError
from rig.influx.sink import Sink, SinkError, campaign_summary_rows, sink_from_env


@dataclass
class SyncResult:
    written: list[str] = field(default_factory=list)  # run ids written now
    already: list[str] = field(default_factory=list)  # had a complete marker for this destination
    unfinished: list[str] = field(default_factory=list)  # no status.json yet: still running
    points: int = 0
    error: str | None = None  # why the sync stopped early (server down, refused)

    @property
    def ok(self) -> bool:
        return self.error is None


def run_dirs(campaign_dir: Path) -> list[Path]:
    runs = Path(campaign_dir) / "runs"
    if not (Path(campaign_dir) / "plan.json").is_file() or not runs.is_dir():
        raise InputError(str(campaign_dir), "-", "not a campaign directory (no plan.json and runs/)")
    return sorted(p for p in runs.iterdir() if p.is_dir() and not p.name.startswith("."))  # not .partial-*


def sync(campaign_dir: Path, sink: Sink | None = None) -> SyncResult:
    sink = sink or sink_from_env()
    if sink is None:
        raise RigError("no InfluxDB configured: set RIG_INFLUX_URL or write ~/.config/rig/influx.toml")
    result = SyncResult()
    dirs = run_dirs(campaign_dir)
    rows = campaign_summary_rows(campaign_dir)
    finished = {d for d in dirs if (d / "status.json").is_file()}
    to_write = [d for d in dirs if d in finished and not sink.is_written(d)]
    # One run is encoded (Arrow, mostly outside the GIL) while the one before it is sent and
    # influxd takes it in; a run is marked written only once all of it is in.
    with ThreadPoolExecutor(1, thread_name_prefix="encode") as encoder:
        ahead = iter(to_write)
        next_run = next(ahead, None)
        pending = encoder.submit(sink.encode_run, next_run, rows.get(next_run.name, [])) if next_run else None
        for run_dir in dirs:
            if run_dir not in finished:
                result.unfinished.append(run_dir.name)
                continue
            if run_dir != next_run:
                result.already.append(run_dir.name)
                continue
            encoded = pending.result()
            next_run = next(ahead, None)
            pending = encoder.submit(sink.encode_run, next_run, rows.get(next_run.name, [])) if next_run else None
            try:
                result.points += sink.send_run(encoded).points
            except SinkError as e:
                result.error = str(e)
                break  # the server is down or refuses: the rest would fail the same way
            result.written.append(run_dir.name)
        if pending is not None:
            pending.cancel()
    return result
