"""`rig sync`: write every finished run that the destination has not got yet.

Runs are encoded one ahead in a thread (Arrow, mostly outside the GIL), their lines packed into
POSTs of up to batch_lines points across run boundaries (a run of a few hundred points costs
influxd about as much per POST as one of 50,000), and up to `writers` POSTs are in flight at
once (influxd parses and indexes concurrent writes on all cores). Exactly once: a run is marked
written (its influx.json) only when every POST that carried its points has succeeded; after a
failure nothing more is sent, and a run some of whose points went in unmarked is written again
by the next sync, with the same timestamps, which InfluxDB overwrites.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from rig.core.errors import InputError, RigError
from rig.influx.sink import MAX_BODY_BYTES, EncodedRun, Sink, SinkError, SummaryRows, pieces, sink_from_env
from rig.store.reader import CampaignDir, RunDir


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
    return [r.path for r in _runs(campaign_dir)]


def _runs(campaign_dir: Path) -> list[RunDir]:
    campaign = CampaignDir(campaign_dir)
    if not campaign.plan_path.is_file() or not campaign.runs_dir.is_dir():
        raise InputError(str(campaign_dir), "-", "not a campaign directory (no plan.json and runs/)")
    return campaign.run_dirs()  # not .partial-*


def sync(campaign_dir: Path, sink: Sink | None = None) -> SyncResult:
    sink = sink or sink_from_env()
    if sink is None:
        raise RigError("no InfluxDB configured: set RIG_INFLUX_URL or write ~/.config/rig/influx.toml")
    result = SyncResult()
    runs = _runs(campaign_dir)
    rows = SummaryRows(campaign_dir)
    finished = [r.path for r in runs if r.recorded]
    result.unfinished = sorted(r.run_id for r in runs if not r.recorded)
    to_write = [d for d in finished if not sink.is_written(d)]
    result.already = sorted({d.name for d in finished} - {d.name for d in to_write})
    with ThreadPoolExecutor(1, thread_name_prefix="encode") as encoder:
        def encoded_runs() -> Iterator[EncodedRun]:
            ahead = None
            for run_dir in to_write:
                following = encoder.submit(sink.encode_run, run_dir, rows.get(run_dir.name))
                if ahead is not None:
                    yield ahead.result()
                ahead = following
            if ahead is not None:
                yield ahead.result()

        batches = _Batches(sink)
        try:
            for run in encoded_runs():
                if not batches.add(run):
                    break
            batches.finish()
        finally:
            batches.posts.shutdown()  # also when encoding or a marker failed: no POST left behind
    result.error = batches.error
    result.written = [d.name for d in to_write if d.name in batches.marked]
    result.points = sum(batches.marked.values())
    return result


class _Batches:
    """Packs runs' lines into POSTs and marks each run once all POSTs with its points succeeded."""

    def __init__(self, sink: Sink):
        self.sink = sink
        self.posts = ThreadPoolExecutor(sink.config.writers, thread_name_prefix="post")
        self.in_flight: dict[Future, list[str]] = {}  # POST -> the runs with points in it
        self.runs: dict[str, EncodedRun] = {}  # queued, not marked yet
        self.unacked: dict[str, int] = {}  # per run: its POSTs not acknowledged yet
        self.complete: set[str] = set()  # every line of the run is in some POST
        self.points: dict[str, int] = {}
        self.marked: dict[str, int] = {}  # run id -> points
        self.error: str | None = None
        self.body: list[bytes] = []
        self.body_runs: list[str] = []
        self.body_points = self.body_size = 0

    def add(self, run: EncodedRun) -> bool:
        """Queue a run's lines; False once a POST failed (send no more)."""
        name = run.run_dir.name
        self.runs[name], self.points[name] = run, 0
        for piece in (p for block in run.blocks for p in pieces(block)):
            if self.body_points and (self.body_points + piece.points > self.sink.config.batch_lines
                                     or self.body_size + len(piece.data) > MAX_BODY_BYTES):
                self._post()
            if self.error:
                return False
            self.body.append(piece.data)
            if name not in self.body_runs:
                self.body_runs.append(name)
            self.body_points += piece.points
            self.body_size += len(piece.data)
            self.points[name] += piece.points
        self.complete.add(name)
        self._mark_if_done(name)
        return not self.error

    def finish(self) -> None:
        """POST what is queued and wait for every POST in flight (after an error: only wait)."""
        if self.body_points and not self.error:
            self._post()
        while self.in_flight:
            self._collect()
        self.posts.shutdown()

    def _post(self) -> None:
        while len(self.in_flight) >= self.sink.config.writers:
            self._collect()
        if self.error:
            return
        for name in self.body_runs:
            self.unacked[name] = self.unacked.get(name, 0) + 1
        self.in_flight[self.posts.submit(self.sink.post, b"".join(self.body))] = self.body_runs
        self.body, self.body_runs, self.body_points, self.body_size = [], [], 0, 0

    def _collect(self) -> None:
        """Wait for at least one POST in flight; mark the runs it completed."""
        done, _ = wait(self.in_flight, return_when=FIRST_COMPLETED)
        for future in done:
            names = self.in_flight.pop(future)
            try:
                future.result()
            except SinkError as e:  # the server is down or refuses: the rest would fail the same way
                self.error = self.error or str(e)
                continue
            for name in names:
                self.unacked[name] -= 1
                self._mark_if_done(name)

    def _mark_if_done(self, name: str) -> None:
        if name in self.complete and not self.unacked.get(name) and name not in self.body_runs:
            self.sink.mark_written(self.runs.pop(name), self.points[name])
            self.marked[name] = self.points.pop(name)
            self.complete.discard(name)
            self.unacked.pop(name, None)
