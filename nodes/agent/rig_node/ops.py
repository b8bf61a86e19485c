"""The agent's closed set of requests. Each op checks every field of its request before it does
anything; a request outside the set, or with a field that fails its check, is refused."""

from __future__ import annotations

import platform
import subprocess
import threading
import time

from rig_node import PROTOCOL, ccparams, facts, plan as plans, radios, routing, sampling, stall, sysctls, timeline, validate as v
from rig_node.programs import Launch, argv_for, stop_strays
from rig_node.validate import Refused


# The longest a `wait` may block the agent: the longest run a campaign can give (its duration,
# rig.model.campaign, plus its run timeout, rig.model.spec.Limits) and the sink's grace, with room.
MOST_WAIT_S = 6 * 3600


class Agent:
    def __init__(self, node: radios.Node | radios.Unknown | None = None) -> None:
        # The node's radios, from its own configuration (never from a request): read once.
        self.node = radios.load() if node is None else node
        self.sampler: sampling.Sampler | None = None
        self.launches: dict[str, Launch] = {}
        self.plan: plans.Plan | None = None  # the routing plan last applied
        self.view: radios.View | None = None  # the management plane, as last queried
        # What this agent applied, as the kernel holds it: the next plan is applied from it
        # without queries (routing.Known). The timeline's thread changes it too: one at a time.
        self.known: routing.Known | None = None
        self.routing_lock = threading.Lock()
        self.timeline: timeline.Timeline | None = None
        self.handlers = {
            "hello": self.hello, "paths": self.paths, "sysctl": self.sysctl, "facts": self.facts, "clock": self.clock,
            "launch": self.launch, "release": self.release, "wait": self.wait, "alive": self.alive, "stop": self.stop,
            "stop_strays": self.stop_strays, "evidence": self.evidence, "kill_sockets": self.kill_sockets, "listening": self.listening, "sample": self.sample, "unsample": self.unsample, "mib": self.mib,
            "timeline": self.start_timeline, "timeline_log": self.timeline_log, "cc_params": ccparams.request,
            "batch": self.batch,
        }

    def handle(self, req: object) -> dict:
        if not isinstance(req, dict):
            raise Refused("a request is a JSON object")
        op = req.get("op")
        handler = self.handlers.get(op) if isinstance(op, str) else None
        if handler is None:
            raise Refused(f"op {op!r} is not one the agent answers ({', '.join(sorted(self.handlers))}, quit)")
        return handler(req)

    def batch(self, req: dict) -> dict:
        """Several requests in order, in one exchange (on the lab: one round trip over SSH). The
        first that fails ends the batch with its error (the ones before it have acted)."""
        v.only(req, {"op", "requests"}, "batch")
        requests = v.listed(v.need(req, "requests", "batch"), "batch.requests", 16)
        for r in requests:  # checked before any of them acts
            if not isinstance(r, dict) or r.get("op") in ("batch", "quit"):
                raise Refused(f"batch: {r!r:.60} cannot be in a batch")
        replies = []
        for r in requests:
            try:
                replies.append(self.handle(r))
            except Refused:
                raise
            except Exception as e:  # which request failed, with its own error
                raise RuntimeError(f"{r['op']}: {type(e).__name__}: {e}") from e
        return {"replies": replies}

    def hello(self, req: dict) -> dict:
        v.only(req, {"op"}, "hello")
        return {"host": platform.node(), "time": time.time(), "python": platform.python_version(), "protocol": PROTOCOL}

    def paths(self, req: dict) -> dict:
        """Addresses, tables, rules, routes, MPTCP endpoints and limits, and node sysctls."""
        v.only(req, {"op", "plan"}, "paths")
        plan = plans.parse(v.need(req, "plan", "paths"))
        with self.routing_lock:
            if self.view is None or self.known is None or not self.known.current([i.name for i in plan.interfaces]):
                self.view = radios.view(self.node)  # queried again whenever the routing is
            radios.plan(self.node, plan, self.view)  # on the node's radios only, off the management plane
            known, self.known = self.known, None  # until this apply has succeeded
            self.known = routing.update(plan, known)
            self.plan = plan
        return {}

    def sysctl(self, req: dict) -> dict:
        v.only(req, {"op", "values"}, "sysctl")
        values = sysctls.checked(v.mapping(v.need(req, "values", "sysctl"), "sysctl.values", 32))
        radios.sysctl_names(self.node, values, "sysctl")
        sysctls.apply(values)
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
        program = v.need(req, "program", "launch")
        argv = argv_for(program, req.get("args", {}))
        args = req.get("args", {})
        for name in ("target", "bind"):  # the experiment's traffic stays off the management network
            if name in args:
                radios.target(self.node, args[name], f"{program}.{name}")
        at = req.get("at")
        if at is not None:
            now = time.time()
            at = v.number(at, "launch.at", now - 60, now + 3600)
        if "loss_aware" in args:
            with self.routing_lock:  # the transfer changes its endpoints' backup flags itself
                self.known = None
        old = self.launches.get(key)
        if old:
            old.stop()  # started or not, it never runs on untracked (Launch.stop)
        self.launches[key] = Launch(argv, at, forked=program == "transfer")  # the agent's own code: forked
        return {}

    def release(self, req: dict) -> dict:
        """A held transfer (launched with `hold`) gets its start time `at` (unix time)."""
        v.only(req, {"op", "key", "at"}, "release")
        key, launch = self._launch(req, "release")
        if launch is None or not launch.held:
            raise Refused(f"release: nothing held was launched as {key!r}")
        now = time.time()
        launch.release(v.number(v.need(req, "at", "release"), "release.at", now - 60, now + 3600))
        return {}

    def _launch(self, req: dict, what: str) -> tuple[str, Launch | None]:
        key = v.key(v.need(req, "key", what), f"{what}.key")
        return key, self.launches.get(key)

    def wait(self, req: dict) -> dict:
        """What `launch` started under key, once it ended, or once `timeout` passed: then it is
        stopped (its output kept, `timed_out`), unless `stop` is false: then only {"running": true},
        and the controller asks again (it ends a run on every node at once when a part is lost)."""
        v.only(req, {"op", "key", "timeout", "stop", "port"}, "wait")
        timeout = v.number(req.get("timeout", 3600), "wait.timeout", 0, MOST_WAIT_S)
        key, launch = self._launch(req, "wait")
        if launch is None:
            raise Refused(f"wait: nothing was launched as {key!r}")
        stop = v.boolean(req.get("stop", True), "wait.stop")
        port = v.integer(req["port"], "wait.port", 1024, 65535) if "port" in req else None
        if not launch.done.wait(timeout):
            if not stop:  # with `port`: how far its connections have come (the stall check)
                return {"running": True, **(stall.progress(port) if port else {})}
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

    def evidence(self, req: dict) -> dict:
        """A stalled transfer's evidence on this node (rig_node.stall), its programs under `keys`."""
        v.only(req, {"op", "keys"}, "evidence")
        keys = [v.key(k, "evidence.keys") for k in v.listed(v.need(req, "keys", "evidence"), "evidence.keys", 4)]
        return stall.evidence({k: self.launches[k].pid if k in self.launches else None for k in keys})

    def kill_sockets(self, req: dict) -> dict:
        """Every socket of `port` destroyed, whatever state the kernel holds it in."""
        v.only(req, {"op", "port"}, "kill_sockets")
        return {"left": stall.kill_sockets(v.integer(v.need(req, "port", "kill_sockets"), "kill_sockets.port", 1024, 65535))}

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
        if self.timeline:
            self.timeline.stop()
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

    def start_timeline(self, req: dict) -> dict:
        """A run's events on this node: interfaces of the routing plan going down or up, or
        impaired, each at its time (replacing a timeline not yet collected)."""
        v.only(req, {"op", "actions"}, "timeline")
        actions = timeline.checked(v.need(req, "actions", "timeline"))
        mine = {i.name for i in self.plan.interfaces} if self.plan else set()
        for a in actions:  # only the radio interfaces the rig configured: never the management one
            if a["iface"] not in mine:
                raise Refused(f"timeline: {a['iface']} is not an interface of this node's routing plan")
            radios.interface(self.node, a["iface"], "timeline.actions.iface")
        if self.timeline:
            self.timeline.stop()
        self.timeline = timeline.Timeline(actions, self._act)
        return {}

    def _act(self, action: dict) -> None:
        if action["action"] == "impair":
            p = subprocess.run(timeline.netem_argv(action["iface"], action), capture_output=True, text=True, timeout=10)
            if p.returncode != 0:
                raise RuntimeError(p.stderr.strip())
        else:
            self._link(action)

    def _link(self, action: dict) -> None:
        """An interface of the plan goes down or comes back up (with its routes)."""
        with self.routing_lock:
            if action["state"] == "down":
                routing.link_down(action["iface"])  # its carrier, if it changes, makes the next apply query
                return
            known, self.known = self.known, None  # until the change has succeeded
            self.known = routing.link_up(self.plan, action["iface"], known)

    def timeline_log(self, req: dict) -> dict:
        """Stops the timeline (what has not happened is cancelled) and returns what it did."""
        v.only(req, {"op"}, "timeline_log")
        line, self.timeline = self.timeline, None
        if line is None:
            return {"events": []}
        log = line.stop()
        # The next run starts clean: interfaces taken down come back, impairments go.
        done = {e["id"] for e in log}
        for action in line.actions:
            if action["id"] not in done:
                continue
            if action["action"] == "link":
                self._link({**action, "state": "up"})
            elif action["action"] == "impair":
                subprocess.run(["tc", "qdisc", "del", "dev", action["iface"], "root"], capture_output=True, timeout=10)
        return {"events": log}

    def shutdown(self) -> None:
        for launch in self.launches.values():
            launch.stop()
        if self.sampler:
            self.sampler.stop()
        if self.timeline:
            self.timeline.stop()
