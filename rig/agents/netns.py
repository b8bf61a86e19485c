"""Transport to emulated hosts: each host is the network namespace `<prefix>-<host>`.

Node agents are forked into their namespaces by one Python that imported the agent once
(forks.py): ten agents starting side by side cost ten interpreters' imports otherwise.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

from rig.core import process
from rig.core.errors import RigError
from rig.core.repo import NODE_AGENT_DIR

AGENT = NODE_AGENT_DIR / "rig_agent.py"
FORKS = Path(__file__).resolve().parent / "forks.py"


class NetnsTransport:
    name = "netns"

    def __init__(self, prefix: str, log_dir: Path | None = None, node_dir: Path | None = None):
        self.prefix = prefix
        # Each agent reads its node's configuration (its radios) from <node_dir>/<host>.json, as a
        # lab node's reads /etc/rig/node.json; None: the radios are unknown, routing is refused.
        self.node_dir = node_dir
        self._lock = threading.Lock()
        self._spawner: Spawner | None = None
        self.log_dir = log_dir  # each agent logs the requests it refused to <log_dir>/<host>.log
        if log_dir:
            log_dir.mkdir(parents=True, exist_ok=True)

    def netns(self, host: str) -> str:
        return f"{self.prefix}-{host}"

    def argv(self, host: str, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.netns(host), *argv]

    def start_agent(self, host: str) -> "ForkedAgent":
        """The agent of `host`, forked by this transport's spawner (started with the first agent,
        and again once its agents have all ended)."""
        log = str(self.log_dir / f"{host}.log") if self.log_dir else None
        node = str(self.node_dir / f"{host}.json") if self.node_dir else None
        with self._lock:
            for _ in range(2):  # a spawner exits once its last agent has: the next one's is new
                if self._spawner is None or self._spawner.ended:
                    self._spawner = Spawner()
                agent = self._spawner.fork(self.netns(host), log, node)
                if agent is not None:
                    return agent
            raise RigError(f"node agent on {host}: the agents' spawner exited: {self._spawner.stderr_tail()}")


class Spawner:
    """One forks.py process: forks agents on request and reports how each ended."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # -u: unbuffered, the agents speak line by line; -I: ignore the caller's PYTHON* env; -S: no
        # site packages (the agent is standard library only).
        self._proc = subprocess.Popen([sys.executable, "-u", "-I", "-S", str(FORKS), str(theirs.fileno())],
                                      pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE)
        theirs.close()
        self._sock = ours
        self._changed = threading.Condition()
        self._reply: dict | None = None
        self.status: dict[int, int] = {}  # pid -> how the agent ended (a returncode)
        self.ended = False
        threading.Thread(target=self._read, daemon=True).start()

    def fork(self, netns: str, log: str | None, node: str | None) -> "ForkedAgent | None":
        """An agent in `netns` reading its node's configuration `node` (None: this spawner has
        exited). One request at a time."""
        pipes = [os.pipe() for _ in range(3)]  # stdin, stdout, stderr: (read, write)
        theirs = [pipes[0][0], pipes[1][1], pipes[2][1]]
        ours = [pipes[0][1], pipes[1][0], pipes[2][0]]
        try:
            with self._changed:
                self._reply = None
                try:
                    socket.send_fds(self._sock, [json.dumps({"netns": netns, "log": log, "node": node}).encode()], theirs)
                except OSError:
                    self.ended = True
                while self._reply is None and not self.ended:
                    self._changed.wait()
                reply = self._reply
        finally:
            for fd in theirs:
                os.close(fd)
        if reply is None or "error" in reply:
            for fd in ours:
                os.close(fd)
            if reply is None:
                return None
            raise RigError(f"node agent in {netns} could not be started: {reply['error']}")
        return ForkedAgent(self, reply["pid"], *ours)

    def _read(self) -> None:
        while True:
            try:
                data = self._sock.recv(65536)
            except OSError:
                data = b""
            with self._changed:
                if not data:
                    self.ended = True
                    self._changed.notify_all()
                    break
                doc = json.loads(data)
                if "exited" in doc:
                    self.status[doc["exited"]] = doc["status"]
                else:
                    self._reply = doc
                self._changed.notify_all()
        self._sock.close()
        self._proc.wait()

    def returncode(self, pid: int, timeout: float | None = 0.0) -> int | None:
        """How the agent `pid` ended, waiting up to `timeout` (None: until it has); None: it runs."""
        with self._changed:
            self._changed.wait_for(lambda: pid in self.status or self.ended, timeout)
            if pid in self.status:
                return self.status[pid]
            if self.ended and not process.running(pid):  # its spawner was killed before it
                return -signal.SIGKILL
            return None

    def stderr_tail(self) -> str:
        try:
            return self._proc.stderr.read().decode(errors="replace")[-300:].strip() or "no message"
        except (OSError, ValueError):
            return "no message"


class ForkedAgent:
    """A forked agent, with what the controller uses of a Popen (rig.agents.client)."""

    def __init__(self, spawner: Spawner, pid: int, stdin: int, stdout: int, stderr: int):
        self._spawner, self.pid, self.returncode = spawner, pid, None
        self.stdin = open(stdin, "w", buffering=1)
        self.stdout = open(stdout, "r")
        self.stderr = open(stderr, "r")

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._spawner.returncode(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self._spawner.returncode(self.pid, timeout)
            if self.returncode is None:
                raise subprocess.TimeoutExpired(f"node agent {self.pid}", timeout or 0.0)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
