"""The traffic programs a request may start, built from checked arguments (never a command line
from the request), and the processes started: at a scheduled instant, output kept for `wait`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

from rig_node import forked, validate as v

SPIN_S = 0.002  # sleep until this close to a scheduled start, then spin for precision
STOP_GRACE_S = 2.0  # TERM, then KILL after this long


def iperf3(args: dict) -> list[str]:
    """iperf3 3.12 as a server or a client; `mptcp` wraps it in mptcpize (it has no --mptcp)."""
    v.only(args, {"mode", "mptcp", "port", "target", "bind", "parallel", "bytes", "seconds", "cc",
                  "connect_timeout_ms", "one_off"}, "iperf3")
    mode = v.one_of(v.need(args, "mode", "iperf3"), "iperf3.mode", ("server", "client"))
    wrap = ["mptcpize", "run"] if v.boolean(args.get("mptcp", True), "iperf3.mptcp") else []
    port = ["-p", str(v.integer(args.get("port", 5201), "iperf3.port", 1024, 65535))]
    if mode == "server":
        one = ["-1"] if v.boolean(args.get("one_off", False), "iperf3.one_off") else []
        return [*wrap, "iperf3", "-s", *port, *one]
    argv = [*wrap, "iperf3", "-c", v.ipv4(v.need(args, "target", "iperf3"), "iperf3.target"), *port]
    if "bind" in args:
        argv += ["-B", v.ipv4(args["bind"], "iperf3.bind")]
    argv += ["-P", str(v.integer(args.get("parallel", 1), "iperf3.parallel", 1, 128))]
    if ("bytes" in args) == ("seconds" in args):
        raise v.Refused("iperf3: give exactly one of bytes and seconds")
    if "bytes" in args:
        argv += ["-n", str(v.integer(args["bytes"], "iperf3.bytes", 1, 10**12))]
    else:
        argv += ["-t", str(v.integer(args["seconds"], "iperf3.seconds", 1, 86400))]
    if "cc" in args:
        argv += ["-C", v.cc_name(args["cc"], "iperf3.cc")]
    timeout = v.integer(args.get("connect_timeout_ms", 5000), "iperf3.connect_timeout_ms", 1, 600000)
    return argv + ["-J", "--connect-timeout", str(timeout)]


TRANSFER = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "rig_transfer.py")


def transfer(args: dict) -> list[str]:
    """The rig's own MPTCP transfer (rig_transfer.py), timed where the data arrives. A source
    samples its subflows every `sample_ms`; `loss_aware` ({local address: loss fraction}) with
    `loss_window_s` and `loss_hold_s` turns on the loss-aware path policy (rig_node.pathpolicy);
    `loss_links` ({local address: its link's counters, {"stats": PATH, "station": NAME} or
    {"qdisc": IFACE}}) makes it measure each path's link loss (rig_node.linkloss).
    A source with `hold` starts and waits for its start time (the `release` op); `paths` (local
    addresses) are the paths each of its connections must have a subflow on, which a connection
    that sent everything waits for up to `join_wait_s` after its start."""
    v.only(args, {"mode", "mptcp", "port", "connections", "target", "bind", "bytes", "seconds", "cc", "at", "hold", "timeout_s",
                  "interval_ms", "sample_ms", "loss_aware", "loss_window_s", "loss_hold_s", "paths", "join_wait_s", "loss_links"}, "transfer")
    mode = v.one_of(v.need(args, "mode", "transfer"), "transfer.mode", ("sink", "source"))
    # The command line the program takes; the agent runs it in a fork of itself (rig_node.forked),
    # so the interpreter's part is never started (-S: no site packages, stdlib only).
    argv = [sys.executable, "-I", "-S", TRANSFER, mode,
            "--port", str(v.integer(args.get("port", 5301), "transfer.port", 1024, 65535)),
            "--connections", str(v.integer(args.get("connections", 1), "transfer.connections", 1, 128))]
    if not v.boolean(args.get("mptcp", True), "transfer.mptcp"):
        argv.append("--tcp")
    if mode == "sink":
        return argv + ["--timeout", str(v.number(args.get("timeout_s", 300), "transfer.timeout_s", 1, 86400)),
                       "--interval-ms", str(v.number(args.get("interval_ms", 100), "transfer.interval_ms", 10, 10000))]
    argv += ["--target", v.ipv4(v.need(args, "target", "transfer"), "transfer.target")]
    if "bind" in args:
        argv += ["--bind", v.ipv4(args["bind"], "transfer.bind")]
    if ("bytes" in args) == ("seconds" in args):
        raise v.Refused("transfer: give exactly one of bytes and seconds")
    if "bytes" in args:
        argv += ["--bytes", str(v.integer(args["bytes"], "transfer.bytes", 1, 10**12))]
    else:
        argv += ["--seconds", str(v.number(args["seconds"], "transfer.seconds", 0.1, 86400))]
    if "cc" in args:
        argv += ["--cc", v.cc_name(args["cc"], "transfer.cc")]
    if "at" in args and args.get("hold"):
        raise v.Refused("transfer: give at most one of at and hold")
    if "at" in args:
        now = time.time()
        argv += ["--at", repr(v.number(args["at"], "transfer.at", now - 60, now + 3600))]
    if v.boolean(args.get("hold", False), "transfer.hold"):
        argv.append("--hold")
    if "sample_ms" in args:
        argv += ["--sample-ms", str(v.number(args["sample_ms"], "transfer.sample_ms", 10, 10000))]
    if "loss_aware" in args:
        thresholds = v.mapping(args["loss_aware"], "transfer.loss_aware", 8)
        if not thresholds:
            raise v.Refused("transfer.loss_aware: no address")
        argv += ["--loss-aware", *(f"{v.ipv4(a, 'transfer.loss_aware')}="
                                   f"{v.number(f, f'transfer.loss_aware.{a}', 1e-6, 1.0)!r}" for a, f in thresholds.items())]
    if "loss_links" in args:
        links = v.mapping(args["loss_links"], "transfer.loss_links", 8)
        if "loss_aware" not in args or set(args["loss_aware"]) - set(links):
            raise v.Refused("transfer.loss_links: give one for each loss_aware address")
        argv += ["--loss-link", *(f"{v.ipv4(a, 'transfer.loss_links')}={_link_source(s, f'transfer.loss_links.{a}')}"
                                  for a, s in links.items())]
    if args.get("paths"):
        argv += ["--paths", *(">".join(v.ipv4(x, "transfer.paths") for x in str(a).split(">", 1))
                              for a in v.listed(args["paths"], "transfer.paths", 16))]
    for key, flag, lo, hi in (("loss_window_s", "--loss-window-s", 0.1, 600), ("loss_hold_s", "--loss-hold-s", 0.1, 3600),
                              ("join_wait_s", "--join-wait-s", 0.0, 600)):
        if key in args:  # without loss_aware: checked, and without effect
            argv += [flag, str(v.number(args[key], f"transfer.{key}", lo, hi))]
    return argv


def _link_source(spec: object, where: str) -> str:
    """A link's counters as the transfer's --loss-link takes them: the emulated radio's stats log
    (an absolute path to a `.stats.jsonl`, and its station) or an interface's qdisc."""
    spec = v.mapping(spec, where, 2)
    if set(spec) == {"qdisc"}:
        return f"qdisc:{v.ifname(spec['qdisc'], where + '.qdisc')}"
    if set(spec) == {"stats", "station"}:
        path = spec["stats"]
        if not isinstance(path, str) or not path.startswith("/") or not path.endswith(".stats.jsonl") \
                or "/../" in path or ":" in path:
            raise v.Refused(f"{where}.stats: {path!r} is not an absolute path to a .stats.jsonl")
        return f"stats:{path}:{v.ifname(spec['station'], where + '.station')}"
    raise v.Refused(f"{where}: give qdisc, or stats and station")


PROGRAMS = {"iperf3": iperf3, "transfer": transfer}


def argv_for(program: object, args: object) -> list[str]:
    build = PROGRAMS.get(program) if isinstance(program, str) else None
    if build is None:
        raise v.Refused(f"program {program!r} is not one the rig starts ({', '.join(PROGRAMS)})")
    return build(v.mapping(args, "args", 16))


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # exited, not yet reaped: gone
    except (OSError, IndexError):
        return False


def terminate(pids: list[int], group: bool = False, grace_s: float = STOP_GRACE_S) -> None:
    """The agent's one way to stop processes (or, with `group`, their process groups): TERM, up
    to `grace_s` for them to exit, then KILL."""
    send = os.killpg if group else os.kill
    for sig in (signal.SIGTERM, signal.SIGKILL):
        left = [p for p in pids if _running(p)]
        for pid in left:
            try:
                send(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace_s
        while left and time.monotonic() < deadline:
            time.sleep(0.002)  # a transfer exits within a few ms of its TERM
            left = [p for p in left if _running(p)]
        if not left:
            return


class Launch:
    """A program started at a scheduled instant; its output is kept for `wait`.

    forked: the rig's transfer is run by a fork of this agent (rig_node.forked), which has it
    imported already, instead of a new Python: ~2 ms instead of 0.1-0.2 s of start-up per
    program, twice per pair and run (the start-up is in every run's T0 lead, and takes the CPU
    the runs' collection and storing need)."""

    def __init__(self, argv: list[str], at: float | None, forked: bool = False):
        self.argv, self.at, self.forked = argv, at, forked
        self.proc: subprocess.Popen | None = None
        self.child: forked.Child | None = None
        self.pid: int | None = None
        self.held = forked and "--hold" in argv
        self._forked = threading.Event()  # set once the program runs (or could not start)
        self.result: dict | None = None
        self.done = threading.Event()
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        if self.at is not None:
            while (left := self.at - time.time()) > SPIN_S:
                if self._cancelled.wait(min(left - SPIN_S, 0.05)):
                    break
            while time.time() < self.at and not self._cancelled.is_set():
                pass
        started = time.time()
        try:
            with self._lock:  # stop() sees either the cancellation before the start or the started pid
                if self._cancelled.is_set():
                    raise OSError("stopped before its start")
                if self.forked:
                    self.child = forked.start(self.argv[self.argv.index(TRANSFER) + 1:], stdin=self.held)
                    self.pid = self.child.pid
                else:
                    self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                 start_new_session=True)
                    self.pid = self.proc.pid
            self._forked.set()
            if self.child is not None:
                out, err, rc = self.child.communicate()
            else:
                out, err = self.proc.communicate()
                rc = self.proc.returncode
        except OSError as e:
            out, err, rc = b"", str(e).encode(), 127
        self._forked.set()
        self.result = {
            "started_at": started, "ended_at": time.time(), "rc": rc,
            "stdout": out.decode(errors="replace"), "stderr": err.decode(errors="replace")[-4000:],
        }
        self.done.set()

    def release(self, at: float) -> None:
        """A held transfer's start time (its stdin); it starts at `at` itself."""
        self._forked.wait(STOP_GRACE_S)
        if self.child is not None:
            self.child.write_line(repr(at))

    def stop(self) -> None:
        """Cancelled before its start, or stopped once started: never left running untracked
        (a launch and its stop, or two launches of a key, in one write)."""
        with self._lock:
            self._cancelled.set()
            pid = self.pid
        if pid is not None and not self.done.is_set() and _running(pid):
            terminate([pid], group=True)  # started in a session of its own


def _is_ours(cmdline: list[str], comm: str) -> bool:
    """A traffic program this agent's set starts: iperf3 (maybe under mptcpize), rig_transfer.py,
    or the transfer forked from an agent (named by rig_node.forked: its command line is the agent's)."""
    return (bool(cmdline) and (os.path.basename(cmdline[0]) == "iperf3" or TRANSFER in cmdline)) or comm in forked.NAMES


def stop_strays() -> list[int]:
    """Traffic programs in this node's network namespace that no live agent owns (what a killed
    agent left running, e.g. an iperf3 server holding its port): stopped, TERM then KILL."""
    me, mine = os.getpid(), os.readlink("/proc/self/ns/net")
    strays = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmdline = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
            with open(f"/proc/{d}/comm") as f:
                comm = f.read().strip()
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            if _is_ours(cmdline, comm) and ppid != me and os.readlink(f"/proc/{d}/ns/net") == mine:
                strays.append(int(d))
        except (OSError, ValueError):
            continue
    terminate(strays)
    return strays
