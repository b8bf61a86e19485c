"""The agent's closed set of requests. Each op checks every field of its request before it does
anything; a request outside the set, or with a field that fails its check, is refused."""

from __future__ import annotations

import platform
import time

from rig_node import facts, routing, sampling, sysctls, validate as v
from rig_node.programs import Launch, argv_for, stop_strays
from rig_node.validate import Refused


class Agent:
    def __init__(self) -> None:
        self.sampler: sampling.Sampler | None = None
        self.launches: dict[str, Launch] = {}
        self.handlers = {
            "hello": self.hello, "paths": self.paths, "sysctl": self.sysctl, "facts": self.facts, "clock": self.clock,
            "launch": self.launch, "wait": self.wait, "alive": self.alive, "stop": self.stop,
            "stop_strays": self.stop_strays, "listening": self.listening, "sample": self.sample, "unsample": self.unsample, "mib": self.mib,
        }

    def handle(self, req: object) -> dict:
        if not isinstance(req, dict):
            raise Refused("a request is a JSON object")
        op = req.get("op")
        handler = self.handlers.get(op) if isinstance(op, str) else None
        if handler is None:
            raise Refused(f"op {op!r} is not one the agent answers ({', '.join(sorted(self.handlers))}, quit)")
        return handler(req)

    def hello(self, req: dict) -> dict:
        v.only(req, {"op"}, "hello")
        return {"host": platform.node(), "time": time.time(), "python": platform.python_version()}

    def paths(self, req: dict) -> dict:
        """Addresses, tables, rules, routes, MPTCP endpoints and limits, and node sysctls."""
        v.only(req, {"op", "plan"}, "paths")
        routing.apply(routing.parse(v.need(req, "plan", "paths")))
        return {}

    def sysctl(self, req: dict) -> dict:
        v.only(req, {"op", "values"}, "sysctl")
        sysctls.apply(sysctls.checked(v.mapping(v.need(req, "values", "sysctl"), "sysctl.values", 32)))
        return {}

    def facts(self, req: dict) -> dict:
        v.only(req, {"op"}, "facts")
        return facts.kernel_facts()

    def clock(self, req: dict) -> dict:
        v.only(req, {"op"}, "clock")
        return facts.clock_offset()

    def launch(self, req: dict) -> dict:
        """Start a traffic program at `at` (unix time; null = now), replacing one under the same key."""
        v.only(req, {"op", "key", "program", "args", "at"}, "launch")
        key = v.key(v.need(req, "key", "launch"), "launch.key")
        argv = argv_for(v.need(req, "program", "launch"), req.get("args", {}))
        at = req.get("at")
        if at is not None:
            now = time.time()
            at = v.number(at, "launch.at", now - 60, now + 3600)
        old = self.launches.get(key)
        if old:
            old.stop()
        self.launches[key] = Launch(argv, at)
        return {}

    def _launch(self, req: dict, what: str) -> tuple[str, Launch | None]:
        key = v.key(v.need(req, "key", what), f"{what}.key")
        return key, self.launches.get(key)

    def wait(self, req: dict) -> dict:
        v.only(req, {"op", "key", "timeout"}, "wait")
        key, launch = self._launch(req, "wait")
        if launch is None:
            raise Refused(f"wait: nothing was launched as {key!r}")
        timeout = v.number(req.get("timeout", 3600), "wait.timeout", 0, 86400)
        if not launch.done.wait(timeout):
            launch.stop()
            launch.done.wait(5)
            return {**(launch.result or {}), "timed_out": True}
        return launch.result or {}

    def alive(self, req: dict) -> dict:
        v.only(req, {"op", "key"}, "alive")
        _, launch = self._launch(req, "alive")
        return {"alive": bool(launch and not launch.done.is_set())}

    def stop(self, req: dict) -> dict:
        """Stop what was launched under `key` (TERM, then KILL); nothing else can be stopped."""
        v.only(req, {"op", "key"}, "stop")
        key, launch = self._launch(req, "stop")
        if launch:
            del self.launches[key]
            launch.stop()
            launch.done.wait(5)
        return {}

    def stop_strays(self, req: dict) -> dict:
        """Stop the traffic programs an earlier agent of this node left running."""
        v.only(req, {"op"}, "stop_strays")
        return {"stopped": stop_strays()}

    def listening(self, req: dict) -> dict:
        v.only(req, {"op", "port"}, "listening")
        return {"listening": sampling.listening(v.integer(v.need(req, "port", "listening"), "listening.port", 1, 65535))}

    def sample(self, req: dict) -> dict:
        """Start sampling the interfaces' counters (hz) and the TCP sockets (ss_hz, 0 = off)."""
        v.only(req, {"op", "ifaces", "hz", "ss_hz"}, "sample")
        ifaces = [v.ifname(i, "sample.ifaces") for i in v.listed(v.need(req, "ifaces", "sample"), "sample.ifaces", 16)]
        hz = v.number(req.get("hz", 20), "sample.hz", 0.1, 1000)
        ss_hz = v.number(req.get("ss_hz", 0), "sample.ss_hz", 0, 100)
        if self.sampler:
            self.sampler.stop()
        self.sampler = sampling.Sampler(ifaces, hz, ss_hz)
        return {}

    def unsample(self, req: dict) -> dict:
        v.only(req, {"op"}, "unsample")
        sampler, self.sampler = self.sampler, None
        rows = sampler.stop() if sampler else []
        return {"samples": rows, "ss": sampler.ss if sampler else []}

    def mib(self, req: dict) -> dict:
        v.only(req, {"op"}, "mib")
        return sampling.read_mib()

    def shutdown(self) -> None:
        for launch in self.launches.values():
            launch.stop()
        if self.sampler:
            self.sampler.stop()
