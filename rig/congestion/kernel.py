"""Which of the rig's congestion controls a kernel can run, and if not, why (a typed reason)."""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from pathlib import Path

from rig.congestion.tools import BPF_DIR, SYSCTL, read_list
from rig.core.errors import RigError
from rig.agents.client import AgentPool
from rig.agents.local import LocalTransport

COUPLED = ("lia", "olia", "balia")
# Uncoupled Reno from the same BPF code: it honours the fixed initial ssthresh, which the kernel's reno cannot.
UNCOUPLED = ("rig_reno",)
RIG_CCS = COUPLED + UNCOUPLED  # the rig's BPF congestion controls (nodes/bpf)
# Linux's own TCP congestion controls (net/ipv4/tcp_*.c): a kernel may have any of them built in
# or as a module. With the rig's, every name a campaign can mean; any other is a typo.
LINUX_CCS = ("bbr", "bic", "cdg", "cubic", "dctcp", "highspeed", "htcp", "hybla", "illinois", "lp", "nv", "reno",
             "scalable", "vegas", "veno", "westwood", "yeah")
KNOWN_CCS = LINUX_CCS + RIG_CCS
BTF = Path("/sys/kernel/btf/vmlinux")
OUT_OF_TREE_MODULES = {"lia": "mptcp_coupled", "olia": "mptcp_olia", "balia": "mptcp_balia"}
LOCAL_FIX = "rig cc register, or ensure_registered()"
# The rig's BPF CCs call the bpf_rdonly_cast kfunc, which kernels before 6.2 lack (Debian 12's is 6.1).
MIN_KERNEL = (6, 2)


def kernel_version(release: str) -> tuple[int, int] | None:
    """(major, minor) of a kernel release such as 6.1.0-18-arm64; None if it has none."""
    parts = release.split("-")[0].split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None


def available() -> set[str]:
    """Congestion controls this host's kernel can run now."""
    return set(read_list(SYSCTL / "tcp_available_congestion_control"))


def check_name(name: str) -> None:
    if name not in RIG_CCS:
        raise RigError(f"{name!r} is not one of the rig's congestion controls {', '.join(RIG_CCS)}")


@dataclass(frozen=True)
class KernelFacts:
    available: frozenset[str]
    mptcp: bool = False  # upstream MPTCP (net.mptcp.enabled)
    out_of_tree: bool = False  # the multipath-tcp.org kernel (net.mptcp.mptcp_enabled)
    btf: bool = False
    struct_ops: bool = False  # BPF struct_ops tcp_congestion_ops
    modules: frozenset[str] = frozenset()  # out-of-tree CC modules the kernel has (loaded or not)
    missing_tools: tuple[str, ...] = ()
    release: str = ""  # uname -r; empty from an agent that does not say


def facts_from(reply: dict) -> KernelFacts:
    """KernelFacts from a node agent's `facts` reply (nodes/agent/rig_node/facts.py)."""
    return KernelFacts(frozenset(reply.get("available", [])), bool(reply.get("mptcp")), bool(reply.get("out_of_tree")),
                       bool(reply.get("btf")), bool(reply.get("struct_ops")), frozenset(reply.get("modules", [])),
                       tuple(reply.get("missing_tools", [])), str(reply.get("release", "")))


def local_facts() -> KernelFacts:
    """This host's facts, gathered by the node agent's own code (as a lab node's are)."""
    with AgentPool(LocalTransport(), ["localhost"]) as agents:
        return facts_from(agents["localhost"].request("facts"))


class Cause(enum.Enum):
    """Why a congestion control cannot run; NOT_REGISTERED is the one registering fixes."""
    UNKNOWN = "unknown"  # not available, and not one the rig provides
    MODULE_NOT_LOADED = "module not loaded"  # out-of-tree kernel: modprobe fixes it
    NO_MODULE = "no module"  # out-of-tree kernel without the module
    BPF_ONLY = "BPF only"  # out-of-tree kernel: a CC that exists only as a BPF object (rig_reno)
    NO_MPTCP = "no MPTCP"
    NO_BTF = "no BTF"
    NO_STRUCT_OPS = "no struct_ops"
    OLD_KERNEL = "kernel too old"
    NO_BUILD_TOOLS = "no build tools"
    NOT_REGISTERED = "not registered"
    NO_SOURCES = "no sources"  # this host: the BPF sources are not there
    NOT_ROOT = "not root"  # this host: registering needs root


@dataclass(frozen=True)
class WhyNot:
    """Why a CC cannot run: `cause` for code to decide on, `message` for people."""
    cause: Cause
    message: str

    def __str__(self) -> str:
        return self.message


def why_not(name: str, facts: KernelFacts, fix: str) -> WhyNot | None:
    """Why `name` cannot run on a kernel with these facts, None if it can; `fix` is how the
    rig's CCs get registered there (rig cc register here, the node role on a board)."""
    if name in facts.available:
        return None
    if name not in RIG_CCS:
        return WhyNot(Cause.UNKNOWN, f"{name} is not in tcp_available_congestion_control and the rig does not provide it")
    if facts.out_of_tree:
        module = OUT_OF_TREE_MODULES.get(name)
        if module is None:
            return WhyNot(Cause.BPF_ONLY, f"{name} is a BPF congestion control, which the out-of-tree MPTCP kernel "
                                          "cannot run (its own reno is uncoupled)")
        if module in facts.modules:
            return WhyNot(Cause.MODULE_NOT_LOADED, f"module {module} not loaded ({fix})")
        return WhyNot(Cause.NO_MODULE, f"out-of-tree MPTCP kernel without module {module}")
    if not facts.mptcp:
        return WhyNot(Cause.NO_MPTCP, "kernel has no MPTCP (CONFIG_MPTCP)")
    if not facts.btf:
        return WhyNot(Cause.NO_BTF, f"kernel has no BTF ({BTF}); BPF congestion controls need CONFIG_DEBUG_INFO_BTF")
    version = kernel_version(facts.release)
    if version is not None and version < MIN_KERNEL:
        return WhyNot(Cause.OLD_KERNEL, f"kernel {facts.release} is older than {'.'.join(map(str, MIN_KERNEL))}, "
                                        "which the rig's BPF congestion controls need (the bpf_rdonly_cast kfunc)")
    if not facts.struct_ops:
        return WhyNot(Cause.NO_STRUCT_OPS,
                      "kernel has no BPF struct_ops tcp_congestion_ops (needs >= 5.6 with CONFIG_BPF_JIT)")
    if facts.missing_tools:
        return WhyNot(Cause.NO_BUILD_TOOLS,
                      f"not registered, and {', '.join(facts.missing_tools)} missing to build it ({fix})")
    return WhyNot(Cause.NOT_REGISTERED, f"not registered ({fix})")


def explain(name: str) -> WhyNot | None:
    """Why `name` cannot run on this host (for `rig doctor`), None if it can."""
    why = why_not(name, local_facts(), LOCAL_FIX)
    if why is None or why.cause is not Cause.NOT_REGISTERED:
        return why
    if not (BPF_DIR / f"{name}.bpf.c").exists():
        return WhyNot(Cause.NO_SOURCES, f"BPF sources not found in {BPF_DIR}")
    if os.geteuid() != 0:
        return WhyNot(Cause.NOT_ROOT, "not registered, and registering needs root")
    return why
