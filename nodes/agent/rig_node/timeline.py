"""Events on a run's clock, as a node acts them out: at a given unix time an interface goes down or
comes back up, or what the node sends through it is impaired (tc netem, where the kernel has it).
What MPTCP does about a path that went or came back is its path manager's, never the timeline's.

A Timeline is handed every action of a run before the run starts and does each at its time from
a thread; each done action is logged with its planned and actual time.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time

from rig_node import validate as v

ACTIONS = ("link", "impair")
MOST_ACTIONS = 64


def netem_available() -> bool:
    """Whether this kernel can load the netem qdisc (built in, loaded, or a module to load)."""
    if os.path.exists("/sys/module/sch_netem"):
        return True
    try:
        return subprocess.run(["modprobe", "-n", "sch_netem"], capture_output=True, timeout=10).returncode == 0
    except OSError:
        return False


def netem_argv(iface: str, action: dict) -> list[str]:
    """tc's command for an impairment of what `iface` sends; all values None: remove it."""
    values = [action.get(k) for k in ("rate_bps", "delay_ms", "jitter_ms", "loss_pct")]
    if all(x is None for x in values):
        return ["tc", "qdisc", "del", "dev", iface, "root"]
    rate, delay, jitter, loss = values
    argv = ["tc", "qdisc", "replace", "dev", iface, "root", "netem"]
    if delay is not None or jitter is not None:
        argv += ["delay", f"{delay or 0}ms", *([f"{jitter}ms"] if jitter else [])]
    if loss is not None:
        argv += ["loss", f"{loss}%"]
    if rate is not None:
        argv += ["rate", f"{int(rate)}bit"]
    return argv


def checked(actions: object) -> list[dict]:
    """A run's actions, every field checked (Refused otherwise), sorted by time."""
    now = time.time()
    out = []
    for i, a in enumerate(v.listed(actions, "timeline.actions", MOST_ACTIONS)):
        where = f"timeline.actions[{i}]"
        a = v.mapping(a, where, 8)
        kind = v.one_of(v.need(a, "action", where), f"{where}.action", ACTIONS)
        item = {"id": v.key(v.need(a, "id", where), f"{where}.id"), "action": kind,
                "at": v.number(v.need(a, "at", where), f"{where}.at", now - 60, now + 86400),
                "iface": v.ifname(v.need(a, "iface", where), f"{where}.iface")}
        if kind == "link":
            v.only(a, {"id", "action", "at", "iface", "state"}, where)
            item["state"] = v.one_of(v.need(a, "state", where), f"{where}.state", ("up", "down"))
        else:
            v.only(a, {"id", "action", "at", "iface", "rate_bps", "delay_ms", "jitter_ms", "loss_pct"}, where)
            limits = {"rate_bps": (1, 1e11), "delay_ms": (0, 60_000), "jitter_ms": (0, 60_000), "loss_pct": (0, 100)}
            for name, (lo, hi) in limits.items():
                item[name] = None if a.get(name) is None else v.number(a[name], f"{where}.{name}", lo, hi)
        out.append(item)
    if any(a["action"] == "impair" for a in out) and not netem_available():
        raise v.Refused("timeline: impairments need the netem qdisc (sch_netem), which this kernel does not have")
    return sorted(out, key=lambda a: a["at"])


class Timeline:
    """Does `actions` (checked) at their times; `do(action)` performs one and raises on failure."""

    def __init__(self, actions: list[dict], do) -> None:
        self.actions, self.do = actions, do
        self.log: list[dict] = []
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for action in self.actions:
            if self._cancel.wait(max(0.0, action["at"] - time.time())):
                return
            entry = {"id": action["id"], "planned": action["at"]}
            try:
                self.do(action)
            except Exception as e:  # recorded with the event: the run's data says what did not happen
                entry["error"] = f"{type(e).__name__}: {e}"
            entry["actual"] = time.time()
            self.log.append(entry)

    def stop(self) -> list[dict]:
        """Cancels what has not happened yet; the log of what did."""
        self._cancel.set()
        self._thread.join(10)
        return list(self.log)
