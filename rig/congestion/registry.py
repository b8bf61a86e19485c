"""Registering the rig's BPF congestion controls on this host's kernel, and removing them again."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from rig.congestion.kernel import RIG_CCS, Cause, available, check_name, explain
from rig.congestion.tools import BPF_DIR, BUILD_DIR, SYSCTL, read_list, run
from rig.core.errors import RigError

MAP_PREFIX = "rig_"  # our struct_ops maps are rig_lia, rig_olia, rig_balia, rig_rig_reno
# Builds and registers (the same script the node role installs on the boards), and remembers what.
REGISTER_SCRIPT = BPF_DIR / "rig-cc-register"
STATE_DIR = Path("/run/rig/cc")


def register(names: Iterable[str]) -> str:
    """Build and register `names` through nodes/bpf/rig-cc-register, the script the node role
    installs on the boards: objects changed since it registered them are registered again (on
    the out-of-tree kernel it loads the modules). Returns its report, a line per CC."""
    env = {**os.environ, "RIG_CC_SRC": str(BPF_DIR), "RIG_CC_BUILD": str(BUILD_DIR), "RIG_CC_STATE": str(STATE_DIR)}
    try:
        p = subprocess.run([sys.executable, str(REGISTER_SCRIPT), *names], capture_output=True, text=True, env=env,
                           timeout=300)
    except subprocess.TimeoutExpired as e:
        raise RigError(f"{REGISTER_SCRIPT.name} did not finish in 300 s") from e
    if p.returncode != 0:
        raise RigError((p.stderr.strip() or p.stdout.strip())[-800:])
    return p.stdout.strip()


_STRUCT_OPS_ENTRY = re.compile(r'"id":(?P<id>\d+),[^{}]*?"name":"(?P<name>[^"]*)".*?"state":"BPF_STRUCT_OPS_STATE_(?P<state>\w+)"',
                               re.S)


def struct_ops_maps() -> list[tuple[str, int, str]]:
    """Our struct_ops maps as (CC name, map id, state). State INUSE: registered; TOBEFREE:
    unregistered but still referenced by sockets that ran it (freed when the last one goes)."""
    p = run(["bpftool", "-j", "struct_ops", "dump"])
    if p.returncode != 0:
        raise RigError(f"bpftool struct_ops dump failed: {p.stderr.strip()}")
    # bpftool 7.1 prints the info and value objects of a map one after the other: match in text
    out = []
    for m in _STRUCT_OPS_ENTRY.finditer(p.stdout):
        name = m["name"]
        if name.startswith(MAP_PREFIX) and name[len(MAP_PREFIX):] in RIG_CCS:
            out.append((name[len(MAP_PREFIX):], int(m["id"]), m["state"]))
    return out


def repairs() -> dict[str, int]:
    """Per CC: implausible windows (ssthresh or cwnd over 2^20 packets) its loaded objects put
    back, the kernel 6.18 runaway windows of docs/congestion-control.md. 0 if never loaded."""
    out = {}
    for name in RIG_CCS:
        p = run(["bpftool", "-j", "map", "dump", "name", f"{name}.bss"])
        out[name] = sum(int(n) for n in re.findall(r'"repairs":(\d+)', p.stdout)) if p.returncode == 0 else 0
    return out


def ensure_registered(names: Iterable[str]) -> None:
    """Register the rig's CCs among `names` not yet runnable (building them if needed). Idempotent."""
    wanted = sorted(set(names))
    for name in wanted:
        check_name(name)
    missing = [n for n in wanted if n not in available()]
    if not missing:
        return
    for name in missing:
        why = explain(name)
        if why and why.cause is not Cause.NOT_REGISTERED:
            raise RigError(f"cannot register {name}: {why}")
    register(missing)


def unregister_all() -> None:
    """Unregister our struct_ops maps; waits until the kernel has dropped the CC names.

    A map disappears once no socket uses it any more (sockets that ran lia keep running lia).
    """
    for name, map_id, state in struct_ops_maps():
        if state != "INUSE":
            continue
        p = run(["bpftool", "struct_ops", "unregister", "id", str(map_id)])
        if p.returncode != 0 and (name, map_id, "INUSE") in struct_ops_maps():
            raise RigError(f"unregistering {name} (struct_ops id {map_id}) failed: {p.stderr.strip()}")
    deadline = time.monotonic() + 5
    while set(RIG_CCS) & available() and time.monotonic() < deadline:
        time.sleep(0.05)


def allow_in_namespace(netns: str, names: Iterable[str], *, host_wide: bool = False) -> None:
    """Append `names` to tcp_allowed_congestion_control as seen from `netns`.

    Needed only to make a coupled CC a namespace's default (net.ipv4.tcp_congestion_control);
    root sockets may pick any available CC per socket (TCP_CONGESTION, iperf3 -C) regardless.
    On current kernels the allow list is host-wide and read-only inside namespaces, so it is
    changed only with host_wide=True (the rig leaves host settings alone by default).
    """
    names = list(dict.fromkeys(names))
    for name in names:
        if name not in available():
            raise RigError(f"{name} is not available; register it first ({explain(name)})")
    current = run(["ip", "netns", "exec", netns, "cat", str(SYSCTL / "tcp_allowed_congestion_control")])
    if current.returncode != 0:
        raise RigError(f"netns {netns}: cannot read tcp_allowed_congestion_control: {current.stderr.strip()}")
    allowed = current.stdout.split()
    missing = [n for n in names if n not in allowed]
    if not missing:
        return
    value = " ".join(allowed + missing)
    run(["ip", "netns", "exec", netns, "sysctl", "-qw", f"net.ipv4.tcp_allowed_congestion_control={value}"])
    now = run(["ip", "netns", "exec", netns, "cat", str(SYSCTL / "tcp_allowed_congestion_control")])
    if set(missing) <= set(now.stdout.split()):  # sysctl -q exits 0 even when the write failed
        return
    if not host_wide:
        raise RigError(
            f"netns {netns}: tcp_allowed_congestion_control is host-wide on this kernel (read-only in "
            f"namespaces); set the CC per socket instead (iperf3 -C {missing[0]}), or pass host_wide=True "
            f"to append {' '.join(missing)} to the host's list")
    host = read_list(SYSCTL / "tcp_allowed_congestion_control")
    (SYSCTL / "tcp_allowed_congestion_control").write_text(" ".join(host + [n for n in missing if n not in host]))
