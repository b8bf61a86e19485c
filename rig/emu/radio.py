"""Control of one ns-3 radio-network emulator process (see docs/emulator.md).

A radio network (a WiFi BSS behind its AP, the LTE cell behind the EPC, or a star of plain
links) is one real-time ns-3 process that bridges Ethernet frames between one gateway TAP and
N station TAPs. start() runs it inside a network namespace; each TAP appears, down and without
addresses, in the namespace and under the name its spec gives (netns, ifname: e.g. wlan0 in a
node's namespace), else in the emulator's own under its TAP name, and the caller addresses
them. The TAPs are non-persistent: they vanish when the process dies, however it dies.

Files in `workdir`, named after the network: <name>.json (config), <name>.lag.jsonl (one
line per second: lateness of the simulator behind the wall clock), <name>.stats.jsonl
(per-station per-second counters), <name>.stderr, <name>.pid, <name>.control (a FIFO: changes
to the pipes while it runs, rig/emu/control.py) and <name>.events.jsonl (what became of them).
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
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rig import process
from rig.emu import control
from rig.emu.build import emulator_binary
from rig.emu.control import AppliedChange, PipeChange
from rig.emu.logtail import JsonlTail
from rig.errors import RigError

ETHERNET_FRAME_BYTES = 1514
MIN_QUEUE_PACKETS = 50


@dataclass(frozen=True)
class Pipe:
    """One direction of a station's link. queue_packets None: ~1.5 x BDP, at least 50."""

    rate_bps: float
    delay_s: float
    jitter_s: float = 0.0
    loss: float = 0.0
    queue_packets: int | None = None


@dataclass(frozen=True)
class Station:
    tap: str  # <= 15 characters
    up: Pipe  # station -> gateway (kinds lte/wifi: impairment on top of the radio; Pipe(0, 0): none)
    down: Pipe  # gateway -> station
    address: str | None = None  # kind lte: the node's address on this interface, "a.b.c.d/n" (the UE's IP)
    # Where the emulator opens the TAP: the network namespace (as `ip netns` names it) and the
    # interface name there; None: in the emulator's own namespace, named `tap`. `tap` names the
    # station either way (control, stats).
    netns: str | None = None
    ifname: str | None = None


@dataclass(frozen=True)
class WifiBss:
    """kind "wifi": the BSS's PHY, named as in radio-configs/wifi/*.yaml."""

    standard: str  # g | a | n | ac
    band_ghz: float  # 2.4 | 5
    width_mhz: int  # 20 | 40 | 80
    channel: int | None = None  # primary 20 MHz channel; None: 6 (2.4 GHz) / 36 (5 GHz)
    distance_m: float = 5.0  # stations on a circle of this radius around the AP


@dataclass(frozen=True)
class LteCell:
    """kind "lte": the cell, named as in radio-configs/lte/*.yaml (band 7 FDD by default)."""

    prb: int  # 25 | 50 | 75 | 100
    sgi_address: str  # the PGW's address on the gateway TAP, "a.b.c.d/n"
    sgi_gateway: str  # the EPC namespace's address on that link: the PGW's default route
    dl_earfcn: int = 3350
    ul_earfcn: int | None = None  # None: dl_earfcn + 18000 (FDD)
    # UEs on a circle of this radius around the eNodeB. None: 2000 m x sqrt(25 / prb), which
    # gives one UE using all PRBs at 23 dBm an uplink SINR ~19 dB, MCS 20, at any bandwidth:
    # the srsRAN single-UE reference rates (docs/emulator.md).
    distance_m: float | None = None
    ue_tx_power_dbm: float = 23.0  # fixed (no uplink power control)
    cqi_period_ms: int = 40  # downlink CQI reports, as the profile's rr.conf period (ns-3's own: every 1 ms)


@dataclass(frozen=True)
class LteTtiUe:
    """kind "lte_tti": one UE's radio where it differs from the cell's (None: the cell's)."""

    ul_sinr_db: float | None = None
    dl_sinr_db: float | None = None
    ul_sinr_trace: tuple[tuple[float, float], ...] = ()  # (seconds since start, dB) steps
    dl_sinr_trace: tuple[tuple[float, float], ...] = ()


@dataclass(frozen=True)
class LteTtiCell:
    """kind "lte_tti": the TTI-scheduled LTE cell (docs/emulator.md). Defaults: calibrated to
    kind lte (scripts/calibrate_lte.py)."""

    prb: int  # as radio-configs/lte/*.yaml
    scheduler: str = "pf"  # downlink: rr | pf
    ul_scheduler: str = "rr"
    pf_whole_band: bool = True  # pf: the TTI's best UE takes every free PRB (ns-3's PF); False: what it needs
    ul_sinr_db: float = 18.8  # MCS 20 (kind lte's single-UE uplink)
    dl_sinr_db: float = 25.0  # MCS 28
    target_bler: float = 0.0  # first transmissions that fail (HARQ retransmits 8 ms later)
    max_harq_tx: int = 4
    sr_period_ms: int = 1  # scheduling request opportunities (srsRAN's rr.conf: sr_cnfg period)
    sr_to_bsr_ms: int = 7  # SR sent -> the eNodeB knows the buffer
    rlc_buffer_bytes: int = 256 * 1024
    processing_delay_s: float = 0.0
    ues: dict[str, LteTtiUe] = field(default_factory=dict)  # by station TAP


def lte_tti_config(cell: LteTtiCell) -> dict:
    """The emulator's "lte_tti" config member (per-UE entries only with what they set)."""
    config = {k: v for k, v in asdict(cell).items() if k != "ues"}
    config["ues"] = {tap: {k: v for k, v in asdict(ue).items() if v not in (None, ())} for tap, ue in cell.ues.items()}
    return config


@dataclass(frozen=True)
class RadioNetworkSpec:
    name: str
    gateway_tap: str
    stations: tuple[Station, ...]
    kind: str = "links"
    medium_rate_bps: float = 0.0  # 0: no shared medium; else one FIFO server for all frames
    seed: int = 1
    medium_queue_packets: int | None = None  # None: ~1.5 x BDP of the medium, at least 50
    lag_interval_s: float = 0.001
    # SCHED_FIFO priority of the emulator's threads (0: normal scheduling). On a busy host it
    # cuts p99 lag from several ms to well under 1 ms; see docs/emulator.md.
    realtime_priority: int = 10
    # Where the gateway's TAP is opened (as Station.netns, Station.ifname).
    gateway_netns: str | None = None
    gateway_ifname: str | None = None
    # The emulator sleeps until the next event is at most this late, so nearby events share a
    # wake-up (fewer context switches; the lag log counts the lateness). docs/emulator.md.
    wake_slack_s: float = 50e-6
    wifi: WifiBss | None = None  # required for kinds "wifi" and "dcf"
    lte: LteCell | None = None  # required for kind "lte"
    lte_tti: LteTtiCell | None = None  # required for kind "lte_tti"


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


def _queue_for(rate_bps: float, rtt_s: float) -> int:
    bdp_packets = rate_bps * rtt_s / 8 / ETHERNET_FRAME_BYTES
    return max(MIN_QUEUE_PACKETS, math.ceil(1.5 * bdp_packets))


def _pipe_config(pipe: Pipe, rtt_s: float) -> dict:
    config = asdict(pipe)
    if pipe.queue_packets is None:
        config["queue_packets"] = _queue_for(pipe.rate_bps, rtt_s)
    return config


def _wifi_channel(bss: WifiBss) -> dict:
    """ns-3 numbers a 40/80 MHz channel by its centre; profiles give the primary 20 MHz one."""
    primary = bss.channel or (6 if bss.band_ghz < 3 else 36)
    if bss.width_mhz == 20:
        return {"channel_number": primary, "primary20": 0}
    if bss.band_ghz < 3:  # HT40+: the secondary channel is above the primary
        return {"channel_number": primary + 2, "primary20": 0}
    span = bss.width_mhz // 5  # channel numbers covered
    start = 36 + (primary - 36) // span * span
    return {"channel_number": start + span // 2 - 2, "primary20": (primary - start) // 4}


def _radio_config(spec: RadioNetworkSpec) -> dict:
    if spec.kind in ("wifi", "dcf"):  # dcf: the same BSS as a per-frame DCF medium (docs/emulator.md)
        if spec.wifi is None:
            raise RigError(f"radio network {spec.name}: kind {spec.kind} needs a WifiBss (field wifi)")
        return {"wifi": {**asdict(spec.wifi), **_wifi_channel(spec.wifi)}}
    if spec.kind == "lte":
        if spec.lte is None:
            raise RigError(f"radio network {spec.name}: kind lte needs an LteCell (field lte)")
        missing = [s.tap for s in spec.stations if not s.address]
        if missing:
            raise RigError(f"radio network {spec.name}: kind lte needs an address for stations {missing}")
        cell = asdict(spec.lte)
        cell["ul_earfcn"] = spec.lte.ul_earfcn or spec.lte.dl_earfcn + 18000
        if spec.lte.distance_m is None:
            cell["distance_m"] = 2000.0 * math.sqrt(25 / spec.lte.prb)
        return {"lte": cell}
    if spec.kind == "lte_tti":
        if spec.lte_tti is None:
            raise RigError(f"radio network {spec.name}: kind lte_tti needs an LteTtiCell (field lte_tti)")
        return {"lte_tti": lte_tti_config(spec.lte_tti)}
    return {}


def _check_spec(spec: RadioNetworkSpec) -> None:
    taps = [spec.gateway_tap, *(s.tap for s in spec.stations)]
    names = [spec.gateway_ifname, *(s.ifname for s in spec.stations)]
    for tap in taps + [n for n in names if n is not None]:
        if not 1 <= len(tap) <= 15:
            raise RigError(f"radio network {spec.name}: TAP name {tap!r} must be 1-15 characters")
    if len(set(taps)) != len(taps):
        raise RigError(f"radio network {spec.name}: TAP names repeat: {taps}")
    opened = [(ns, name or tap) for ns, name, tap in
              [(spec.gateway_netns, spec.gateway_ifname, spec.gateway_tap), *((s.netns, s.ifname, s.tap) for s in spec.stations)]]
    if len(set(opened)) != len(opened):
        raise RigError(f"radio network {spec.name}: two TAPs with one name in one namespace: {opened}")
    for s in spec.stations:
        for direction, pipe in (("up", s.up), ("down", s.down)):
            if pipe.rate_bps < 0 or pipe.delay_s < 0 or pipe.jitter_s < 0 or not 0 <= pipe.loss <= 1:
                raise RigError(f"radio network {spec.name}: station {s.tap} {direction}: bad pipe {pipe}")


def _opened_in(key: str, netns: str | None, ifname: str | None) -> dict:
    """Where the emulator opens a TAP ("<key>netns": the namespace's path, "<key>ifname");
    nothing for its own namespace and the TAP's name."""
    return {**({f"{key}netns": f"/run/netns/{netns}"} if netns else {}), **({f"{key}ifname": ifname} if ifname else {})}


def emulator_config(spec: RadioNetworkSpec, workdir: Path) -> dict:
    """The JSON config the emulator reads: the spec with every default resolved."""
    _check_spec(spec)
    rtts = [s.up.delay_s + s.down.delay_s + s.up.jitter_s + s.down.jitter_s for s in spec.stations]
    medium_queue = spec.medium_queue_packets or _queue_for(spec.medium_rate_bps, max(rtts, default=0.0))
    return {
        "name": spec.name,
        "kind": spec.kind,
        "seed": spec.seed,
        "gateway_tap": spec.gateway_tap,
        **_opened_in("gateway_", spec.gateway_netns, spec.gateway_ifname),
        "lag_log": str(workdir / f"{spec.name}.lag.jsonl"),
        "stats_log": str(workdir / f"{spec.name}.stats.jsonl"),
        "control_fifo": str(workdir / f"{spec.name}.control"),
        "events_log": str(workdir / f"{spec.name}.events.jsonl"),
        "lag_interval_s": spec.lag_interval_s,
        "realtime_priority": spec.realtime_priority,
        "wake_slack_s": spec.wake_slack_s,
        "medium": {"rate_bps": spec.medium_rate_bps, "queue_packets": medium_queue},
        "stations": [
            {"tap": s.tap, "address": s.address, "up": _pipe_config(s.up, rtt), "down": _pipe_config(s.down, rtt),
             **_opened_in("", s.netns, s.ifname)}
            for s, rtt in zip(spec.stations, rtts)
        ],
        **_radio_config(spec),
    }


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
            raise RigError(f"the radio emulator is not built ({binary}); run: python -m rig.emu.build")
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
        return [
            r for r in self._stats_rows.since(since) if "station" in r and _in_window(r, since, until)
        ]

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
