"""A stalled transfer as a node sees it: how far its port's connections have come (the
controller's stall check), the evidence taken when it stalls, and its sockets torn down."""

from __future__ import annotations

import json
import os
import re
import subprocess

from rig_node import sampling

_RECEIVED = re.compile(r"\bbytes_received:(\d+)")
_RTO = re.compile(r"\brto:([\d.]+)")


def _ss(*args: str) -> str:
    try:
        return subprocess.run(["ss", *args], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _port_filter(port: int) -> list[str]:
    return ["(", "sport", "=", f":{port}", "or", "dport", "=", f":{port}", ")"]


def progress(port: int) -> dict:
    """The bytes the established TCP sockets (an MPTCP connection's subflows) of `port` have
    received in order, and the largest RTO among them (ms): one `ss` a call."""
    out = _ss("-HtinO", "state", "established", *_port_filter(port))
    rtos = [float(x) for x in _RTO.findall(out)]
    return {"received": sum(int(x) for x in _RECEIVED.findall(out)), "rto_ms": max(rtos) if rtos else None,
            "sockets": len(out.splitlines())}


def _task_state(pid: int) -> dict:
    """Where each thread of a program is: its state and kernel wait channel (and stack, as root)."""
    tasks = {}
    for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
        info = {}
        for name in ("wchan", "stack", "syscall"):
            try:
                with open(f"/proc/{pid}/task/{tid}/{name}") as f:
                    info[name] = f.read().strip()
            except OSError:
                pass
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                info["state"] = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            pass
        tasks[tid] = info
    return tasks


def evidence(pids: dict[str, int | None]) -> dict:
    """What the node holds of a stalled transfer: every socket as `ss -tnmiM` shows it (memory,
    TCP and MPTCP info), the MPTCP and TCP MIB counters, and each program's threads (`pids`:
    key -> pid)."""
    programs = {}
    for key, pid in pids.items():
        try:
            programs[key] = {"pid": pid, "tasks": _task_state(pid)} if pid else {"pid": None}
        except OSError as e:
            programs[key] = {"pid": pid, "error": str(e)}
    return {"ss": _ss("-tnmiM"), "mib": sampling.read_mib(), "programs": json.loads(json.dumps(programs))}


def kill_sockets(port: int) -> int:
    """Every socket of `port` destroyed (`ss -K`): a stalled connection's, closed by its program's
    end, would linger in the kernel (unsent data, FIN_WAIT) into the next run. How many were left."""
    left = len(_ss("-Htan", *_port_filter(port)).splitlines())
    _ss("-HtaKn", *_port_filter(port))
    _ss("-HMaKn", *_port_filter(port))
    return left
