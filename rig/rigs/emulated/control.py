"""Changes to a running radio emulator's station pipes at given wall-clock instants.

The emulator reads commands (one JSON object a line) from the FIFO `<name>.control` in its
workdir and writes what became of each to `<name>.events.jsonl`: "scheduled" (or "error") when
it read the command, "applied" with the actual time when the change took effect. RadioProcess
.schedule() and .applied() (rig/rigs/emulated/radio.py) are the API; docs/emulator.md, "Changing links
during a run".
"""

from __future__ import annotations

import errno
import json
import math
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from rig.model.traces import load_trace
from rig.core.errors import RigError

DIRECTIONS = ("up", "down", "both")
STATES = ("up", "down")


@dataclass(frozen=True)
class PipeChange:
    """One change to one station's pipe(s), due at unix time `at`. Fields left None keep their
    value. state "down" cuts the pipe (every frame dropped, also those queued or in flight);
    "up" restores it. trace: a Mahimahi trace file the rate follows from `at` on (replaces
    rate_bps until a later change sets rate_bps)."""

    at: float
    tap: str
    direction: str = "both"  # up (station -> gateway) | down | both
    rate_bps: float | None = None
    delay_s: float | None = None
    jitter_s: float | None = None
    loss: float | None = None
    queue_packets: int | None = None
    state: str | None = None  # "down" | "up"
    trace: Path | None = None


@dataclass(frozen=True)
class AppliedChange:
    """A change as the emulator applied it: planned and actual unix times, and what it set."""

    id: str
    planned: float
    actual: float
    tap: str
    direction: str
    values: dict  # the fields the change set: rate_bps, delay_s, jitter_s, loss, queue_packets, state, trace

    @property
    def lateness_s(self) -> float:
        return self.actual - self.planned


def check_change(change: PipeChange, network: str, taps: set[str]) -> None:
    """RigError naming the network and the problem for a change the emulator would refuse."""
    where = f"radio network {network}: change at {change.at} on {change.tap}"
    if change.tap not in taps:
        raise RigError(f"{where}: no such station TAP (have {sorted(taps)})")
    if change.direction not in DIRECTIONS:
        raise RigError(f"{where}: direction must be one of {DIRECTIONS}, not {change.direction!r}")
    if change.state is not None and change.state not in STATES:
        raise RigError(f"{where}: state must be one of {STATES}, not {change.state!r}")
    for field in ("rate_bps", "delay_s", "jitter_s"):
        value = getattr(change, field)
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise RigError(f"{where}: {field} must be >= 0, not {value}")
    if change.loss is not None and not 0 <= change.loss <= 1:
        raise RigError(f"{where}: loss must be in [0, 1], not {change.loss}")
    if change.queue_packets is not None and change.queue_packets < 1:
        raise RigError(f"{where}: queue_packets must be >= 1, not {change.queue_packets}")
    if change.trace is not None and change.rate_bps is not None:
        raise RigError(f"{where}: give rate_bps or trace, not both")
    if not math.isfinite(change.at):
        raise RigError(f"{where}: the time is not a number")


def command(change: PipeChange, change_id: str, trace_copy: Path | None) -> dict:
    """The JSON object the emulator reads (None fields left out)."""
    cmd = {"id": change_id, "at": change.at, "tap": change.tap, "direction": change.direction}
    for field in ("rate_bps", "delay_s", "jitter_s", "loss", "queue_packets", "state"):
        if getattr(change, field) is not None:
            cmd[field] = getattr(change, field)
    if trace_copy is not None:
        cmd["trace"] = str(trace_copy)
    return cmd


def send(fifo: Path, events_log: Path, workdir: Path, network: str, changes: list[PipeChange],
         timeout_s: float = 5.0) -> list[str]:
    """Sends changes (already checked) and waits until the emulator scheduled every one.

    Traces are parsed here (InputError for a bad file) and handed over as a normalised copy in
    the workdir, so the emulator reads a plain list of integers. Returns the changes' ids.
    """
    lines, ids = [], []
    for change in changes:
        change_id = uuid.uuid4().hex[:12]
        copy = None
        if change.trace is not None:
            trace = load_trace(change.trace)
            copy = workdir / f"{network}.trace-{change_id}"
            copy.write_text(trace.normalized_text())
        lines.append(json.dumps(command(change, change_id, copy)) + "\n")
        ids.append(change_id)
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        if e.errno in (errno.ENXIO, errno.ENOENT):
            raise RigError(f"radio network {network} is not running (no reader on {fifo})") from None
        raise
    try:
        os.set_blocking(fd, True)
        for line in lines:  # each line is far below PIPE_BUF: written whole, never interleaved
            os.write(fd, line.encode())
    finally:
        os.close(fd)
    _wait_scheduled(events_log, network, set(ids), timeout_s)
    return ids


def _wait_scheduled(events_log: Path, network: str, ids: set[str], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    waiting = set(ids)
    while waiting:
        for row in read_events(events_log):
            if row.get("id") in waiting and row.get("status") in ("scheduled", "error"):
                if row["status"] == "error":
                    raise RigError(f"radio network {network} refused a change: {row.get('error')}")
                waiting.discard(row["id"])
        if waiting and time.monotonic() > deadline:
            raise RigError(f"radio network {network} did not take {len(waiting)} change(s) within {timeout_s} s")
        if waiting:
            time.sleep(0.005)


def read_events(events_log: Path) -> list[dict]:
    if not events_log.exists():
        return []
    rows = []
    for line in events_log.read_text(errors="replace").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut short by a kill
    return rows


def applied(events_log: Path, since: float, until: float) -> list[AppliedChange]:
    """Changes applied with an actual time in [since, until], in the order they took effect."""
    out = []
    for row in read_events(events_log):
        if row.get("status") != "applied" or not since <= row["actual"] <= until:
            continue
        values = {k: v for k, v in row.items()
                  if k not in ("id", "status", "planned", "actual", "late_ms", "tap", "direction")}
        out.append(AppliedChange(row["id"], row["planned"], row["actual"], row["tap"], row["direction"], values))
    return sorted(out, key=lambda c: c.actual)
