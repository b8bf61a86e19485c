#!/usr/bin/env python3
"""The node agent: the rig's hands on one node, physical or emulated.

It is started once per node through the rig's transport (`ssh node python3 rig_agent.py` on
the lab, `ip netns exec <ns> python3 rig_agent.py` on the emulated rig) and then answers
requests, one JSON object per line on stdin, one JSON reply per line on stdout. Keeping it
running for a whole campaign is what keeps per-run overhead small: no process start-up, no
new SSH session per command.

Requests ({"op": ..., ...}):
  hello                              -> {"host", "time", "python"}
  sh       script, timeout           -> {"rc", "out", "err"}       run a shell script
  sample   ifaces, hz, ss_hz         -> {}   start sampling the interfaces' byte counters (hz) and
                                            the TCP sockets, `ss -tinH` (ss_hz, 0 = off)
  unsample                           -> {"samples": [[t, ifname, tx_bytes, rx_bytes], ...],
                                         "ss": [[t, ss output], ...]}
  launch   key, argv, at (unix time or null = now)  -> {}   start argv at `at`, in the background
  wait     key, timeout              -> {"started_at", "ended_at", "rc", "stdout", "stderr"}
  alive    key                       -> {"alive": bool}
  kill     key                       -> {}
  mib                                -> {"MPTcpExt...": n, "TcpExt...": n, "Tcp...": n}   kernel counters
  quit                               -> {} and exit
Errors come back as {"error": "..."}.

Standard library only: this file is copied as is onto the lab's nodes.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time

SPIN_S = 0.002  # sleep until this close to a scheduled start, then spin for precision


class Sampler:
    """Reads /sys/class/net/<if>/statistics at a fixed rate in a thread, and every
    1/ss_hz seconds the sockets' cwnd/RTT/CC from `ss` (a TCP probe that needs no tracefs)."""

    def __init__(self, ifaces: list[str], hz: float, ss_hz: float = 0.0):
        self.ifaces, self.period = ifaces, 1.0 / hz
        self.ss_period = 1.0 / ss_hz if ss_hz > 0 else None
        self.rows: list[list] = []
        self.ss: list[list] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    @staticmethod
    def _read(path: str) -> int:
        try:
            with open(path) as f:
                return int(f.read())
        except OSError:
            return -1  # interface absent or down-and-gone: recorded, not fatal

    def _once(self) -> None:
        t = time.time()
        for i in self.ifaces:
            base = f"/sys/class/net/{i}/statistics/"
            self.rows.append([t, i, self._read(base + "tx_bytes"), self._read(base + "rx_bytes")])

    def _ss(self) -> None:
        try:
            out = subprocess.run(["ss", "-tinH", "state", "established"], capture_output=True, text=True, timeout=5).stdout
        except (OSError, subprocess.TimeoutExpired):
            return
        self.ss.append([time.time(), out])

    def _loop(self) -> None:
        next_t = next_ss = time.monotonic()
        while not self._stop.is_set():
            self._once()
            if self.ss_period and time.monotonic() >= next_ss:
                self._ss()
                next_ss += self.ss_period
            next_t += self.period
            self._stop.wait(max(0.0, next_t - time.monotonic()))

    def stop(self) -> list[list]:
        self._stop.set()
        self._thread.join()
        self._once()  # a final sample so the counters' end is exact
        return self.rows


class Launch:
    """A command started at a scheduled instant; its output is kept for `wait`."""

    def __init__(self, argv: list[str], at: float | None):
        self.argv, self.at = argv, at
        self.proc: subprocess.Popen | None = None
        self.result: dict | None = None
        self.done = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        if self.at is not None:
            while (left := self.at - time.time()) > SPIN_S:
                time.sleep(min(left - SPIN_S, 0.05))
            while time.time() < self.at:
                pass
        started = time.time()
        try:
            self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
            out, err = self.proc.communicate()
            rc = self.proc.returncode
        except OSError as e:
            out, err, rc = b"", str(e).encode(), 127
        self.result = {
            "started_at": started, "ended_at": time.time(), "rc": rc,
            "stdout": out.decode(errors="replace"), "stderr": err.decode(errors="replace")[-4000:],
        }
        self.done.set()

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def read_mib() -> dict[str, int]:
    """MPTcpExt, TcpExt and Tcp counters of this node's network namespace (what `nstat` shows)."""
    out: dict[str, int] = {}
    for path in ("/proc/net/netstat", "/proc/net/snmp"):
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        for names, values in zip(lines[::2], lines[1::2]):
            prefix, *keys = names.split()
            _, *vals = values.split()
            if prefix.rstrip(":") in ("MPTcpExt", "TcpExt", "Tcp"):
                out.update({prefix.rstrip(":") + k: int(v) for k, v in zip(keys, vals) if v.lstrip("-").isdigit()})
    return out


class Agent:
    def __init__(self) -> None:
        self.sampler: Sampler | None = None
        self.launches: dict[str, Launch] = {}

    def handle(self, req: dict) -> dict:
        op = req.get("op")
        if op == "hello":
            return {"host": platform.node(), "time": time.time(), "python": platform.python_version()}
        if op == "sh":
            p = subprocess.run(["sh", "-c", req["script"]], capture_output=True, text=True, timeout=req.get("timeout", 60))
            return {"rc": p.returncode, "out": p.stdout, "err": p.stderr}
        if op == "sample":
            if self.sampler:
                self.sampler.stop()
            self.sampler = Sampler(req["ifaces"], float(req.get("hz", 20)), float(req.get("ss_hz", 0)))
            return {}
        if op == "unsample":
            sampler, self.sampler = self.sampler, None
            rows = sampler.stop() if sampler else []
            return {"samples": rows, "ss": sampler.ss if sampler else []}
        if op == "launch":
            old = self.launches.get(req["key"])
            if old:
                old.kill()
            self.launches[req["key"]] = Launch(req["argv"], req.get("at"))
            return {}
        if op == "wait":
            launch = self.launches[req["key"]]
            if not launch.done.wait(req.get("timeout")):
                launch.kill()
                launch.done.wait(5)
                return {**(launch.result or {}), "timed_out": True}
            return launch.result or {}
        if op == "alive":
            launch = self.launches.get(req["key"])
            return {"alive": bool(launch and not launch.done.is_set())}
        if op == "kill":
            launch = self.launches.pop(req["key"], None)
            if launch:
                launch.kill()
                launch.done.wait(5)
            return {}
        if op == "mib":
            return read_mib()
        raise ValueError(f"unknown op {op!r}")

    def shutdown(self) -> None:
        for launch in self.launches.values():
            launch.kill()
        if self.sampler:
            self.sampler.stop()


def main() -> int:
    agent = Agent()
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                req = json.loads(line)
                if req.get("op") == "quit":
                    print("{}", flush=True)
                    break
                reply = agent.handle(req)
            except Exception as e:  # noqa: BLE001 - every failure goes back to the controller
                reply = {"error": f"{type(e).__name__}: {e}"}
            print(json.dumps(reply), flush=True)
    finally:
        agent.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
