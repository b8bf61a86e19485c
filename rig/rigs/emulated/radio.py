"""Control of one ns-3 radio-network emulator process (see docs/emulator.md); what it runs, the
network's spec and config, is rig/rigs/emulated/radiospec.py.

A radio network (a WiFi BSS behind its AP, the LTE cell behind the EPC, or a star of plain
links) is one real-time ns-3 process that bridges Ethernet frames between one gateway TAP and
N station TAPs. start() runs it inside a network namespace; each TAP appears, down and without
addresses, in the namespace and under the name its spec gives (netns, ifname: e.g. wlan0 in a
node's namespace), else in the emulator's own under its TAP name, and the caller addresses
them. The TAPs are non-persistent: they vanish when the process dies, however it dies.

Files in `workdir`, named after the network: <name>.json (config), <name>.lag.jsonl (one
line per second: lateness of the simulator behind the wall clock), <name>.stats.jsonl
(per-station per-second counters), <name>.stderr, <name>.pid, <name>.control (a FIFO: changes
to the pipes while it runs, rig/rigs/emulated/control.py) and <name>.events.jsonl (what became of them).
"""

from __future__ import annotations

import json
import math
import os
import select
import signal
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from rig.core import process
from rig.rigs.emulated import control
from rig.rigs.emulated.build import emulator_binary
from rig.rigs.emulated.control import AppliedChange, PipeChange
from rig.rigs.emulated.radiospec import RadioNetworkSpec, emulator_config
from rig.core.errors import RigError
from rig.core.repo import node_package

node_package()
from rig_node.jsonltail import JsonlTail  # noqa: E402 - the agent's, which reads the same logs


@dataclass(frozen=True)
class LagStats:
    samples: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    # Why it lagged: the longest stretch the emulator ran events back to back without going idle
    # (long: the model could not keep up; short yet late: the host did not schedule it), and the
    # cores it used (mean over the run's windows, weighted by their samples; includes the kernel's
    # work on the frames it writes).
    busy_max_ms: float = math.nan
    cpu: float = math.nan


def _process_start_time(pid: int) -> int | None:
    """Start time (clock ticks since boot) of a live, not yet reaped-or-zombie process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else int(fields[19])


def _read_jsonl(path: Path, tail_bytes: int | None = None) -> list[dict]:
    """The rows of a JSON-lines log; with tail_bytes only those in its last that many bytes."""
    if not path.exists():
        return []
    with open(path, "rb") as f:
        if tail_bytes is not None:
            f.seek(max(0, f.seek(0, os.SEEK_END) - tail_bytes))
        text = f.read().decode(errors="replace")
    rows = []
    for line in text.splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut short by a kill
    return rows


def _in_window(row: dict, since: float, until: float) -> bool:
    """A row covers [row["since"], row["t"]] (lag rows; a second if absent, as stats rows and
    older logs); keep it if that overlaps [since, until]."""
    return row["t"] > since and row.get("since", row["t"] - 1.0) < until


class RadioProcess:
    """One emulator process; a context manager (start on enter, stop on exit).

    Constructing it for a network started elsewhere (e.g. by an earlier `rig emu up`) gives
    access to its logs and, through the pid file, to alive() and stop().
    """

    def __init__(self, spec: RadioNetworkSpec, netns: str, workdir: Path):
        self.spec = spec
        self.netns = netns
        self.workdir = Path(workdir)
        self.pid: int | None = None
        self._proc: subprocess.Popen | None = None
        base = self.workdir / spec.name
        self.config_path = base.with_suffix(".json")
        self.lag_log = Path(f"{base}.lag.jsonl")
        self.stats_log = Path(f"{base}.stats.jsonl")
        self._lag_rows, self._stats_rows = JsonlTail(self.lag_log), JsonlTail(self.stats_log)
        self.stderr_path = Path(f"{base}.stderr")
        self.pid_path = Path(f"{base}.pid")
        self.control_fifo = Path(f"{base}.control")
        self.events_log = Path(f"{base}.events.jsonl")
        self._adopt_pid_file()

    def __enter__(self) -> RadioProcess:
        if not self.alive():  # entering an already started process just scopes its lifetime
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self, timeout_s: float = 20.0) -> None:
        self.spawn()
        self.wait_ready(timeout_s)

    def spawn(self) -> None:
        """Start the process without waiting for it (wait_ready): several start side by side."""
        if self.alive():
            raise RigError(f"radio network {self.spec.name} is already running (pid {self.pid})")
        # RIG_RADIO_EMULATOR: another build of the emulator (A/B measurements, docs/emulator.md).
        binary = Path(os.environ.get("RIG_RADIO_EMULATOR") or emulator_binary())
        if not binary.exists():
            raise RigError(f"the radio emulator is not built ({binary}); run: python -m rig.rigs.emulated.build")
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = emulator_config(self.spec, self.workdir)
        for log in (self.lag_log, self.stats_log, self.events_log):
            log.unlink(missing_ok=True)
        self.config_path.write_text(json.dumps(config, indent=1))
        with open(self.stderr_path, "w") as stderr:
            self._proc = subprocess.Popen(
                ["ip", "netns", "exec", self.netns, str(binary), "--config", str(self.config_path)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
                start_new_session=True,  # a Ctrl-C meant for the caller does not reach it
            )
        self.pid = self._proc.pid  # `ip netns exec` execs the emulator: same pid
        self.pid_path.write_text(f"{self.pid} {_process_start_time(self.pid)}\n")

    def wait_ready(self, timeout_s: float = 20.0) -> None:
        """Until the spawned emulator has opened its TAPs (READY); RigError, and stopped, if not."""
        if not self._wait_ready(timeout_s):
            self.stop()
            raise RigError(f"radio network {self.spec.name} did not start: {self._stderr_tail()}")

    def _wait_ready(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        out = self._proc.stdout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([out], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            line = out.readline()
            if not line:  # EOF: the process died
                return False
            if line.strip() == b"READY":
                out.close()
                return True
        return False

    def _stderr_tail(self) -> str:
        try:
            text = self.stderr_path.read_text().strip()
        except OSError:
            text = ""
        return text[-2000:] or "(no output)"

    def _adopt_pid_file(self) -> None:
        """Finds a process started for this network by another RadioProcess (another CLI call).

        The pid file holds "PID STARTTIME"; the start time tells a reused pid apart.
        """
        try:
            pid, started = (int(x) for x in self.pid_path.read_text().split())
        except (OSError, ValueError):
            return
        if _process_start_time(pid) == started:
            self.pid = pid

    def alive(self) -> bool:
        if self._proc is not None:
            return self._proc.poll() is None
        if self.pid is None:
            return False
        try:
            started = int(self.pid_path.read_text().split()[1])
        except (OSError, ValueError, IndexError):
            return False
        return _process_start_time(self.pid) == started

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 5 s. Idempotent; the TAPs are gone when it returns."""
        if self.pid is not None and self.alive():
            process.terminate([self._proc if self._proc is not None else self.pid], grace_s=5.0)
        if self._proc is not None:
            self._proc.wait()
            if self._proc.stdout and not self._proc.stdout.closed:
                self._proc.stdout.close()
        self.pid_path.unlink(missing_ok=True)
        self.pid = None

    def ask_to_stop(self) -> None:
        """SIGTERM without waiting: its TAPs go away meanwhile; stop() (or stop_all) then waits."""
        if self.pid is not None and self.alive():
            self._signal(signal.SIGTERM)

    def _signal(self, sig: int) -> None:
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            pass

    def lag(self, since: float, until: float) -> LagStats:
        """Lateness over the per-second windows overlapping [since, until] (unix times).

        p50 is the median of the per-second medians; p99 and max are the largest per-second
        values (conservative). No samples: samples=0 and NaNs.
        """
        rows = [r for r in self._lag_rows.since(since) if _in_window(r, since, until)]
        if not rows:
            return LagStats(0, math.nan, math.nan, math.nan)
        return LagStats(
            samples=sum(r["n"] for r in rows),
            p50_ms=statistics.median(r["p50_ms"] for r in rows),
            p99_ms=max(r["p99_ms"] for r in rows),
            max_ms=max(r["max_ms"] for r in rows),
            busy_max_ms=max(r.get("busy_max_ms", math.nan) for r in rows),
            cpu=sum(r.get("cpu", math.nan) * r["n"] for r in rows) / sum(r["n"] for r in rows),
        )

    def flush_lag(self) -> None:
        """Ask the emulator to write the lag of the second in progress now (SIGUSR1); then
        wait_lag(until) returns once it is in the log. A run that just ended has its lag
        measured to its end without waiting up to a second."""
        if self.pid is not None and self.alive():
            self._signal(signal.SIGUSR1)

    def wait_lag(self, until: float, timeout_s: float = 1.5) -> None:
        """Wait until the lag log covers `until` (a line written at or after it), or time out."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.alive():
            rows = _read_jsonl(self.lag_log, tail_bytes=4096)
            if rows and rows[-1]["t"] >= until - 0.001:  # the log's times are rounded to the us
                return
            time.sleep(0.001)  # the emulator answers flush_lag within its 1 ms poll

    def station_stats(self, since: float, until: float) -> list[dict]:
        """Per-station per-second rows (keys: t, station, up_*/down_* frames, bytes,
        queue_drops, loss_drops, queue) for the seconds overlapping [since, until]."""
        return [r for r in self._stats(since, until) if "station" in r]

    def network_stats(self, since: float, until: float) -> list[dict]:
        """The network's own per-second rows, for the seconds overlapping [since, until]: the
        shared medium's (medium_* frames, bytes, queue_drops, loss_drops, queue), a DCF AP's
        (busy_share, ap_* counters)."""
        return [r for r in self._stats(since, until) if "station" not in r]

    def _stats(self, since: float, until: float) -> list[dict]:
        return [r for r in self._stats_rows.since(since) if _in_window(r, since, until)]

    def schedule(self, changes: list[PipeChange]) -> list[str]:
        """Hands changes to the running emulator; each takes effect at its `at` (unix time; a
        time already past: at once). Returns once the emulator has scheduled them all, with
        their ids (AppliedChange.id). Checks every change first and sends none if one is bad:
        RigError (unknown TAP, bad value), InputError (a trace file that does not parse)."""
        taps = {s.tap for s in self.spec.stations}
        for change in changes:
            control.check_change(change, self.spec.name, taps)
        if not self.alive():
            raise RigError(f"radio network {self.spec.name} is not running")
        return control.send(self.control_fifo, self.events_log, self.workdir, self.spec.name, list(changes))

    def applied(self, since: float = 0.0, until: float = math.inf) -> list[AppliedChange]:
        """The changes that took effect in [since, until] (unix times), with planned and actual
        times, in the order they took effect."""
        return control.applied(self.events_log, since, until)


def stop_all(procs: list[RadioProcess], grace_s: float = 5.0) -> None:
    """stop() for several emulators at once: asked side by side, each waited for as it exits (its
    TAPs take the kernel a few ms each to remove) instead of in turns of a fixed poll interval;
    what is left after grace_s gets stop()'s SIGKILL."""
    procs = list(procs)
    for proc in procs:
        proc.ask_to_stop()
    deadline = time.monotonic() + grace_s
    for proc in procs:
        if proc._proc is not None:
            try:
                proc._proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
    for proc in procs:
        proc.stop()
