"""Running a campaign: plan, bring the rig up, execute the runs in order, record each one.

Resuming is built on the run store's atomicity: a run is either fully recorded or absent, so
`--resume` re-plans from the same file, checks the plan is the same, and runs what is absent.
SIGTERM and Ctrl-C stop between two writes: the run in flight is discarded and redone later.

A lost component (a node agent or its SSH session, a radio emulator, a rebooted node) fails the
run in progress, which is recorded with the reason and its kind (rig.store.failures: what the rig
failed, --resume runs again); the rig is restored before the next run, and what cannot be
restored stops the campaign resumably (docs/campaigns.md).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rig.store import provenance
from rig.model.campaign import Campaign, load_campaign
from rig.campaign.plan import Plan, Run, expand
from rig.campaign.shards import Shard, shard_runs
from rig.model.block import BlockSettings, block_settings
from rig.rigs import Backend
from rig.influx import sink_from_env
from rig.core.progress import Progress
from rig.core.errors import DISK_FULL, RigError, one_line
from rig.agents.client import AgentLost
from rig.store import failures
from rig.run.execute import RunContext, RunSettings, execute_run
from rig.store.columns import STATUSES
from rig.store.writer import CampaignStore, RunRecord, utc_now

# The same kind of fault (rig.store.failures) again right after the rig was restored, this many
# runs in a row: something restoring cannot fix.
MAX_FAULTS_IN_A_ROW = 3
# runs.parquet is rebuilt from every run's rows: ~8 ms at 18 runs, ~70 ms at 1,000. It is written
# at most this often during a campaign, and always at its end (also when stopped or failing);
# runs/ stays the truth, and --resume rewrites the table from it first.
RUNS_TABLE_EVERY_S = 30.0
# A run's storing waits this long past the next run's T0: its senders have started by then.
STORE_AFTER_T0_S = 0.05


class _Recorder:
    """Stores each finished run while the next one transfers. A run's record is held in memory
    until the next run's sources have started (its T0 plus STORE_AFTER_T0_S), and written then,
    instead of in the runner's path between two runs. Nothing of it runs before that T0, so the
    senders' start is not disturbed; the radio emulators run at real-time priority, above any
    storing, so their lag is not either. flush() writes what is held at once: when the next run
    fails before its launch, and always before the campaign ends (also on an error, Ctrl-C or
    SIGTERM). A SIGKILL loses at most the held run, which --resume runs again."""

    def __init__(self, store: CampaignStore, sink):
        self.store, self.sink = store, sink
        self.held: RunRecord | None = None
        self.table_at = time.monotonic()

    def hold(self, record: RunRecord) -> None:
        self.flush()
        self.held = record

    def flush(self) -> None:
        record = self.held
        if record is None:
            return
        self.store.write_run(record)
        self.held = None
        if time.monotonic() - self.table_at >= RUNS_TABLE_EVERY_S:
            self.store.write_runs_table()
            self.table_at = time.monotonic()
        if self.sink is not None:  # the run just written, from memory: nothing is read back
            self.sink.write_record(self.store, record)

    def flush_after(self, t0: float) -> None:
        """flush() once the run that has this T0 is under way (called within that run); a failure
        to write is left for the flush() after the run (it is not the run's own failure)."""
        if self.held is None:
            return
        time.sleep(max(0.0, t0 + STORE_AFTER_T0_S - time.time()))
        try:
            self.flush()
        except Exception:  # noqa: BLE001 - raised again by the next flush(), outside the run
            pass


class Stopped(Exception):
    """SIGTERM/SIGINT arrived: stop after cleaning up; the campaign can be resumed."""


@dataclass
class CampaignResult:
    store: CampaignStore
    ran: int
    skipped: int
    counts: dict[str, int]
    wall_s: float
    transfer_s: float
    start_spreads_ms: list[float]
    lag_retries: int = 0  # attempts set aside because the emulator lagged, and run again


def _sink():
    try:
        return sink_from_env()
    except Exception:  # noqa: BLE001 - a broken sink configuration must not stop a campaign
        return None


class _SignalGuard:
    """Turns SIGTERM into Stopped in the main thread, like Ctrl-C."""

    def __enter__(self):
        def stop(signum, frame):
            raise Stopped(signal.Signals(signum).name)

        self._old = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
        return self

    def __exit__(self, *exc):
        for s, h in self._old.items():
            signal.signal(s, h)


def prepare(file: Path, out: Path, resume: bool, backend: Backend, plan: Plan | None = None, shard: Shard | None = None,
            host_name: str | None = None, rerun_lagged: bool = False) -> tuple[Campaign, Plan, tuple[Run, ...], CampaignStore, str]:
    """Validate everything and create (or find) the campaign directory; nothing is written on bad
    input. `plan`: the file's, if the caller has expanded it already (it is not parsed again).
    `shard`: run only its runs (rig.campaign.shards), in a directory of its own (metadata.json
    names the shard; plan.json is the whole plan). Returns the runs this directory is for."""
    plan = plan or expand(load_campaign(file), str(file))
    runs = shard_runs(plan, shard) if shard else plan.runs
    campaign = plan.campaign
    backend.check(campaign, str(file))
    label = str(shard) if shard else None
    store = CampaignStore.find_resumable(out, plan, label, {r.run_id for r in runs}, rerun_lagged) if resume else None
    note = f"resuming {store.root}" if store else ""
    if store is None:
        metadata = {**provenance.collect(backend.name), "started_at": utc_now()}
        if host_name:
            metadata["host"] = host_name
        if shard:
            metadata.update(shard=label, shard_runs=len(runs))
        store = CampaignStore.create(out, plan, Path(file).read_text(), metadata)
        note = f"new campaign {store.root}" + (" (nothing to resume)" if resume else "")
    return campaign, plan, runs, store, note


def run_campaign(file: Path, out: Path, backend: Backend, resume: bool = False, progress: Progress | None = None,
                 plan: Plan | None = None, shard: Shard | None = None, host_name: str | None = None,
                 rerun_lagged: bool = False) -> CampaignResult:
    """Run (or resume) the campaign in `file` on `backend` (rig.rigs.backends); `plan`: the file's,
    when the caller has expanded it already; `shard`: only that shard's runs; `host_name`: the
    name metadata.json records for this host (default: its hostname); `rerun_lagged`: a resume
    also runs again the runs an emulator's lag alone made invalid, each with its lag retries afresh."""
    campaign, plan, runs, store, note = prepare(file, out, resume, backend, plan, shard, host_name, rerun_lagged)
    resume_hint = f"rig campaign run {file} --out {out}{f' --shard {shard}' if shard else ''} --resume"
    with _disk_full_named(store.root, resume_hint):
        discarded = store.discard_partial()
        lagged = {r.run_id for r in store.dir.recorded() if failures.lagged(r.status())} if rerun_lagged else set()
        rerun = store.set_aside_rig_faults(rerun_lagged)
        finished = store.finished_ids()
        todo = [r for r in runs if r.run_id not in finished]
        progress = progress or Progress(len(runs), done=len(runs) - len(todo))
        progress.note(note + (f"; redoing interrupted run {', '.join(discarded)}" if discarded else "")
                      + (f"; running again what the rig's faults failed: {', '.join(sorted(set(rerun) - lagged))}"
                         if set(rerun) - lagged else "")
                      + (f"; running again {len(lagged)} runs an emulator's lag made invalid" if lagged else ""))
        planned = f"{len(runs)} runs in shard {shard} of {len(plan.runs)}" if shard else f"{len(runs)} runs planned"
        progress.note(f"{planned}, {len(runs) - len(todo)} already recorded, {len(todo)} to run")

        t_start, transfer, retried, counts = time.monotonic(), 0.0, 0, dict.fromkeys(STATUSES, 0)
        spreads: list[float] = []
        recorder = _Recorder(store, _sink())
        if finished:  # a campaign killed before its table caught up: runs/ has every recorded run
            store.write_runs_table()
        run_settings = RunSettings(campaign.limits, tuple(campaign.events), campaign.loss_aware, campaign.tcp,
                                   campaign.paths.manager)
        try:
            with _SignalGuard():
                ctx: RunContext | None = None
                block_key = None
                fault: str | None = None  # why the last run failed with a lost component, until restored
                faults_in_a_row, fault_kind = 0, None
                for i, run in enumerate(todo):
                    lost = backend.lost() if ctx is not None else []  # a poll per process: no round trip
                    if run.radio_key != block_key or lost or fault:
                        settings = block_settings(campaign, run)
                        if ctx is None:  # bringing the rig up: a failure here is reported at once
                            progress.note(f"configuring Setup {run.setup}, WiFi {run.wifi_standard}")
                            ctx = backend.block(settings, run_settings)
                        else:
                            why = f"{', '.join(lost)} lost" if lost else fault
                            progress.note(f"restoring the rig ({why})" if why
                                          else f"configuring Setup {run.setup}, WiFi {run.wifi_standard}")
                            # A new context: its T0 lead is learnt anew (the block's first release
                            # round runs beside radio emulators just started).
                            ctx = _restore(backend, settings, run_settings, progress, resume_hint, restoring=bool(why))
                        block_key, fault = run.radio_key, None
                    assert ctx is not None
                    following = todo[i + 1] if i + 1 < len(todo) else None
                    next_run = following if following is not None and following.radio_key == run.radio_key else None
                    started, t_run = utc_now(), time.monotonic()
                    kept_before = store.lagged_attempts(run.run_id)
                    try:
                        record, retried_s = _one_run(ctx, run, next_run, progress, store, campaign.limits.lag_retries,
                                                     kept_before if run.run_id in lagged else 0,
                                                     recorder.flush_after)
                    except (RigError, OSError) as e:  # a component was lost mid-run: the run failed, the night goes on
                        if isinstance(e, OSError) and e.errno in DISK_FULL:
                            raise  # the results' disk, not the rig: nothing to restore
                        record, retried_s = _failed_record(ctx, run, e, started, store), 0.0
                        progress.finished(run.run_id, f"failed - {record.reason}", time.monotonic() - t_run)
                    # A part lost during the transfer is in the record (what the other nodes took kept).
                    kind = record.details.get("failure")
                    fault = record.reason if failures.restores(kind) else None
                    faults_in_a_row = 0 if not fault else faults_in_a_row + 1 if kind == fault_kind else 1
                    fault_kind = kind if fault else None
                    recorder.hold(record)  # written during the next run's transfer (or at the end)
                    counts[record.status] += 1
                    transfer += (record.details.get("transfer_s") or 0.0) + retried_s
                    retried += record.details["lag_retries"] - kept_before  # this session's
                    if record.details.get("start_spread_ms") is not None:
                        spreads.append(record.details["start_spread_ms"])
                    if faults_in_a_row >= MAX_FAULTS_IN_A_ROW:
                        raise RigError(f"{faults_in_a_row} runs in a row failed although the rig was restored before each "
                                       f"(last: {fault}); stopped. The recorded runs are kept; continue with: {resume_hint}")
                    if record.status in ("failed", "stalled") and fault is None:  # its programs were stopped
                        ctx.assume_nothing()
        finally:
            with ThreadPoolExecutor(max_workers=1) as pool:
                closed = pool.submit(backend.close)  # the rig comes down while the last run is stored
                try:
                    recorder.flush()
                    if store.rows():  # every recorded run, also when the campaign stops early
                        store.write_runs_table()
                finally:
                    closed.result()
        return CampaignResult(store, len(todo), len(runs) - len(todo), counts, time.monotonic() - t_start, transfer, spreads,
                              retried)


@contextlib.contextmanager
def _disk_full_named(root: Path, resume_hint: str):
    """A write that finds the results' disk full: one line naming the campaign directory. Runs
    are written whole, so every one recorded before is kept and the one being written is not."""
    try:
        yield
    except OSError as e:
        if e.errno not in DISK_FULL:
            raise
        raise RigError(f"{root}: {os.strerror(e.errno)}; the runs recorded so far are kept: free space, then "
                       f"{resume_hint}") from None


def _restore(backend: Backend, settings: BlockSettings, run_settings: RunSettings, progress: Progress, resume_hint: str,
             restoring: bool) -> RunContext:
    """The block's context after a lost component (or for the next block): lost agents restarted,
    dead emulators restarted, every node configured again. Tried again after each of the
    backend's waits; when all tries fail the campaign stops, resumably."""
    delays = backend.restore_delays_s
    for attempt, delay in enumerate([0.0, *delays], start=1):
        if delay:
            time.sleep(delay)
        try:
            t = time.monotonic()
            ctx = backend.restore(settings, run_settings)
            if restoring or attempt > 1:
                progress.note(f"restored in {time.monotonic() - t:.1f} s (try {attempt})")
            return ctx
        except (RigError, OSError) as e:
            error = e
            progress.note(f"restoring failed (try {attempt} of {len(delays) + 1}): {e}")
    raise RigError(f"the rig could not be restored after {len(delays) + 1} tries ({error}); stopped. "
                   f"The recorded runs are kept; continue with: {resume_hint}")


def _failed_record(ctx: RunContext, run: Run, error: Exception, started: str, store: CampaignStore) -> RunRecord:
    """The run in progress when a component was lost outside its transfer (configuring, launching):
    recorded as failed, with the reason, one row per pair like any run (nothing was measured yet).
    The reason is one line; an error of several lines is whole in the run's logs/rig-error.txt."""
    reason = one_line(error)
    pairs = [{"pair": p.index, "sender": p.sender, "receiver": p.receiver, "status": "failed", "reason": reason}
             for p in ctx.topo.pairs]
    kind = "agent_lost" if isinstance(error, AgentLost) else "rig_error"
    return RunRecord(run=run, status="failed", reason=reason, started_at=started, finished_at=utc_now(), pairs=pairs,
                     details={"failure": kind, "lag_retries": store.lagged_attempts(run.run_id)},
                     logs={"rig-error.txt": str(error)} if reason != str(error) else {})


def _one_run(ctx: RunContext, run: Run, next_run: Run | None, progress: Progress, store: CampaignStore, lag_retries: int,
             spent: int = 0, during: Callable[[float], None] | None = None):
    """One run, run again while only the emulator's lag spoiled it (up to `lag_retries` times
    beyond the `spent` lagged attempts kept before that do not count: a lagged run resumed with
    --rerun-lagged starts afresh, one killed between attempts does not):
    the record to keep, and the transfer seconds of the attempts set aside. `during(t0)` is called
    within its (first) transfer."""
    progress.starting(run.run_id)
    t = time.monotonic()
    record, retried_s = execute_run(ctx, run, next_run, during), 0.0
    while record.details.get("lagged") and store.lagged_attempts(run.run_id) - spent < lag_retries:
        kept = store.write_attempt(record)
        retried_s += record.details.get("transfer_s") or 0.0
        progress.note(f"{run.run_id}: {record.reason}; running it again (attempt kept as {kept.parent.name}/{kept.name})")
        record = execute_run(ctx, run, next_run)
    record.details["lag_retries"] = store.lagged_attempts(run.run_id)
    outcome = record.status if not record.reason else f"{record.status} - {record.reason}"
    progress.finished(run.run_id, outcome, time.monotonic() - t)
    return record, retried_s
