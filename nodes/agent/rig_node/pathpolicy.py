"""Loss-aware path switching (seed 003's `mptcp_threshold` mode), done from user space: a path
whose loss over the last window reaches its threshold is made a backup path, so MPTCP sends on it
only when no other path is available, and is made a regular path again later.

A path is a local address. `LossAware` decides from the sender's own subflow samples and is pure
(no system calls); `Endpoints` applies its decisions to the node's MPTCP endpoints with
`ip mptcp endpoint change id ID backup|nobackup` (the kernel then sends MP_PRIO on the existing
subflows of that address).

Loss of a path over a window = delta bytes_retrans / delta bytes_sent, summed over the path's
subflows (tcp_info counters, cumulative per subflow). That is the paper's loss count / send count
taken from counters the sender's kernel already keeps for every subflow: every segment the path
lost is sent again, bytes_sent counts those retransmissions too, and bytes (not segments) keep
the ratio independent of segment sizes. It needs nothing from the receiver and no packet capture.
It over-counts where TCP retransmits what was not lost (a spurious RTO after a delay spike, a tail
loss probe) and counts a lost retransmission twice; over a window of many segments that is small.
What it cannot do is tell wireless loss from congestion: the drops at the path's own bottleneck
queue count too, whereas the paper counted only the drops of its loss emulation. A loss-based
congestion control loses segments at every queue overflow (slow start's overshoot, then each
cycle: on the emulated WiFi with no loss configured, cubic's 1 s windows show up to ~1.4 %), so
a threshold below that level (the paper's 0.1 % for WiFi) switches a path with no wireless loss.

Decisions:
- A regular path goes to backup when a full window (history reaching back `window_s`, at least
  `min_sent_bytes` sent in it) shows loss >= its threshold, and at least one other path that is
  not backup carries data (an established subflow, bytes acknowledged within the window). The
  last such path is never switched: with one active path the mechanism has no effect (the
  paper), and MPTCP would use the backup anyway.
- A backup path carries little (the scheduler uses it only when no regular subflow can send), so
  waiting for evidence of low loss alone could keep it backup for ever, and what it does send
  is a small sample. It is restored when either a full window shows loss < threshold over at
  least RESTORE_SEGMENTS segments' worth at the threshold (5 x 1448 B / threshold: 362 kB at
  2 %; it happens when the path carries real traffic, e.g. the other path went away), or it
  has been backup for `hold_s` (then it is measured afresh as a regular path, and goes back to
  backup as soon as a window shows it still lossy: a path that stays lossy flaps once a hold).
- Every switch starts the path's window anew: the loss before a switch says nothing about after.
- Only paths this policy made backup are restored; a path that was backup at the start (the
  campaign's setting) is left alone and counts as backup.
"""

from __future__ import annotations

import json
import subprocess
from collections import deque
from dataclasses import dataclass

MIN_SENT_BYTES = 64 * 1024  # ~45 full segments: less than that in a window is no measure of loss
HOLD_WINDOWS = 10  # hold_s by default: this many windows
# Early restore needs a window in which the path would have lost this many segments at its
# threshold: what a backup path still sends (its leftovers) is little, and a few dozen segments
# without a loss say nothing of a 2 % loss (measured: such a window restored a 5 %-loss path).
RESTORE_SEGMENTS = 5
SEGMENT_BYTES = 1448


@dataclass(frozen=True)
class Sample:
    """One subflow at one instant: `key` tells subflows apart (connection, local, remote)."""
    key: tuple
    address: str  # local address of the subflow (the path)
    bytes_sent: int
    bytes_retrans: int
    bytes_acked: int
    established: bool


@dataclass(frozen=True)
class Switch:
    t: float
    address: str
    loss: float | None  # over the last window; None when there was none with data (a hold, the end)
    action: str  # "backup" | "restore"

    def to_json(self) -> dict:
        return {"t": round(self.t, 6), "address": self.address,
                "loss": None if self.loss is None else round(self.loss, 6), "action": self.action}


class _Path:
    def __init__(self):
        self.sent = self.retrans = self.acked = 0  # cumulative over every subflow seen on the path
        self.history: deque[tuple[float, int, int, int]] = deque()  # (t, sent, retrans, acked) since the last switch
        self.established = False  # in the latest round
        self.backup_since: float | None = None  # set while this policy holds the path backup


class LossAware:
    """Decides switches from successive rounds of subflow samples (`observe`)."""

    def __init__(self, thresholds: dict[str, float], window_s: float, hold_s: float | None = None,
                 min_sent_bytes: int = MIN_SENT_BYTES, backup_at_start: frozenset[str] = frozenset()):
        if window_s <= 0:
            raise ValueError("window_s must be positive")
        self.thresholds, self.window_s = dict(thresholds), window_s
        self.hold_s = HOLD_WINDOWS * window_s if hold_s is None else hold_s
        self.min_sent_bytes, self.fixed_backup = min_sent_bytes, frozenset(backup_at_start)
        self.paths: dict[str, _Path] = {}
        self._last: dict[tuple, tuple[int, int, int]] = {}  # subflow key -> (sent, retrans, acked) last seen

    def held(self) -> list[str]:
        """Paths this policy holds backup now."""
        return [a for a, p in self.paths.items() if p.backup_since is not None]

    def _backup(self, address: str) -> bool:
        p = self.paths.get(address)
        return address in self.fixed_backup or (p is not None and p.backup_since is not None)

    def _carrying(self, address: str) -> bool:
        """An established subflow, and data acknowledged on the path within its history (a window):
        a path whose interface went down keeps an 'established' subflow until its timeouts."""
        p = self.paths[address]
        return p.established and p.acked > p.history[0][3]

    def _loss(self, p: _Path, t: float) -> tuple[float | None, int]:
        """(loss over the window ending at t, bytes sent in it); loss None until the path's history
        reaches back a whole window."""
        base = None
        for entry in p.history:
            if entry[0] > t - self.window_s + 1e-9:
                break
            base = entry
        if base is None:
            return None, 0
        sent, retrans = p.sent - base[1], p.retrans - base[2]
        return (retrans / sent if sent > 0 else None), sent

    def observe(self, t: float, samples: list[Sample]) -> list[Switch]:
        """One round of samples (every subflow of every connection, at about the same t): the
        switches to make now, already counted as made."""
        for p in self.paths.values():
            p.established = False
        for s in samples:
            p = self.paths.setdefault(s.address, _Path())
            sent0, retrans0, acked0 = self._last.get(s.key, (0, 0, 0))
            p.sent += max(0, s.bytes_sent - sent0)
            p.retrans += max(0, s.bytes_retrans - retrans0)
            p.acked += max(0, s.bytes_acked - acked0)
            self._last[s.key] = (s.bytes_sent, s.bytes_retrans, s.bytes_acked)
            p.established = p.established or s.established
        for p in self.paths.values():
            p.history.append((t, p.sent, p.retrans, p.acked))
            while len(p.history) > 1 and p.history[1][0] <= t - self.window_s:
                p.history.popleft()  # keep one entry at or before the window's start
        switches = []
        for address, p in self.paths.items():
            threshold = self.thresholds.get(address)
            if threshold is None:
                continue
            loss, sent = self._loss(p, t)
            measured = loss is not None and sent >= self.min_sent_bytes
            if p.backup_since is None:
                others = [a for a in self.paths if a != address and not self._backup(a) and self._carrying(a)]
                if measured and loss >= threshold and others and address not in self.fixed_backup:
                    switches.append(self._switch(t, address, loss, "backup"))
            elif (measured and loss < threshold and sent >= RESTORE_SEGMENTS * SEGMENT_BYTES / threshold) \
                    or t - p.backup_since >= self.hold_s:
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
