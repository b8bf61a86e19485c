"""A run's transfers: the rig's own MPTCP transfer (nodes/agent/rig_transfer.py), a sink on each
receiver and a source on each sender, and what their reports say per pair.

The receiver stamps the first and the last byte it read, so a volume run's flow completion time
is exact: FCT = last byte read at the receiver - the sender's start (iperf3 -n ends its test when
the sender has *written* the volume, before the receiver has read it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from rig.model.spec import Limits, Run

# A run's transfers use one port, the next run's (prepared while it transfers) the other; each
# port's programs have their own keys at the agents.
PORTS = (5301, 5302)
SINK_GRACE_S = 10.0  # a sink waits this much longer than its sources may take
# A connection that has written everything keeps its side open this long after its first SYN at
# most, until each of its paths has a subflow (nodes/agent/rig_transfer.py --paths): far beyond
# any join bound a working path needs (rig.run.joins), so only a path that never joins costs it.
JOIN_WAIT_S = 5.0


def other_port(port: int) -> int:
    return PORTS[1] if port == PORTS[0] else PORTS[0]


def sink_key(port: int) -> str:
    return f"transfer-sink-{port}"


def source_key(port: int) -> str:
    return f"transfer-source-{port}"


@dataclass(frozen=True)
class PairTransfer:
    """One pair's transfer, from the sender's and the receiver's reports."""

    started_at: float | None  # the sender's start (its clock)
    first_byte_at: float | None  # the receiver's first and last byte read (its clock)
    last_byte_at: float | None
    bytes_sent: int | None
    bytes_delivered: int
    error: str | None = None  # why the transfer did not complete, if it did not
    timed_out: bool = False

    @property
    def fct_s(self) -> float | None:
        if self.started_at is None or self.last_byte_at is None:
            return None
        return self.last_byte_at - self.started_at


def run_timeout_s(run: Run, limits: Limits) -> float:
    """How long a run's sources may take: a time-based run's duration comes on top of the limit."""
    return limits.run_timeout_s + (run.duration_s or 0.0)


def sink_args(run: Run, limits: Limits, port: int, mptcp: bool = True, ahead_s: float = 0.0) -> dict:
    """A run's sink; `ahead_s`: how long it may listen before its run starts (prepared ahead)."""
    return {"mode": "sink", "port": port, "connections": run.connections,
            "timeout_s": run_timeout_s(run, limits) + SINK_GRACE_S + ahead_s, "mptcp": mptcp,
            "interval_ms": 1000 / limits.series_hz}


def subflow_path(local, remote, mode: str) -> str:
    """A subflow the source waits for (rig_transfer.py --paths): paired, any subflow from its
    radio's address; fullmesh, the one from that address to that receiver address."""
    return str(local) if mode == "paired" else f"{local}>{remote}"


def source_args(run: Run, limits: Limits, bind: str, target: str, port: int, paths: list[str]) -> dict:
    """A run's source, held until released with its T0 (its start-up is then not in the run's
    timing); `paths`, the subflows it must have (subflow_path)."""
    amount = {"seconds": run.duration_s} if run.time_based else {"bytes": run.volume_bytes}
    return {"mode": "source", "port": port, "connections": run.connections, "target": target, "bind": bind,
            **amount, "cc": run.cc, "hold": True, "sample_ms": 1000 / limits.series_hz,
            "paths": paths, "join_wait_s": JOIN_WAIT_S}


def _report(result: dict, who: str) -> tuple[dict, str | None]:
    """A program's JSON report and what went wrong, from the agent's `wait` reply."""
    try:
        doc = json.loads(result.get("stdout") or "{}")
    except json.JSONDecodeError:
        doc = {}
    if result.get("timed_out"):
        return doc, f"the {who} did not finish in time"
    if doc.get("error"):
        return doc, f"{who}: {doc['error']}"
    if result.get("rc"):
        return doc, f"{who} exited with {result['rc']}: {last_line(result.get('stderr') or '')}"
    if not doc:
        return doc, f"{who} printed no report"
    return doc, None


def pair_transfer(source: dict, sink: dict, volume_bytes: int | None) -> tuple[PairTransfer, dict]:
    """The pair's transfer and the raw reports (kept in the run store). A time-based run
    (volume_bytes None) is complete when the receiver read everything the sender wrote."""
    src, src_error = _report(source, "sender")
    dst, dst_error = _report(sink, "receiver")
    conns = dst.get("connections") or []
    delivered = sum(c.get("bytes") or 0 for c in conns)
    firsts = [c["first_byte_at"] for c in conns if c.get("first_byte_at")]
    lasts = [c["last_byte_at"] for c in conns if c.get("last_byte_at")]
    sent = [c.get("bytes") for c in src.get("connections") or [] if c.get("bytes") is not None]
    error = src_error or dst_error
    expected = volume_bytes if volume_bytes is not None else (sum(sent) if sent else None)
    if error is None and delivered != expected:
        error = f"delivered {delivered} of {expected} bytes"
    transfer = PairTransfer(
        started_at=src.get("started_at"), first_byte_at=min(firsts) if firsts else None,
        last_byte_at=max(lasts) if lasts else None, bytes_sent=sum(sent) if sent else None,
        bytes_delivered=delivered, error=error, timed_out=bool(source.get("timed_out") or sink.get("timed_out")),
    )
    return transfer, {"source": src, "sink": dst, "_rig": {"source": _meta(source), "sink": _meta(sink)}}


def last_line(stderr: str, most: int = 200) -> str:
    """What a program's stderr says last: a Python traceback's last line is the error itself
    (the whole traceback stays in the run's logs/)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return lines[-1][-most:] if lines else "(nothing on stderr)"


def _meta(result: dict) -> dict:
    return {k: result.get(k) for k in ("started_at", "ended_at", "rc", "stderr", "timed_out")}


def delivered_by(sink: dict, until: float) -> int:
    """Bytes the receiver had read by `until` (its clock), to the resolution of its intervals."""
    return sum(nbytes for conn in sink.get("connections") or [] for t, nbytes in conn.get("intervals") or [] if t <= until)


def ready_at(sources) -> float | None:
    """When the last source was ready to wait for T0 (its report's `ready_at`, the node's clock),
    over the `wait` replies of a run's sources."""
    times = []
    for result in sources:
        try:
            ready = json.loads(result.get("stdout") or "{}").get("ready_at")
        except json.JSONDecodeError:
            ready = None
        if ready is not None:
            times.append(ready)
    return max(times, default=None)
