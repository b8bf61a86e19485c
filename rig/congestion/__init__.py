"""The rig's MPTCP congestion controls on this host's kernel: coupled lia, olia, balia, uncoupled rig_reno.

Upstream Linux MPTCP has no coupled congestion control; nodes/bpf/ provides LIA, OLIA and
BALIA as BPF struct_ops tcp_congestion_ops, and from the same code an uncoupled Reno (rig_reno)
that, like them, honours a fixed initial ssthresh. This package builds them (CO-RE, against the
running kernel's BTF), registers them with bpftool, removes them again, and reports which
congestion control each subflow actually ran. On the out-of-tree MPTCP kernel (v0.9x) the
same names are its native modules, which are loaded instead of building anything.

One job per module; this file only gathers the names callers use (`from rig import congestion`):
kernel    which CCs a kernel can run, and why not (KernelFacts, WhyNot with a Cause)
registry  registering and unregistering the BPF objects, their struct_ops maps and repair counts
ss        what each socket or subflow ran, from `ss -tinH`
cli       `rig cc`
tools     running the external programs; where the sources and build products are
"""

from rig.congestion.cli import cc_cli
from rig.congestion.kernel import (BTF, COUPLED, LOCAL_FIX, OUT_OF_TREE_MODULES, RIG_CCS, UNCOUPLED, Cause, KernelFacts,
                                   WhyNot, available, explain, facts_from, local_facts, why_not)
from rig.congestion.registry import (MAP_PREFIX, REGISTER_SCRIPT, STATE_DIR, allow_in_namespace, ensure_registered,
                                     register, repairs, struct_ops_maps, unregister_all)
from rig.congestion.ss import parse_ss, subflow_ccs
from rig.congestion.tools import BPF_DIR, BUILD_DIR

__all__ = ["BPF_DIR", "BTF", "BUILD_DIR", "COUPLED", "LOCAL_FIX", "MAP_PREFIX", "OUT_OF_TREE_MODULES", "REGISTER_SCRIPT",
           "RIG_CCS", "STATE_DIR", "UNCOUPLED", "Cause", "KernelFacts", "WhyNot", "allow_in_namespace", "available", "cc_cli",
           "ensure_registered", "explain", "facts_from", "local_facts", "parse_ss", "register", "repairs",
           "struct_ops_maps", "subflow_ccs", "unregister_all", "why_not"]
