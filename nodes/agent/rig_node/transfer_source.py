"""The rig transfer's sending side (rig_transfer.py source): connections that start together at a
start time (given, or read once held), send a volume or for a duration, and report each
subflow's life and samples; rig_transfer.py documents its options and report."""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import sys
import threading
import time

from rig_node import linkloss, mptcp_info, pathpolicy, pm_events
from rig_node.mptcp_info import stream_socket
from rig_node.stopping import STOPPED_ERROR, Stopped, start_thread, wait_readable

CHUNK = 256 * 1024
PR_SET_TIMERSLACK = 29  # prctl(2)
# SCHED_FIFO priority of a connection's thread from its sleep until T0 to the end of connect():
# above the emulated rig's radio emulators (rig/rigs/emulated/radio.py, realtime_priority 10).
START_PRIORITY = 20


class Connection:
    """One sending connection as the sampler sees it: its socket once connected, its samples.
    The lock keeps a sample from reading a socket that is being closed (its fd may be reused)."""

    def __init__(self, index: int, tcp: bool):
        self.index, self.tcp = index, tcp
        self.sock: socket.socket | None = None
        self.names: tuple[str, str] | None = None  # (local, remote): a TCP socket has none once closed
        self.lock = threading.Lock()
        self.rows: list[list] = []
        # Its socket exists and its thread waits for the start (or it failed before): a held source's
        # socket is made only once released, an unheld one's before the start.
        self.ready = threading.Event()
        self.paths: frozenset[str] = frozenset()  # subflows it must have: LOCAL, or LOCAL>REMOTE
        self.join_wait_s = 0.0
        self.events: pm_events.Listener | None = None

    def await_paths(self, local: str, started_at: float) -> None:
        """Until every one of `paths` has an established subflow on this connection (its first
        subflow's local end `local`), at most join_wait_s after its start."""
        if not self.paths or self.events is None:
            return

        def joined(events: list[dict]) -> bool:
            up = pm_events.established(pm_events.of_connection(events, local))
            ends = {(a.rsplit(":", 1)[0], b.rsplit(":", 1)[0]) for a, b in up}
            return all(any(f"{a}>{b}" == path or a == path for a, b in ends) for path in self.paths)
        self.events.wait_for(joined, started_at + self.join_wait_s - time.time())

    def sample(self) -> list[mptcp_info.Subflow]:
        with self.lock:  # the rows too: the final sample must stay the last row
            if self.sock is None:
                return []
            try:
                subflows = mptcp_info.subflows(self.sock, mptcp=not self.tcp, names=self.names)
            except OSError:  # closing, or subflows changed twice while read: the next round has it
                return []
            t = round(time.time(), 6)  # after: the read may wait for the socket's lock (a send in progress)
            for f in subflows:
                if f.bytes_sent > 0:  # else a join still in SYN_SENT, or one that never got through
                    self.rows.append([t, f.local, f.remote, f.bytes_acked, f.bytes_sent, f.bytes_retrans,
                                      round(f.rtt_us / 1000, 3), f.snd_cwnd, f.snd_ssthresh])
        return subflows

    def close(self, s: socket.socket) -> None:
        with self.lock:
            self.sock = None
            s.close()


class Sampler:
    """Samples every connection's subflows every `period_s` from `start` on (a grid: a late round
    skips, never bunches), and feeds each round to the loss-aware policy when there is one, with
    its paths' link counters (`links`: address -> rig_node.linkloss source) for the link measure."""

    def __init__(self, conns: list[Connection], period_s: float, start: float,
                 policy: pathpolicy.LossAware | None, endpoints: pathpolicy.Endpoints | None,
                 links: dict | None = None):
        self.conns, self.period_s, self.start = conns, period_s, start
        self.policy, self.endpoints, self.links = policy, endpoints, dict(links or {})
        self.switches: list[dict] = []
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = start_thread(self._loop)

    def _loop(self) -> None:
        if self.period_s <= 0:  # sampling off: the senders' final samples only
            return
        k = 1
        while not self._stop.wait(max(0.0, self.start + k * self.period_s - time.time())):
            try:
                self._round()
            except Exception as e:  # a bug here must show in the report, not end sampling silently
                self.error = self.error or f"sampler: {type(e).__name__}: {e}"
                return
            k = max(k + 1, int((time.time() - self.start) / self.period_s) + 1)

    def _round(self) -> None:
        t = time.time()
        samples = [pathpolicy.Sample((c.index, f.local, f.remote), f.local.rsplit(":", 1)[0], f.bytes_sent,
                                     f.bytes_retrans, f.bytes_acked, f.state == mptcp_info.TCP_ESTABLISHED,
                                     f.snd_ssthresh != mptcp_info.INFINITE_SSTHRESH)
                   for c in self.conns for f in c.sample()]
        if self.policy is not None and self.error is None:
            links = {a: src.read() for a, src in self.links.items()}
            self._apply(self.policy.observe(t, samples, links))

    def _apply(self, switches: list[pathpolicy.Switch]) -> None:
        for sw in switches:
            entry = sw.to_json()
            try:
                self.endpoints.apply(sw)
            except (OSError, RuntimeError) as e:
                entry["error"] = str(e)
                self.error = self.error or f"loss-aware policy: {e}"
            self.switches.append(entry)
            # the run's log (logs/<sender>.stderr): one line per switch, as it happens
            print(f"{entry['t']:.3f} loss-aware: {entry['address']} {entry['action']} "
                  f"(loss {entry.get('loss') if entry.get('loss') is None else round(entry['loss'], 5)})"
                  + (f" failed: {entry['error']}" if "error" in entry else ""), file=sys.stderr, flush=True)

    def stop(self) -> None:
        """Stops sampling and restores every path the policy holds backup."""
        self._stop.set()
        self._thread.join()
        if self.policy is not None:
            self._apply(self.policy.release(time.time()))


def _exact_timers() -> None:
    """Timer slack of 1 ns for this thread and the threads it starts: a sleep until T0 ends at
    T0, not up to 50 us after it (a normal task's default slack)."""
    try:
        ctypes.CDLL(None).prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl (not Linux): the default slack
        pass


def _sleep_until(at: float) -> None:
    """Sleeps until the wall clock reads `at`, without spinning. The rig's sources all start at
    one T0 on a host with fewer cores than sources: a source spinning the last ms holds a core
    another source needs at T0, and a thread woken by another (an event set at T0) must first
    win the interpreter's lock from the thread that woke it. So the thread that connects sleeps
    itself, alone in its process at T0 (the others are blocked), and nothing else is due then."""
    while (left := at - time.time()) > 0:
        time.sleep(left)


@contextlib.contextmanager
def _start_priority(on: bool):
    """This thread at SCHED_FIFO START_PRIORITY inside the block (on, and where permitted; else as
    it is). At T0 a source's SYN wakes the radio emulators, which run at real-time priority: at
    normal priority the sources that had not reached connect() yet waited for them (0.1-0.3 ms
    a source on the emulated rig's 2 cores). The block holds no CPU but from the wake-up to the
    SYN: connect() sleeps until the handshake is done."""
    before = None
    if on:
        try:
            before = os.sched_getscheduler(0), os.sched_getparam(0)  # 0: this thread
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(START_PRIORITY))
        except (OSError, AttributeError):  # unprivileged, or no real-time scheduling here
            before = None
    try:
        yield
    finally:
        if before is not None:
            os.sched_setscheduler(0, *before)


class Start:
    """A source's start time: given (--at, or None: at once), or held until released (--hold)."""

    def __init__(self, at: float | None, held: bool):
        self.at, self.held = at, held
        self.known = threading.Event()
        if not held:
            self.known.set()

    def release(self, at: float | None) -> None:
        """None: never released (the connections end without connecting)."""
        self.at = at
        self.known.set()

    @property
    def timed(self) -> bool:
        return self.held or self.at is not None


def _read_release() -> float | None:
    """A held source's start time: one line on stdin; None at end of input or on a bad line."""
    wait_readable(sys.stdin.fileno())  # a stop while held is seen here, whenever it came
    try:
        return float(sys.stdin.readline())
    except ValueError:
        return None


def _send(target: str, port: int, bind: str | None, cc: str | None, volume: int | None,
          seconds: float | None, start: Start, conn: Connection, result: dict) -> None:
    """A connection's thread."""
    s = None
    try:
        if not start.held:
            s = _new_socket(conn.tcp, cc)
            conn.ready.set()
        start.known.wait()
        at = start.at
        if start.held:
            if at is None:
                raise OSError("the source was never released")
            # Only now: the socket takes the path manager's limits in force when it is created,
            # and a held source was started under the run before's path settings.
            s = _new_socket(conn.tcp, cc)
            conn.ready.set()
        if bind:
            s.bind((bind, 0))
        with _start_priority(start.timed):
            if at is not None:  # the socket is ready before the start: at the start there is only connect()
                _sleep_until(at)
            result["started_at"] = time.time()  # the SYN leaves within this connect()
            until = result["started_at"] + seconds if seconds is not None else None
            s.connect((target, port))
        result["local"] = "%s:%d" % s.getsockname()[:2]
        result["connected_at"] = time.time()
        conn.names = (result["local"], "%s:%d" % s.getpeername()[:2])
        conn.sock = s
        data = memoryview(bytes(CHUNK))
        sent = 0
        while (volume is not None and sent < volume) or (until is not None and time.time() < until):
            n = s.send(data[:min(CHUNK, volume - sent)] if volume is not None else data)
            sent += n
        result["bytes"] = sent
        result["sent_at"] = time.time()
        if not conn.tcp:
            if mptcp_info.is_mptcp(s):  # one that fell back to TCP will have no other path
                conn.await_paths(result["local"], result["started_at"])
            # again, as it may have fallen back while it waited; read while open: a fallen-back
            # socket's subflow is gone once closed
            result["mptcp"] = mptcp_info.is_mptcp(s)
        s.shutdown(socket.SHUT_WR)
        while s.recv(4096):  # the receiver closes once it has read everything
            pass
        result["closed_at"] = time.time()
        conn.sample()  # the final one: everything acknowledged
    except OSError as e:
        result["error"] = f"{type(e).__name__}: {e}"
    finally:
        conn.ready.set()
        if s is not None:
            conn.close(s)
        result["subflows"] = conn.rows


def _new_socket(tcp: bool, cc: str | None) -> socket.socket:
    s = stream_socket(tcp)
    if cc:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    # connect() waits as TCP does (the kernel's SYN retries): SYNs lost on a busy medium delay a
    # connection, the network's doing; a run that cannot succeed is ended by the rig's watch or
    # its run timeout, not by a limit of the source's
    return s


def source(target: str, port: int, bind: str | None, connections: int, volume: int | None, seconds: float | None,
           cc: str | None, at: float | None, tcp: bool = False, sample_s: float = 0.1,
           loss_aware: dict[str, float] | None = None, loss_window_s: float = 1.0, loss_hold_s: float | None = None,
           hold: bool = False, paths: tuple[str, ...] = (), join_wait_s: float = 5.0,
           loss_links: dict[str, str] | None = None) -> dict:
    policy = endpoints = None
    links = {a: linkloss.source(spec) for a, spec in (loss_links or {}).items()}
    if loss_aware:  # the endpoints are read before the start, not in it
        endpoints = pathpolicy.Endpoints()
        policy = pathpolicy.LossAware(loss_aware, loss_window_s, loss_hold_s, backup_at_start=endpoints.backup,
                                      measure="link" if links else "retransmissions")
    conns = [Connection(i, tcp) for i in range(connections)]
    listener, events_error = None, None
    if not tcp:
        try:
            listener = pm_events.Listener()
        except OSError as e:
            events_error = f"MPTCP events: {e}"
    for c in conns:
        c.paths, c.join_wait_s, c.events = frozenset(paths), join_wait_s, listener
    shares = [None] * connections if volume is None else \
        [volume // connections + (volume % connections if i == 0 else 0) for i in range(connections)]
    results: list[dict] = [{} for _ in range(connections)]
    _exact_timers()  # inherited by the threads below
    start = Start(at, hold)
    threads: list[threading.Thread] = []
    sampler, started, ready_at, stopped = None, None, None, False
    try:
        for i in range(connections):  # each prepares its socket, then sleeps until the start
            threads.append(start_thread(_send, target, port, bind, cc, shares[i], seconds, start, conns[i], results[i]))
        if hold:
            start.release(_read_release())
        for c in conns:
            c.ready.wait()
        started = time.time() if start.at is None else start.at
        # Started before T0, its first round a period after it: nothing of it runs at the start.
        sampler = Sampler(conns, sample_s, started, policy, endpoints, links)
        # Every socket prepared, every thread about to wait for its start: the runner sizes its lead from this.
        ready_at = time.time()
        for t in threads:
            t.join()
    except Stopped:  # by the agent: the run ended early or timed out; what was sampled is reported
        stopped = True
    finally:
        if sampler is not None:  # none yet: nothing was switched
            sampler.stop()  # also on SIGTERM: no path stays backup after the program
        if listener is not None:
            events = listener.stop()
            events_error = listener.error
            for r in results:
                if "local" in r:
                    r["events"] = pm_events.of_connection(events, r["local"])
    if stopped:  # connections still sending: each as it is now (its thread may change it meanwhile)
        results = [{"subflows": list(c.rows), **r} for r, c in zip(results, conns)]
    # The transfer starts with the first connection's SYN (the threads' own start-up is not in it).
    doc = {"started_at": min((r["started_at"] for r in results if "started_at" in r), default=started),
           "ready_at": ready_at, "connections": results, "switches": sampler.switches if sampler else []}
    if events_error:
        doc["events_error"] = events_error
    errors = ([STOPPED_ERROR] if stopped else []) + [r["error"] for r in results if "error" in r]
    errors += [sampler.error] if sampler and sampler.error else []
    if errors:
        doc["error"] = errors[0]
    if stopped:
        doc["stopped"] = True
    return doc
