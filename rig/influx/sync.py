"""`rig sync`: write every finished run that the destination has not got yet."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rig.errors import InputError, RigError
from rig.influx.sink import Sink, SinkError, sink_from_env


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
    for run_dir in run_dirs(campaign_dir):
        if not (run_dir / "status.json").is_file():
            result.unfinished.append(run_dir.name)
        elif sink.is_written(run_dir):
            result.already.append(run_dir.name)
        else:
            try:
                result.points += sink.write_run_or_raise(run_dir).points
            except SinkError as e:
                result.error = str(e)
                break  # the server is down or refuses: the rest would fail the same way
            result.written.append(run_dir.name)
    return result
