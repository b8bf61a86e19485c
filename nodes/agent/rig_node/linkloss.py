"""What a sender's own links lost: per path (a local address), the frames its link was given and
the frames it dropped at random, cumulative. The loss-aware policy's `link` measure
(rig_node.pathpolicy) reads it: the loss of the wireless link the device is assumed to know
(seed 003, Sec. III), without the drops at a full queue, which TCP's congestion control causes.

Two sources, one per rig:
- `stats`: the emulated rig's radio emulator logs each station's hops once a second
  (`<network>.stats.jsonl`, a JSON object per station and second); the sender's uplink hop is
  the link: given = `up_frames` (delivered) + `up_loss_drops`, lost = `up_loss_drops` (the
  hop's random loss, and frames it dropped while cut). `up_queue_drops` are left out.
- `qdisc`: on the lab a node impairs what it sends with netem on the interface (the campaign's
  loss events), as seed 003 dropped packets in the device's output path; the root qdisc's
  counters (`tc -s -j qdisc show dev IF`) are the link's: given = packets sent + drops, lost =
  drops (netem's queue of 1,000 packets rarely overflows; its drops would count too).

Standard library only (it runs on the lab's nodes).
"""

from __future__ import annotations

import json
import os
import subprocess

from rig_node.jsonltail import JsonlTail


class StatsLog:
    """A station's uplink counters from the emulator's per-second log, read as it grows from
    its end when this was made (what it logged before is no run's: the log spans the block).
    The first row read is left out too: its second began before this reader did, so it holds
    what went before it (the previous run's last frames, at that run's loss)."""

    def __init__(self, path: str, station: str):
        self.station, self.log = station, JsonlTail(path, from_end=True)
        self.given = self.lost = 0
        self._straddled = False  # the first row, which straddles this reader's start, was read

    def read(self) -> tuple[int, int]:
        """(given, lost) so far; the log's last complete line is up to a second old."""
        for row in self.log.new_rows():
            if row.get("station") != self.station:
                continue
            if not self._straddled:
                self._straddled = True
                continue
            self.given += int(row.get("up_frames", 0)) + int(row.get("up_loss_drops", 0))
            self.lost += int(row.get("up_loss_drops", 0))
        return self.given, self.lost


class Qdisc:
    """An interface's root qdisc counters (`tc -s -j qdisc show dev IF`). Only netem's drops are
    the link's loss (another root qdisc's are its own queue's); a new qdisc (another kind or
    handle) starts its counters at 0, and counting goes on from there."""

    def __init__(self, iface: str):
        self.iface = iface
        self.given = self.lost = 0
        self._last, self._qdisc = (0, 0), None

    def read(self) -> tuple[int, int]:
        p = subprocess.run(["tc", "-s", "-j", "qdisc", "show", "dev", self.iface],
                           capture_output=True, text=True, timeout=5)
        if p.returncode != 0:
            raise RuntimeError(f"tc qdisc show dev {self.iface}: {p.stderr.strip() or p.returncode}")
        roots = [q for q in json.loads(p.stdout or "[]") if q.get("root")]
        if not roots:
            raise RuntimeError(f"{self.iface} has no root qdisc")
        q = roots[0]
        lost = int(q.get("drops", 0)) if q.get("kind") == "netem" else 0
        now, qdisc = (int(q.get("packets", 0)) + lost, lost), (q.get("kind"), q.get("handle"))
        same = qdisc == self._qdisc and now[0] >= self._last[0] and now[1] >= self._last[1]
        base = self._last if same else (0, 0)
        self.given += now[0] - base[0]
        self.lost += now[1] - base[1]
        self._last, self._qdisc = now, qdisc
        return self.given, self.lost


def source(spec: str) -> StatsLog | Qdisc:
    """`stats:PATH:STATION` or `qdisc:IFACE` (the transfer's --loss-link values)."""
    kind, _, rest = spec.partition(":")
    if kind == "stats":
        path, _, station = rest.rpartition(":")
        if not os.path.isabs(path) or not station:
            raise ValueError(f"{spec!r}: not stats:ABSOLUTE_PATH:STATION")
        return StatsLog(path, station)
    if kind == "qdisc" and rest:
        return Qdisc(rest)
    raise ValueError(f"{spec!r}: not stats:PATH:STATION or qdisc:IFACE")
