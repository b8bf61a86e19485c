"""Where a dataset came from: rig version and commit, kernel, tool versions, host."""

from __future__ import annotations

import importlib.metadata
import platform
import socket
import subprocess
from pathlib import Path

import rig
from rig.core.repo import REPO



def _first_line(argv: list[str]) -> str | None:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = (p.stdout or p.stderr).strip().splitlines()
    return out[0] if out else None


def git_commit() -> str | None:
    commit = _first_line(["git", "-C", str(REPO), "rev-parse", "HEAD"])
    if commit and len(commit) == 40:
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return commit + ("-dirty" if dirty else "")
    return None


def _package(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def collect(rig_kind: str) -> dict:
    return {
        "rig": rig_kind,
        "rig_version": rig.__version__,
        "git_commit": git_commit(),
        "kernel": platform.release(),
        "host": socket.gethostname(),
        "tools": {
            "iperf3": _first_line(["iperf3", "--version"]),
            "iproute2": _first_line(["ip", "-V"]),
            "ns3": _package("ns3"),
            "python": platform.python_version(),
        },
    }
