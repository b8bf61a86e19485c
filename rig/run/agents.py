"""Controller side of the node agents (nodes/agent/rig_agent.py): one long-lived process per host."""

from __future__ import annotations

import json
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, TypeVar

from rig.errors import RigError
from rig.transport import Transport

T = TypeVar("T")


class AgentClient:
    def __init__(self, transport: Transport, host: str):
        self.host = host
        self._lock = threading.Lock()
        self._proc = subprocess.Popen(
            transport.agent_argv(host), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, bufsize=1,
        )
        self.request("hello")

    def request(self, op: str, **kw) -> dict:
        with self._lock:
            if self._proc.poll() is not None:
                raise RigError(f"node agent on {self.host} has exited: {self._proc.stderr.read()[-500:]}")
            self._proc.stdin.write(json.dumps({"op": op, **kw}) + "\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        if not line:
            raise RigError(f"node agent on {self.host} did not answer {op!r}: {self._proc.stderr.read()[-500:]}")
        reply = json.loads(line)
        if "error" in reply:
            raise RigError(f"{self.host}: {op}: {reply['error']}")
        return reply

    def sh(self, script: str, timeout: float = 60, check: bool = True) -> dict:
        r = self.request("sh", script=script, timeout=timeout)
        if check and r["rc"] != 0:
            raise RigError(f"{self.host}: command failed ({r['rc']}): {r['err'].strip()[-400:]}")
        return r

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                self.request("quit")
            except (RigError, OSError, ValueError):
                pass
            try:
                self._proc.wait(3)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


class AgentPool:
    """The agents of a set of hosts, with parallel fan-out (SSH round trips add up otherwise)."""

    def __init__(self, transport: Transport, hosts: list[str]):
        self._pool = ThreadPoolExecutor(max_workers=max(4, len(hosts)))
        self.agents: dict[str, AgentClient] = {}
        try:
            for host, agent in zip(hosts, self._pool.map(lambda h: AgentClient(transport, h), hosts)):
                self.agents[host] = agent
        except Exception:
            self.close()
            raise

    def __getitem__(self, host: str) -> AgentClient:
        return self.agents[host]

    def each(self, hosts: list[str], fn: Callable[[AgentClient], T]) -> dict[str, T]:
        futures = {h: self._pool.submit(fn, self.agents[h]) for h in hosts}
        return {h: f.result() for h, f in futures.items()}

    def close(self) -> None:
        list(self._pool.map(lambda a: a.close(), list(self.agents.values())))
        self._pool.shutdown()

    def __enter__(self) -> "AgentPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
