"""The emulated rig's radio emulators as a run sees them (rig.run.radios.Radios): their lag,
liveness and per-station metrics, and the events they act out on a sender's link (a cut, an
impairment step, a rate trace) as changes to its station's pipe."""

from __future__ import annotations

import math
import threading
import time

import pyarrow as pa

from rig.core.hostcpu import cpu_ticks, steal_share
from rig.model.traces import trace_path
from rig.rigs.emulated.control import PipeChange
from rig.rigs.emulated.emulated_rig import station_tap
from rig.rigs.emulated.radio import RadioProcess
from rig.run.timeline import Planned


def _finite(stats: dict) -> dict:
    """A window with no lag samples has no percentiles: null, not NaN, in the JSON."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in stats.items()}


def pipe_change(item: Planned, tap: str) -> PipeChange:
    e = item.event
    if e.kind == "state":
        return PipeChange(item.at, tap, "both", state=e.state)
    if e.kind == "trace":
        return PipeChange(item.at, tap, e.direction, trace=trace_path(e.trace))
    return PipeChange(item.at, tap, e.direction, rate_bps=e.rate_bps,
                      delay_s=None if e.delay_ms is None else e.delay_ms / 1e3,
                      jitter_s=None if e.jitter_ms is None else e.jitter_ms / 1e3,
                      loss=None if e.loss_pct is None else e.loss_pct / 100)


class EmulatedRadios:
    """`processes`: network -> its running RadioProcess; `stations`: station TAP -> (host,
    interface); `hops`: what the block put on each hop (EmulatedRig.hops)."""

    def __init__(self, processes: dict[str, RadioProcess], stations: dict, hops: list[dict]):
        self.processes, self.stations, self.hops = dict(processes), dict(stations), hops
        self._changed: dict[str, set[str]] = {}  # network -> TAPs the scheduled events change
        self._ticks: list[tuple[float, int, int]] = []  # (unix time, stolen, total) at each lag flush

    def acts(self, item: Planned) -> bool:
        return True  # every event acts on a station's pipe; the nodes then only follow a path's state

    def cut_lag(self, when: float) -> None:
        timer = threading.Timer(max(0.0, when - time.time()), self.flush_lag)
        timer.daemon = True
        timer.start()

    def flush_lag(self) -> None:
        self._ticks = [*self._ticks[-15:], (time.time(), *cpu_ticks())]
        for p in self.processes.values():
            p.flush_lag()

    def wait_lag(self, until: float) -> None:
        for p in self.processes.values():
            p.wait_lag(until)

    def lag(self, since: float, until: float) -> dict[str, dict]:
        """Each network's lag over [since, until], with the host's share of CPU time stolen by its
        hypervisor between the lag flushes nearest those two times (the same for every network)."""
        steal = None
        if len(self._ticks) >= 2:
            a = min(self._ticks, key=lambda t: abs(t[0] - since))
            b = min(self._ticks, key=lambda t: abs(t[0] - until))
            steal = steal_share(a[1:], b[1:])
        return {n: {**_finite(p.lag(since, until).__dict__), "host_steal": steal} for n, p in self.processes.items()}

    def alive(self) -> dict[str, bool]:
        return {n: p.alive() for n, p in self.processes.items()}

    def stats_table(self, since: float, until: float) -> pa.Table | None:
        """Per-station per-second radio metrics of every radio network (frames, drops; LTE: SINR,
        MCS, PRBs; WiFi: retries, data rate), with the node interface each station is; and each
        network's own rows (no host or interface: its shared medium's queue and drops, a DCF AP's
        busy share and queue), so that what a network's own queues drop is in the run's data."""
        rows = []
        for network, proc in self.processes.items():
            for r in proc.station_stats(since, until) + proc.network_stats(since, until):
                host, ifname = self.stations.get(r["station"], ("", "")) if "station" in r else (None, None)
                rows.append({"time": float(r["t"]), "network": network, "host": host, "interface": ifname,
                             **{k: float(v) for k, v in r.items() if k not in ("t", "station") and isinstance(v, (int, float))},
                             **{k: str(v) for k, v in r.items() if k not in ("t", "station") and isinstance(v, str)}})
        if not rows:
            return None
        keys = sorted({k for r in rows for k in r})
        return pa.Table.from_pylist([{k: r.get(k) for k in keys} for r in rows])

    def schedule(self, items: list[Planned]) -> dict[str, Planned]:
        by_network: dict[str, list[tuple[Planned, PipeChange]]] = {}
        for item in items:
            network, tap = station_tap(self.processes, self.stations, item.pair.sender, item.iface, "the emulated rig")
            by_network.setdefault(network, []).append((item, pipe_change(item, tap)))
        out = {}
        for network, changes in by_network.items():
            ids = self.processes[network].schedule([c for _, c in changes])
            out.update({cid: item for cid, (item, _) in zip(ids, changes)})
            self._changed.setdefault(network, set()).update(c.tap for _, c in changes)
        return out

    def applied(self, since: float) -> dict[str, float]:
        return {c.id: c.actual for network in self._changed
                for c in self.processes[network].applied(since, float("inf"))}

    def link_counters(self, host: str, iface: str) -> dict:
        """The radio emulator's per-second log of the station that is the sender's interface."""
        network, tap = station_tap(self.processes, self.stations, host, iface, "the emulated rig")
        return {"stats": str(self.processes[network].stats_log), "station": tap}

    def restore(self) -> None:
        for network, taps in self._changed.items():
            changes = []
            for tap in sorted(taps):
                host, iface = self.stations[tap]
                for hop in self.hops:
                    if (hop["host"], hop["interface"]) == (host, iface):
                        changes.append(PipeChange(0.0, tap, hop["direction"], rate_bps=hop["rate_bps"],
                                                  delay_s=hop["delay_ms"] / 1e3, jitter_s=hop["jitter_ms"] / 1e3,
                                                  loss=hop["loss_pct"] / 100, state="up"))
            if changes:
                self.processes[network].schedule(changes)
        self._changed.clear()
