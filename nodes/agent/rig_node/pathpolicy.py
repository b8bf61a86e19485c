"""Loss-aware path switching (seed 003's `mptcp_threshold` mode), done from user space: a path
whose recent loss reaches its threshold is made a backup path, so MPTCP sends on it only when no
other path is available, and is made a regular path again later.

A path is a local address. `LossAware` decides from the sender's own subflow samples and is pure
(no system calls); `Endpoints` applies its decisions to the node's MPTCP endpoints with
`ip mptcp endpoint change id ID backup|nobackup` (the kernel then sends MP_PRIO on the existing
subflows of that address).

Loss of a path over a span = delta bytes_retrans / delta bytes_sent, summed over the path's
subflows (tcp_info counters, cumulative per subflow). That is the paper's loss count / send count
taken from counters the sender's kernel already keeps for every subflow: every segment the path
lost is sent again, bytes_sent counts those retransmissions too, and bytes (not segments) keep
the ratio independent of segment sizes. It needs nothing from the receiver and no packet capture.
It over-counts where TCP retransmits what was not lost (a spurious RTO after a delay spike, a tail
loss probe) and counts a lost retransmission twice; over a window of many segments that is small.
What it cannot do is tell wireless loss from congestion: the drops at the path's own bottleneck
queue count too, whereas the paper counted only the drops of its loss emulation. A loss-based
congestion control loses segments at each queue overflow: a burst at the end of slow start, then
one now and then (emulated WiFi at 10 Mbit/s, no loss configured, balia: 9.5 % of the first
second's bytes; after that 0.012 % over 10 s, but one lost segment in a 1 s window is already
0.12 %). The measures below leave slow start out and span enough data for the threshold, so
that such drops did not reach the paper's thresholds (0.1 % WiFi, 1 % LTE) there. Where queue
overflows lose more, they still do: cubic on the emulated Setup I WiFi (its own rate, no loss
configured, 40 MB) lost ~1 % in two 1 s spans, and the policy would have switched WiFi twice.
Thresholds must lie above the paths' congestion loss, which a run with policy `none` shows.

The `link` measure takes the paper's assumption instead, that the device knows its wireless
link's loss: a path's sent and lost are the frames its own link was given and dropped at random
(rig_node.linkloss: the emulated radio's per-second counters, or the lab's netem qdisc), not a
full queue's drops. It needs no slow-start rule (a queue's overflow is not counted), and counts
in frames, read once a second on the emulated rig: a measure ends at the latest second logged,
and counts from the first second that began after the transfer did (the one before also holds
the previous run's last frames).

Measures:
- Loss is measured over the shortest span, ending at the latest sample, that is at least
  `window_s` long (and holds MIN_SENT_SEGMENTS segments' worth) in which either BACKUP_SEGMENTS
  segments were retransmitted or so much was sent that BACKUP_SEGMENTS would be at the threshold
  (4.3 MB at 0.1 %, 434 kB at 1 %; the link measure: 3,000 and 300 frames), looking back at most
  SPAN_WINDOWS windows; without such a span there is no measure. `window_s` is thus the shortest
  span: a path with little loss at a low threshold is judged over more data, a clearly lossy one
  within a window.
- A subflow counts from `settle_s` (1 s) after its slow start ended (ssthresh set) on: slow
  start ends in an overshoot that loses a burst at the bottleneck queue, which says nothing
  about the link (emulated WiFi at 10 Mbit/s, no loss configured: 9.5 % of the first second's
  bytes, retransmitted within 0.4 s of the first loss; on the emulated LTE's deep queue slow
  start lasted 2.5 s). That holds for a subflow that joins later too (a path coming back after
  a cut). A subflow still in its first slow start has lost nothing, and needs no measure.
- A span starts no earlier than the latest time one of the path's subflows began to count: a
  window is `window_s` of counted time. Otherwise a subflow that has just begun to count would
  be judged on its first round alone (measured: HyStart ended slow start without a loss, the
  queue overflowed 1.0 s later, and 0.1 s of counted data read as 15 % loss).

Decisions:
- A regular path goes to backup when its measure shows loss >= its threshold, and at least one
  other path that is not backup carries data (an established subflow, bytes acknowledged within
  the last window). The last such path is never switched: with one active path the mechanism
  has no effect (the paper), and MPTCP would use the backup anyway.
- A backup path carries little (the scheduler uses it only when no regular subflow can send), so
  waiting for evidence of low loss alone could keep it backup for ever, and what it does send
  is a small sample. It is restored when either a measure with RESTORE_SEGMENTS segments' worth
  at the threshold (7.2 MB at 0.1 %, 362 kB at 2 %; it happens when the path carries real
  traffic, e.g. the other path went away) shows loss < threshold, or it has been backup for
  `hold_s` (then it is measured afresh as a regular path, and goes back to backup as soon as a
  measure shows it still lossy: a path that stays lossy flaps once a hold).
- Every switch starts the path's window anew: the loss before a switch says nothing about after.
- Only paths this policy made backup are restored; a path that was backup at the start (the
  campaign's setting) is left alone and counts as backup.
"""

from __future__ import annotations

import json
import subprocess
from collections import deque
from dataclasses import dataclass

MIN_SENT_SEGMENTS = 45  # ~64 kB: less than that is no measure of loss
HOLD_WINDOWS = 10  # hold_s by default: this many windows
SPAN_WINDOWS = 10  # a measure reaches back at most this many windows
SETTLE_S = 1.0  # a subflow is measured from this long after its slow start ended
SEGMENT_BYTES = 1448
# A measure that finds loss >= threshold must have seen this many lost segments, or so much data
# that this many would have been lost at the threshold: one lost segment in 1 s at 10 Mbit/s is
# 0.12 %, above a 0.1 % threshold (the paper's Table II: low loss levels take many packets to
# observe). One that finds loss < threshold (a restore) needs data for more: a backup path sends
# little, and a few dozen segments without a loss say nothing of a 2 % loss (measured: such a
# window restored a 5 %-loss path).
BACKUP_SEGMENTS = 3
RESTORE_SEGMENTS = 5


@dataclass(frozen=True)
class Sample:
    """One subflow at one instant: `key` tells subflows apart (connection, local, remote)."""
    key: tuple
    address: str  # local address of the subflow (the path)
    bytes_sent: int
    bytes_retrans: int
    bytes_acked: int
    established: bool
    slow_start_over: bool = True  # ssthresh set (by the first loss, or by the congestion control)


@dataclass(frozen=True)
class Switch:
    t: float
    address: str
    loss: float | None  # the measure that decided; None for a restore without one (a hold, the end)
    action: str  # "backup" | "restore"

    def to_json(self) -> dict:
        return {"t": round(self.t, 6), "address": self.address,
                "loss": None if self.loss is None else round(self.loss, 6), "action": self.action}


class _Path:
    def __init__(self):
        self.sent = self.retrans = self.acked = 0  # cumulative over the path's measured subflows
        self.history: deque[tuple[float, int, int, int]] = deque()  # (t, sent, retrans, acked) since the last switch
        self.established = False  # in the latest round
        self.backup_since: float | None = None  # set while this policy holds the path backup
        self.counted_since = float("-inf")  # a span starts no earlier: a subflow of the path began to count


class LossAware:
    """Decides switches from successive rounds of subflow samples (`observe`)."""

    def __init__(self, thresholds: dict[str, float], window_s: float, hold_s: float | None = None,
                 settle_s: float = SETTLE_S, backup_at_start: frozenset[str] = frozenset(),
                 measure: str = "retransmissions"):
        if window_s <= 0:
            raise ValueError("window_s must be positive")
        if measure not in ("retransmissions", "link"):
            raise ValueError(f"measure {measure!r} is not retransmissions or link")
        self.thresholds, self.window_s, self.settle_s = dict(thresholds), window_s, settle_s
        self.hold_s = HOLD_WINDOWS * window_s if hold_s is None else hold_s
        self.fixed_backup, self.measure = frozenset(backup_at_start), measure
        self.unit = SEGMENT_BYTES if measure == "retransmissions" else 1  # a segment's size in the counters
        self.paths: dict[str, _Path] = {}
        self._last: dict[tuple, tuple[int, int, int]] = {}  # subflow key -> (sent, retrans, acked) last seen
        self._slow_start_end: dict[tuple, float] = {}  # subflow key -> when first seen with ssthresh set
        self._counting: set[tuple] = set()  # subflow keys whose counters count
        self._link_base: dict[str, tuple[int, int]] = {}  # address -> its link's first reading

    def held(self) -> list[str]:
        """Paths this policy holds backup now."""
        return [a for a, p in self.paths.items() if p.backup_since is not None]

    def _backup(self, address: str) -> bool:
        p = self.paths.get(address)
        return address in self.fixed_backup or (p is not None and p.backup_since is not None)

    def _carrying(self, address: str, t: float) -> bool:
        """An established subflow, and data acknowledged on the path within the last window: a
        path whose interface went down keeps an 'established' subflow until its timeouts."""
        p = self.paths[address]
        base = next((e for e in reversed(p.history) if e[0] <= t - self.window_s + 1e-9), p.history[0])
        return p.established and p.acked > base[3]

    def _loss(self, p: _Path, t: float, threshold: float, segments: int, lost_is_enough: bool) -> float | None:
        """Loss over the shortest span ending at t that is at least a window long and holds
        enough data: `segments` lost at the threshold, or (`lost_is_enough`) actually lost.
        None when the history has no such span."""
        need_sent, need_lost = segments * self.unit / threshold, segments * self.unit
        for at, sent, retrans, _ in reversed(p.history):
            if at < p.counted_since:
                break
            d_sent, d_retrans = p.sent - sent, p.retrans - retrans
            if at <= t - self.window_s + 1e-9 and d_sent >= MIN_SENT_SEGMENTS * self.unit and \
                    (d_sent >= need_sent or (lost_is_enough and d_retrans >= need_lost)):
                return d_retrans / d_sent
        return None

    def observe(self, t: float, samples: list[Sample], links: dict[str, tuple[int, int]] | None = None) -> list[Switch]:
        """One round of samples (every subflow of every connection, at about the same t), and with
        the `link` measure each path's link counters (address -> cumulative (given, lost) frames):
        the switches to make now, already counted as made."""
        for p in self.paths.values():
            p.established = False
        if self.measure == "link":
            for address, (given, lost) in (links or {}).items():
                p = self.paths.setdefault(address, _Path())
                if address not in self._link_base:  # the first reading is the base: the span starts here
                    self._link_base[address] = (given, lost)
                    p.counted_since = t
                given0, lost0 = self._link_base[address]
                p.sent, p.retrans = given - given0, lost - lost0
        for s in samples:
            p = self.paths.setdefault(s.address, _Path())
            sent0, retrans0, acked0 = self._last.get(s.key, (0, 0, 0))
            # with the link measure, sent and lost are the link's: a subflow adds what it acknowledged
            if self.measure == "retransmissions" and s.slow_start_over and \
                    t - self._slow_start_end.setdefault(s.key, t) >= self.settle_s:
                if s.key not in self._counting:  # what it sent before now is not counted: the span starts here
                    self._counting.add(s.key)
                    p.counted_since = t
                p.sent += max(0, s.bytes_sent - sent0)
                p.retrans += max(0, s.bytes_retrans - retrans0)
            p.acked += max(0, s.bytes_acked - acked0)
            self._last[s.key] = (s.bytes_sent, s.bytes_retrans, s.bytes_acked)
            p.established = p.established or s.established
        for p in self.paths.values():
            p.history.append((t, p.sent, p.retrans, p.acked))
            while len(p.history) > 1 and p.history[1][0] <= t - SPAN_WINDOWS * self.window_s:
                p.history.popleft()
        switches = []
        for address, p in self.paths.items():
            threshold = self.thresholds.get(address)
            if threshold is None:
                continue
            if p.backup_since is None:
                loss = self._loss(p, t, threshold, BACKUP_SEGMENTS, lost_is_enough=True)
                others = [a for a in self.paths if a != address and not self._backup(a) and self._carrying(a, t)]
                if loss is not None and loss >= threshold and others and address not in self.fixed_backup:
                    switches.append(self._switch(t, address, loss, "backup"))
                continue
            loss = self._loss(p, t, threshold, RESTORE_SEGMENTS, lost_is_enough=False)
            if (loss is not None and loss < threshold) or t - p.backup_since >= self.hold_s:
                switches.append(self._switch(t, address, loss, "restore"))
        return switches

    def _switch(self, t: float, address: str, loss: float | None, action: str) -> Switch:
        p = self.paths[address]
        p.backup_since = t if action == "backup" else None
        p.history = deque([(t, p.sent, p.retrans, p.acked)])
        return Switch(t, address, loss, action)

    def release(self, t: float) -> list[Switch]:
        """The end of the run: every path this policy holds backup is restored."""
        return [self._switch(t, a, None, "restore") for a in self.held()]


class Endpoints:
    """The node's MPTCP endpoints by address (`ip -j mptcp endpoint show`, read once), and the
    backup flag set on them."""

    def __init__(self, listing: list[dict] | None = None):
        if listing is None:
            listing = json.loads(_ip("-j", "mptcp", "endpoint", "show") or "[]")
        self.ids = {e["address"]: int(e["id"]) for e in listing if "address" in e}
        self.backup = frozenset(e["address"] for e in listing if e.get("backup"))

    def apply(self, switch: Switch) -> None:
        """Raises RuntimeError when the address has no endpoint or `ip` fails."""
        if switch.address not in self.ids:
            raise RuntimeError(f"{switch.address} has no MPTCP endpoint")
        _ip("mptcp", "endpoint", "change", "id", str(self.ids[switch.address]),
            "backup" if switch.action == "backup" else "nobackup")


def _ip(*args: str) -> str:
    try:
        p = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"ip {' '.join(args)}: no answer in 10 s") from None
    if p.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {p.stderr.strip() or f'exit status {p.returncode}'}")
    return p.stdout
