"""A run's end on every node at once: each node's program is waited for in short slices, and
when a part the run needs is lost (a node agent or its SSH session, a radio emulator, a program
that died) every node's program is stopped at the next slice, instead of each node waiting on
to the run timeout for a run that can no longer succeed."""

from __future__ import annotations

import signal
import threading
import time
from typing import Callable

from rig.agents.client import AgentLost, AgentPool
from rig.run.radios import Radios
from rig.run.transfers import last_line

# How often each node's program is asked after (one round trip per node: over SSH on the lab a
# few ms), and so how late the other nodes learn that a part was lost. The run timeout stays
# the bound on a run that merely runs long.
WAIT_SLICE_S = 0.5


class RunWatch:
    """Why the run was ended early (the first lost part), shared by the nodes' waits."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.why: str | None = None
        self.ended = threading.Event()

    def lose(self, why: str) -> None:
        with self._lock:
            if self.why is None:
                self.why = why
        self.ended.set()


def wait_program(agent, key: str, timeout: float, watch: RunWatch, what: str) -> dict:
    """The `wait` reply of the program under `key` on `agent`'s node: at its end, at `timeout`
    (stopped, `timed_out`), or as soon as the watch says the run is over (stopped, `stopped_by`
    the lost part). A program that ends with an error ends the run on the other nodes too
    (`what` names it: "source on s1")."""
    deadline = time.monotonic() + timeout
    try:
        while not watch.ended.is_set() and (left := deadline - time.monotonic()) > 0:
            reply = agent.request("wait", key=key, timeout=min(WAIT_SLICE_S, left), stop=False)
            if not reply.get("running"):
                if reply.get("rc"):
                    watch.lose(f"transfer {what} {_how(reply['rc'], reply.get('stderr') or '')}")
                return reply
        reply = agent.request("wait", key=key, timeout=0)  # stopped now, its output kept
    except AgentLost as e:
        watch.lose(str(e))
        raise
    if watch.why is not None and reply.get("timed_out"):  # it did not run out of time: it was stopped
        reply = {**reply, "timed_out": False, "stopped_by": watch.why}
    return reply


def _how(rc: int, stderr: str) -> str:
    if rc < 0 and -rc in signal.valid_signals():
        return f"killed by {signal.Signals(-rc).name}"
    return f"exited with status {rc}: {last_line(stderr)}"


def watched(agents: AgentPool, radios: Radios, hosts: list[str], node: Callable, watch: RunWatch) -> dict:
    """`node(agent)` on every host at once (AgentPool.each), while the agents' and the radios'
    processes are polled every WAIT_SLICE_S (no round trip): a lost one ends the run (watch)."""
    done = threading.Event()

    def poll() -> None:
        while not done.wait(WAIT_SLICE_S) and not watch.ended.is_set():
            lost = [f"node agent on {h} has exited" for h in agents.lost()]
            lost += [f"emulator for {n} exited during the run" for n, alive in radios.alive().items() if not alive]
            if lost:
                watch.lose("; ".join(lost))

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
        return agents.each(hosts, node)
    finally:
        done.set()
        poller.join()
