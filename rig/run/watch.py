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
from rig.store import failures
from rig.run.radios import Radios
from rig.run.transfers import last_line

# How often each node's program is asked after (one round trip per node: over SSH on the lab a
# few ms), and so how late the other nodes learn that a part was lost. The run timeout stays
# the bound on a run that merely runs long.
WAIT_SLICE_S = 0.5
# A transfer stalls when its receiver's connections have received nothing for
# max(STALL_MIN_S, STALL_RTOS x the largest RTO they showed). A sender that loses everything it
# sends retransmits after one RTO, then two, then four (exponential backoff): by 8 RTOs three
# retransmissions in a row have not got through, which a path that still carries anything does
# not do; STALL_MIN_S keeps short-RTT paths (RTO 200 ms) from calling a burst of loss a stall.
STALL_MIN_S = 5.0
STALL_RTOS = 8


def stall_bound_s(rto_ms: float | None) -> float:
    return max(STALL_MIN_S, STALL_RTOS * (rto_ms or 0.0) / 1000)


class RunWatch:
    """Why the run was ended early (the first lost part, or a stalled transfer) and its kind
    (rig.store.failures), shared by the nodes' waits."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.why: str | None = None
        self.kind: str | None = None
        self.ended = threading.Event()
        # A stall's evidence is taken on every node whose program still runs before any of them
        # is stopped (a sink stopped first would end its source, and the sender's state with it).
        self._evidence = threading.Condition()
        self._running = self._evidenced = 0

    def running(self, delta: int) -> None:
        with self._evidence:
            self._running += delta
            self._evidence.notify_all()

    def evidence_taken(self, timeout_s: float = 3.0) -> None:
        """This node's evidence is taken: until every running node's is (at most timeout_s)."""
        with self._evidence:
            self._evidenced += 1
            self._evidence.notify_all()
            self._evidence.wait_for(lambda: self._evidenced >= self._running, timeout_s)

    @property
    def stalled(self) -> bool:
        """Ended because a transfer stalled: a result, not a lost part."""
        return self.kind == "stalled"

    def lose(self, why: str, kind: str) -> None:
        """The first cause ends the run; a part of the rig that died overrides a connection's
        error that came first (a sink that crashed leaves its sources refused)."""
        with self._lock:
            if self.why is None or (self.kind == "transfer_error" and failures.KINDS[kind].rigs):
                self.why, self.kind = why, kind
        self.ended.set()


def wait_program(agent, key: str, timeout: float, watch: RunWatch, what: str, port: int, receives: bool) -> dict:
    """The `wait` reply of the program under `key` on `agent`'s node: at its end, at `timeout`
    (stopped, `timed_out`), or as soon as the watch says the run is over (stopped, `stopped_by`
    the lost part). A program that ends with an error ends the run on the other nodes too
    (`what` names it: "source on s1"). A receiver's sink (`receives`) whose connections on
    `port` receive nothing for stall_bound_s ends the run as stalled; then every node's program
    is stopped after the node's evidence was taken (`evidence` in the reply). A program stopped
    (the run ended early, or at its timeout) has its port's sockets destroyed on every node."""
    deadline = time.monotonic() + timeout
    received, moved_at, rto_ms = None, time.monotonic(), None
    watch.running(+1)
    try:
        while not watch.ended.is_set() and (left := deadline - time.monotonic()) > 0:
            reply = agent.request("wait", key=key, timeout=min(WAIT_SLICE_S, left), stop=False,
                                  **({"port": port} if receives else {}))
            if not reply.get("running"):
                watch.running(-1)
                if reply.get("rc"):
                    watch.lose(f"transfer {what} {_how(reply['rc'], reply.get('stderr') or '')}",
                               failures.of_program(reply["rc"], reply.get("stdout") or ""))
                return reply
            if reply.get("received") is None:
                continue
            rto_ms = max(rto_ms or 0.0, reply.get("rto_ms") or 0.0)
            if reply["received"] != received:
                received, moved_at = reply["received"], time.monotonic()
            elif time.monotonic() - moved_at > (bound := stall_bound_s(rto_ms)):
                watch.lose(f"stalled: the {what}'s connections received nothing for {bound:.1f} s "
                           f"({received} bytes received, largest RTO {rto_ms:.0f} ms)", "stalled")
        evidence = agent.request("evidence", keys=[key]) if watch.stalled else None
        if watch.stalled:
            watch.evidence_taken()
        reply = agent.request("wait", key=key, timeout=0)  # stopped now, its output kept
        # Nothing of a run that ended badly survives into the next: its connections' sockets,
        # whatever state the kernel holds them in (unsent data, FIN_WAIT), are destroyed.
        agent.request("kill_sockets", port=port)
    except AgentLost as e:
        watch.running(-1)
        watch.lose(str(e), "agent_lost")
        raise
    if watch.why is not None and reply.get("timed_out"):  # it did not run out of time: it was stopped
        reply = {**reply, "timed_out": False, "stopped_by": watch.why}
    if evidence is not None:
        reply["evidence"] = evidence
    return reply


def _how(rc: int, stderr: str) -> str:
    if rc < 0 and -rc in signal.valid_signals():
        return f"killed by {signal.Signals(-rc).name}"
    return f"exited with status {rc}: {last_line(stderr)}"


def watched(agents: AgentPool, radios: Radios, hosts: list[str], node: Callable, watch: RunWatch) -> dict:
    """`node(agent)` on every host at once (AgentPool.each), while the agents' and the radios'
    processes are polled every WAIT_SLICE_S (no round trip): a lost one ends the run (watch).
    host -> what node() returned, or the AgentLost its agent raised (the other nodes' replies
    are kept: what they recorded is the run's)."""
    done = threading.Event()

    def poll() -> None:
        while not done.wait(WAIT_SLICE_S) and not watch.ended.is_set():
            agents_lost = [f"node agent on {h} has exited" for h in agents.lost()]
            radios_lost = [f"emulator for {n} exited during the run" for n, alive in radios.alive().items() if not alive]
            if agents_lost or radios_lost:
                watch.lose("; ".join(agents_lost + radios_lost), "agent_lost" if agents_lost else "emulator_exited")

    def reached(agent):
        try:
            return node(agent)
        except AgentLost as e:
            return e

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
        return agents.each(hosts, reached)
    finally:
        done.set()
        poller.join()
