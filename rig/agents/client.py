"""Controller side of the node agents (nodes/agent/rig_agent.py): one long-lived process per host."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Callable, TypeVar

from rig.core import process
from rig.core.errors import RigError
from rig.core.repo import node_package
from rig.agents.transport import Transport

node_package()
from rig_node import PROTOCOL  # noqa: E402 - the version of this checkout's agent

T = TypeVar("T")


class AgentLost(RigError):
    """A node agent exited or stopped answering: the node rebooted, its SSH session broke, or the
    process was killed. The campaign runner records the run as failed and restores the agent."""


class AgentMismatch(RigError):
    """The node's agent speaks another protocol version than this controller's (a node provisioned
    from another checkout): it is not used."""


class AgentClient:
    def __init__(self, transport: Transport, host: str):
        self.host = host
        self._lock = threading.Lock()
        self._lost = False
        self._over_ssh = transport.name == "ssh"
        self._proc = transport.start_agent(host)
        try:
            hello = self.request("hello")
        except Exception:
            self.discard()
            raise
        theirs = hello.get("protocol", 1)  # an agent from before the versions: 1
        if theirs != PROTOCOL:
            self.close()
            raise AgentMismatch(f"{host}: its node agent speaks protocol {theirs}, this controller {PROTOCOL}: "
                                f"provision the node from this checkout (the node role) and start again")

    def request(self, op: str, **kw) -> dict:
        with self._lock:
            line = self._exchange(json.dumps({"op": op, **kw}) + "\n", op)
        reply = json.loads(line)
        if "error" in reply:
            raise RigError(f"{self.host}: {op}: {reply['error']}")
        return reply

    def batch(self, *requests: dict) -> list[dict]:
        """Requests ({"op": ..., fields}) in order in one exchange: one round trip (over SSH on
        the lab) instead of one per request. Their replies, in order."""
        return self.request("batch", requests=list(requests))["replies"]

    # -- connection lifecycle: a lost agent is detected here and replaced by AgentPool -----------

    def _exchange(self, message: str, op: str) -> str:
        """Send one request line, return the reply line; AgentLost if the agent (or, on the lab,
        its SSH session) is gone before or while answering."""
        if not self.alive():
            raise AgentLost(f"node agent on {self.host} has exited{self._exit_note()}")
        try:
            self._proc.stdin.write(message)
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        except (OSError, ValueError):  # a broken pipe, or pipes already closed by discard()
            line = ""
        if not line:
            self._lost = True  # even if the process has not finished exiting yet
            try:
                self._proc.wait(timeout=1)  # for its exit status in the reason
            except subprocess.TimeoutExpired:
                pass
            raise AgentLost(f"node agent on {self.host} did not answer {op!r}{self._exit_note()}")
        return line

    def alive(self) -> bool:
        """Whether the agent process (on the lab: its SSH session) still runs; no round trip."""
        return not self._lost and self._proc.poll() is None

    def _exit_note(self) -> str:
        rc = self._proc.returncode
        if rc is None:
            return ""
        if rc < 0 and -rc in signal.valid_signals():
            how = f"killed by {signal.Signals(-rc).name}"
        else:
            how = "SSH session lost" if rc == 255 and self._over_ssh else f"exit status {rc}"
        try:
            err = self._proc.stderr.read()[-300:].strip()
        except (OSError, ValueError):
            err = ""
        return f" ({how}{': ' + err if err else ''})"

    def discard(self) -> None:
        """Let go of a lost agent: kill what is left of its process and close its pipes."""
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        for pipe in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            try:
                pipe.close()
            except OSError:
                pass

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                self.request("quit")
            except (RigError, OSError, ValueError):
                pass
            process.terminate([self._proc], grace_s=3, term=False)  # it was asked to quit


class AgentPool:
    """The agents of a set of hosts, with parallel fan-out (SSH round trips add up otherwise)."""

    def __init__(self, transport: Transport, hosts: list[str]):
        self.transport = transport
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
        """fn on every host's agent at once. Returns when all have returned, also when one raised
        (its error is raised then): no request is left under way on an agent the caller goes
        on to use (restoring the rig after a lost agent waited on the others' requests)."""
        futures = {h: self._pool.submit(fn, self.agents[h]) for h in hosts}
        wait(futures.values())
        return {h: f.result() for h, f in futures.items()}

    # -- lost agents ---------------------------------------------------------------------------

    def lost(self) -> list[str]:
        """Hosts whose agent has exited or stopped answering (a poll per agent: no round trip)."""
        return [h for h, a in self.agents.items() if not a.alive()]

    def restart_lost(self) -> list[str]:
        """Start a new agent on every host that lost its own; raises RigError (AgentLost) if one
        does not answer, leaving the others restarted. Returns the hosts restarted."""
        hosts = self.lost()
        errors = []
        for host, result in zip(hosts, self._pool.map(self._restart, hosts)):
            if isinstance(result, Exception):
                errors.append(str(result))
        if errors:
            raise AgentLost("; ".join(errors))
        return hosts

    def _restart(self, host: str) -> AgentClient | Exception:
        self.agents[host].discard()
        try:
            fresh = AgentClient(self.transport, host)
        except (RigError, OSError) as e:  # the discarded client stays: the host is still lost
            return AgentLost(f"node agent on {host} could not be restarted: {e}")
        self.agents[host] = fresh
        # What the lost agent had launched runs in sessions of its own and outlives it (an iperf3
        # server holding its port, a client still sending); a rebooted node has nothing left.
        try:
            fresh.request("stop_strays")
        except AgentLost as e:
            return e
        except RigError:
            pass  # an agent that predates the request: nothing to stop but what the next runs replace
        return fresh

    def close(self) -> None:
        list(self._pool.map(lambda a: a.close(), list(self.agents.values())))
        self._pool.shutdown()

    def __enter__(self) -> "AgentPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
