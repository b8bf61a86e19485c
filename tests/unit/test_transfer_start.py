"""How a source waits for its start (--at): each connection's thread sleeps until T0 itself and
connects at once, at real-time priority from its sleep to the end of connect() where the kernel
permits it (root), and at the priority it had for the transfer itself. Over the loopback, plain
TCP: no root needed (unprivileged, the priority stays as it was)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from rig_node import transfer_source
from fixtures.node_agent import TRANSFER
from rig_node.sampling import listening

SCHED_POLICY_FIELD = 41  # /proc/<pid>/task/<tid>/stat, proc(5)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _policies(pid: int) -> dict[int, int]:
    """Scheduling policy of every thread of process `pid` (0 normal, 1 SCHED_FIFO)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        stat = (task / "stat").read_text()
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
        out[int(task.name)] = int(fields[SCHED_POLICY_FIELD - 3])
    return out


def test_inside_the_block_the_thread_is_real_time_where_permitted_and_as_before_after_it():
    before = os.sched_getscheduler(0), os.sched_getparam(0)
    with transfer_source._start_priority(True):
        inside = os.sched_getscheduler(0), os.sched_getparam(0).sched_priority
    assert inside in {(os.SCHED_FIFO, transfer_source.START_PRIORITY), (before[0], before[1].sched_priority)}
    assert (os.sched_getscheduler(0), os.sched_getparam(0)) == before
    try:
        with transfer_source._start_priority(True):
            raise ConnectionRefusedError
    except ConnectionRefusedError:
        pass
    assert (os.sched_getscheduler(0), os.sched_getparam(0)) == before
    with transfer_source._start_priority(False):
        assert (os.sched_getscheduler(0), os.sched_getparam(0)) == before


def test_each_connection_starts_at_t0_and_sends_at_normal_priority():
    port = _port()
    program = [sys.executable, "-I", str(TRANSFER)]
    sink = subprocess.Popen([*program, "sink", "--port", str(port), "--connections", "2", "--timeout", "30", "--tcp"],
                            stdout=subprocess.PIPE, text=True)
    source = None
    try:
        deadline = time.monotonic() + 10
        while not listening(port):
            assert time.monotonic() < deadline, "the sink does not listen"
            time.sleep(0.01)
        at = time.time() + 0.5
        source = subprocess.Popen([*program, "source", "--target", "127.0.0.1", "--port", str(port), "--connections", "2",
                                   "--seconds", "1.5", "--at", repr(at), "--tcp", "--sample-ms", "50"],
                                  stdout=subprocess.PIPE, text=True)
        time.sleep(max(0.0, at + 0.5 - time.time()))  # within its 1.5 s of sending
        during = _policies(source.pid)
        src, dst = (json.loads(p.communicate(timeout=30)[0]) for p in (source, sink))
    finally:
        for p in (source, sink):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    assert source.returncode == 0 and sink.returncode == 0, (src, dst)
    assert all(policy != os.SCHED_FIFO for policy in during.values()), during
    assert min(c["started_at"] for c in src["connections"]) == src["started_at"]
    assert all(c["started_at"] >= at for c in src["connections"])  # never before T0
    assert src["ready_at"] <= at  # every connection was prepared and waiting before T0
    assert all(c["bytes"] > 0 for c in src["connections"])
    assert sum(c["bytes"] for c in dst["connections"]) == sum(c["bytes"] for c in src["connections"])
    assert src["connections"][0]["subflows"]  # the sampler, started before T0, sampled
