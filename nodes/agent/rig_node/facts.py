"""What decides whether a congestion control can run on this node's kernel."""

from __future__ import annotations

import platform
import shutil
import subprocess
from pathlib import Path

# The out-of-tree MPTCP kernel's coupled CCs are modules of these names.
OUT_OF_TREE_MODULES = ("mptcp_coupled", "mptcp_olia", "mptcp_balia")
BUILD_TOOLS = ("bpftool", "clang", "make")
BTF = Path("/sys/kernel/btf/vmlinux")


def _has_struct_ops() -> bool:
    try:
        with BTF.open("rb") as f:
            return b"bpf_struct_ops_tcp_congestion_ops" in f.read()
    except OSError:
        return False


def kernel_facts() -> dict:
    try:
        available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    except OSError:
        available = []
    out_of_tree = Path("/proc/sys/net/mptcp/mptcp_enabled").exists()
    modules = [m for m in OUT_OF_TREE_MODULES if out_of_tree and
               subprocess.run(["modinfo", "-n", m], capture_output=True).returncode == 0]
    return {
        "available": available,
        "mptcp": Path("/proc/sys/net/mptcp/enabled").exists(),
        "out_of_tree": out_of_tree,
        "btf": BTF.exists(),
        "release": platform.release(),
        "struct_ops": _has_struct_ops(),
        "modules": modules,
        "missing_tools": [t for t in BUILD_TOOLS if shutil.which(t) is None],
    }


def clock_offset() -> dict:
    """This node's clock offset from its NTP source as chrony sees it (`chronyc -c tracking`), or
    none where chrony does not run or is not synchronised."""
    if shutil.which("chronyc") is None:
        return {"offset_s": None, "source": "no chronyc"}
    p = subprocess.run(["chronyc", "-c", "tracking"], capture_output=True, text=True, timeout=5)
    return parse_tracking(p.stdout, p.stderr)


def parse_tracking(stdout: str, stderr: str = "") -> dict:
    """`chronyc -c tracking`'s line: field 5 is the system time's offset (seconds), 11 and 12 the
    root delay and dispersion, 14 the leap status. bound_s is chrony's bound on the clock's error,
    |offset| + root dispersion + root delay / 2. An unsynchronised chrony reports offset 0: none."""
    fields = stdout.strip().split(",")
    try:
        offset, delay, dispersion, leap = float(fields[4]), float(fields[10]), float(fields[11]), fields[13]
    except (IndexError, ValueError):
        return {"offset_s": None, "source": (stderr or stdout).strip()[-200:] or "chronyc said nothing"}
    if leap == "Not synchronised":
        return {"offset_s": None, "source": "chrony is not synchronised"}
    return {"offset_s": offset, "bound_s": abs(offset) + dispersion + delay / 2, "source": fields[1] or fields[0]}
