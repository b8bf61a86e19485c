"""The sysctls a request may set: the MPTCP and TCP knobs the rig's runs need, nothing else."""

from __future__ import annotations

import re
from pathlib import Path

from rig_node.validate import Refused, ifname

ALLOWED = frozenset({
    "net.mptcp.enabled", "net.mptcp.allow_join_initial_addr_port", "net.mptcp.blackhole_timeout",
    "net.mptcp.scheduler", "net.mptcp.pm_type", "net.mptcp.path_manager",
    "net.ipv4.tcp_no_metrics_save", "net.ipv4.tcp_notsent_lowat", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_moderate_rcvbuf",
    "net.ipv4.conf.all.rp_filter", "net.ipv4.conf.default.rp_filter",
    "net.ipv4.conf.all.arp_ignore", "net.ipv4.conf.all.arp_announce",
})
# Newer than MPTCP itself: skipped where the kernel lacks them.
OPTIONAL = frozenset({"net.mptcp.blackhole_timeout", "net.mptcp.scheduler", "net.mptcp.path_manager"})
_PER_INTERFACE = re.compile(r"net\.ipv4\.conf\.([^/]+)\.rp_filter\Z")
_VALUE = re.compile(r"(\d{1,10})( \d{1,10}){0,2}\Z|[a-z][a-z0-9_]{0,15}\Z")  # 1-3 numbers, or a name
_PROC = Path("/proc/sys")


def checked(values: dict) -> dict[str, str]:
    """The requested sysctls, each on the allowlist (or an interface's rp_filter) with a plain value."""
    out = {}
    for name, value in values.items():
        m = _PER_INTERFACE.match(name) if isinstance(name, str) else None
        if m:
            ifname(m.group(1), f"sysctl {name}")
        elif name not in ALLOWED:
            raise Refused(f"sysctl {name!r} is not one the rig may set")
        text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
        if not isinstance(text, str) or not _VALUE.match(text):
            raise Refused(f"sysctl {name}: {value!r} is not a plain value")
        out[name] = text
    return out


def apply(values: dict[str, str]) -> None:
    for name, value in values.items():
        path = _PROC / name.replace(".", "/")
        if name in OPTIONAL and not path.exists():
            continue
        path.write_text(value + "\n")


def read(names) -> dict[str, str]:
    out = {}
    for name in names:
        try:
            out[name] = " ".join((_PROC / name.replace(".", "/")).read_text().split())
        except OSError:
            pass
    return out
