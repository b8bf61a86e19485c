"""Running the programs the congestion modules use (bpftool, ip, ss, sysctl), and where things are."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from rig.core.errors import RigError
from rig.core.repo import BPF_DIR

# Build products (vmlinux.h is ~3 MB and kernel-specific): outside git, overridable per host.
BUILD_DIR = Path(os.environ.get("RIG_BPF_BUILD", BPF_DIR / "build"))
SYSCTL = Path("/proc/sys/net/ipv4")


def read_list(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


def run(argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError as e:
        raise RigError(f"{argv[0]} not found: install it (see docs/congestion-control.md)") from e
    except subprocess.TimeoutExpired as e:
        raise RigError(f"{' '.join(argv)} did not finish in {timeout:.0f} s") from e


def in_netns(netns: str | None, argv: list[str]) -> list[str]:
    return ["ip", "netns", "exec", netns, *argv] if netns else argv
