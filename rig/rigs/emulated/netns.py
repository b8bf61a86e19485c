"""Network namespace housekeeping for the emulated rig, through iproute2.

All names are `<prefix>-<host>`; everything the rig creates lives inside such namespaces, so
removing them (after killing what runs in them) removes the whole rig, also after a crash.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from rig.core import process
from rig.core.errors import RigError

NETNS_DIR = Path("/run/netns")


def ip(*args: str, netns: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    argv = ["ip", *(["-n", netns] if netns else []), *args]
    p = subprocess.run(argv, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RigError(f"{' '.join(argv)}: {p.stderr.strip()}")
    return p


def ip_batch(netns: str, commands: list[str]) -> None:
    """Many `ip` commands in one process: keeps bring-up fast."""
    p = subprocess.run(["ip", "-n", netns, "-batch", "-"], input="\n".join(commands) + "\n", capture_output=True, text=True)
    if p.returncode != 0:
        raise RigError(f"ip -n {netns} -batch: {p.stderr.strip()}")


def ip_batches(commands: dict[str, list[str]]) -> None:
    """ip_batch() for several namespaces (namespace -> commands), side by side."""
    procs = [(n, subprocess.Popen(["ip", "-n", n, "-batch", "-"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)) for n in commands]
    errors = []
    for n, proc in procs:
        err = proc.communicate("\n".join(commands[n]) + "\n")[1]
        if proc.returncode != 0:
            errors.append(f"ip -n {n} -batch: {err.strip()}")
    if errors:
        raise RigError(errors[0])


def sh(netns: str, script: str) -> None:
    p = subprocess.run(["ip", "netns", "exec", netns, "sh", "-c", script], capture_output=True, text=True)
    if p.returncode != 0:
        raise RigError(f"in {netns}: {p.stderr.strip() or script}")


def sh_each(names: list[str], script: str) -> None:
    """sh() in each namespace, side by side."""
    procs = [(n, subprocess.Popen(["ip", "netns", "exec", n, "sh", "-c", script], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)) for n in names]
    errors = [f"in {n}: {proc.communicate()[1].strip() or script}" for n, proc in procs if proc.wait() != 0]
    if errors:
        raise RigError(errors[0])


def exists(name: str) -> bool:
    return (NETNS_DIR / name).exists()


def add(name: str) -> None:
    if not exists(name):
        ip("netns", "add", name)
    ip("link", "set", "lo", "up", netns=name)


def add_all(names: list[str]) -> None:
    """add() for many: the missing namespaces made by one `ip -batch`, then each one's loopback
    up, those `ip` processes side by side (bring-up makes ~16)."""
    missing = [n for n in names if not exists(n)]
    if missing:
        p = subprocess.run(["ip", "-batch", "-"], input="".join(f"netns add {n}\n" for n in missing),
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RigError(f"ip netns add: {p.stderr.strip()}")
    procs = [(n, subprocess.Popen(["ip", "-n", n, "link", "set", "lo", "up"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)) for n in names]
    errors = [f"ip -n {n} link set lo up: {proc.communicate()[1].strip()}" for n, proc in procs if proc.wait() != 0]
    if errors:
        raise RigError(errors[0])


def with_prefix(prefix: str) -> list[str]:
    if not NETNS_DIR.is_dir():
        return []
    return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(prefix + "-"))


def pids(name: str) -> list[int]:
    p = ip("netns", "pids", name, check=False)
    return [int(x) for x in p.stdout.split()]


def _pids_in(names: list[str]) -> list[int]:
    """The processes in any of the namespaces, in one pass over /proc (as `ip netns pids` finds
    them, which is a process per namespace): a process's namespace is the same inode."""
    inodes = set()
    for n in names:
        try:
            inodes.add(os.stat(NETNS_DIR / n).st_ino)
        except OSError:
            continue
    found = []
    for d in os.listdir("/proc") if inodes else []:
        try:
            if d.isdigit() and os.stat(f"/proc/{d}/ns/net").st_ino in inodes:
                found.append(int(d))
        except OSError:  # exited meanwhile
            continue
    return found


def kill_all(names: list[str], grace_s: float = 2.0) -> None:
    """SIGTERM everything running in the namespaces, then SIGKILL what is left."""
    process.terminate([pid for pid in _pids_in(names) if pid != os.getpid()], grace_s)


def delete(names: list[str]) -> None:
    kill_all(names)
    if names:  # one `ip` for all; -force: one already gone does not stop the others
        subprocess.run(["ip", "-force", "-batch", "-"], input="".join(f"netns del {n}\n" for n in names),
                       capture_output=True, text=True)
