"""Coupled MPTCP congestion controls (lia, olia, balia) on this host's kernel.

Upstream Linux MPTCP has no coupled congestion control; nodes/bpf/ provides LIA, OLIA and
BALIA as BPF struct_ops tcp_congestion_ops. This module builds them (CO-RE, against the
running kernel's BTF), registers them with bpftool, removes them again, and reports which
congestion control each subflow actually ran. On the out-of-tree MPTCP kernel (v0.9x) the
same names are its native modules, which are loaded instead of building anything.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import click

from rig.errors import RigError
from rig.run.agents import AgentPool
from rig.transport.local import LocalTransport

COUPLED = ("lia", "olia", "balia")

BPF_DIR = Path(__file__).resolve().parent.parent / "nodes" / "bpf"
# Build products (vmlinux.h is ~3 MB and kernel-specific): outside git, overridable per host.
BUILD_DIR = Path(os.environ.get("RIG_BPF_BUILD", BPF_DIR / "build"))
BTF = Path("/sys/kernel/btf/vmlinux")
MAP_PREFIX = "rig_"  # our struct_ops maps are rig_lia, rig_olia, rig_balia
OUT_OF_TREE_MODULES = {"lia": "mptcp_coupled", "olia": "mptcp_olia", "balia": "mptcp_balia"}
# Builds and registers (the same script the node role installs on the boards), and remembers what.
REGISTER_SCRIPT = BPF_DIR / "rig-cc-register"
STATE_DIR = Path("/run/rig/cc")

_SYSCTL = Path("/proc/sys/net/ipv4")


def _read_list(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


def _run(argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError as e:
        raise RigError(f"{argv[0]} not found: install it (see docs/congestion-control.md)") from e
    except subprocess.TimeoutExpired as e:
        raise RigError(f"{' '.join(argv)} did not finish in {timeout:.0f} s") from e


def _in_netns(netns: str | None, argv: list[str]) -> list[str]:
    return ["ip", "netns", "exec", netns, *argv] if netns else argv


def available() -> set[str]:
    """Congestion controls this host's kernel can run now."""
    return set(_read_list(_SYSCTL / "tcp_available_congestion_control"))


def _check_name(name: str) -> None:
    if name not in COUPLED:
        raise RigError(f"{name!r} is not one of the coupled congestion controls {', '.join(COUPLED)}")


@dataclass(frozen=True)
class KernelFacts:
    available: frozenset[str]
    mptcp: bool = False  # upstream MPTCP (net.mptcp.enabled)
    out_of_tree: bool = False  # the multipath-tcp.org kernel (net.mptcp.mptcp_enabled)
    btf: bool = False
    struct_ops: bool = False  # BPF struct_ops tcp_congestion_ops
    modules: frozenset[str] = frozenset()  # out-of-tree CC modules the kernel has (loaded or not)
    missing_tools: tuple[str, ...] = ()


def facts_from(reply: dict) -> KernelFacts:
    """KernelFacts from a node agent's `facts` reply (nodes/agent/rig_node/facts.py)."""
    return KernelFacts(frozenset(reply.get("available", [])), bool(reply.get("mptcp")), bool(reply.get("out_of_tree")),
                       bool(reply.get("btf")), bool(reply.get("struct_ops")), frozenset(reply.get("modules", [])),
                       tuple(reply.get("missing_tools", [])))


def local_facts() -> KernelFacts:
    """This host's facts, gathered by the node agent's own code (as a lab node's are)."""
    with AgentPool(LocalTransport(), ["localhost"]) as agents:
        return facts_from(agents["localhost"].request("facts"))


def why_not(name: str, facts: KernelFacts, fix: str) -> str | None:
    """Why `name` cannot run on a kernel with these facts, None if it can; `fix` is how the
    coupled CCs get registered there (rig cc register here, the node role on a board)."""
    if name in facts.available:
        return None
    if name not in COUPLED:
        return f"{name} is not in tcp_available_congestion_control and the rig does not provide it"
    if facts.out_of_tree:
        module = OUT_OF_TREE_MODULES[name]
        if module in facts.modules:
            return f"module {module} not loaded ({fix})"
        return f"out-of-tree MPTCP kernel without module {module}"
    if not facts.mptcp:
        return "kernel has no MPTCP (CONFIG_MPTCP)"
    if not facts.btf:
        return f"kernel has no BTF ({BTF}); BPF congestion controls need CONFIG_DEBUG_INFO_BTF"
    if not facts.struct_ops:
        return "kernel has no BPF struct_ops tcp_congestion_ops (needs >= 5.6 with CONFIG_BPF_JIT)"
    if facts.missing_tools:
        return f"not registered, and {', '.join(facts.missing_tools)} missing to build it ({fix})"
    return f"not registered ({fix})"


_LOCAL_FIX = "rig cc register, or ensure_registered()"


def explain(name: str) -> str | None:
    """Why `name` cannot run on this host (for `rig doctor`), None if it can."""
    why = why_not(name, local_facts(), _LOCAL_FIX)
    if why != f"not registered ({_LOCAL_FIX})":
        return why
    if not (BPF_DIR / f"{name}.bpf.c").exists():
        return f"BPF sources not found in {BPF_DIR}"
    if os.geteuid() != 0:
        return "not registered, and registering needs root"
    return why


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
    p = _run(["bpftool", "-j", "struct_ops", "dump"])
    if p.returncode != 0:
        raise RigError(f"bpftool struct_ops dump failed: {p.stderr.strip()}")
    # bpftool 7.1 prints the info and value objects of a map one after the other: match in text
    out = []
    for m in _STRUCT_OPS_ENTRY.finditer(p.stdout):
        name = m["name"]
        if name.startswith(MAP_PREFIX) and name[len(MAP_PREFIX):] in COUPLED:
            out.append((name[len(MAP_PREFIX):], int(m["id"]), m["state"]))
    return out


def repairs() -> dict[str, int]:
    """Per CC: implausible windows (ssthresh or cwnd over 2^20 packets) its loaded objects put
    back, the kernel 6.18 runaway windows of docs/congestion-control.md. 0 if never loaded."""
    out = {}
    for name in COUPLED:
        p = _run(["bpftool", "-j", "map", "dump", "name", f"{name}.bss"])
        out[name] = sum(int(n) for n in re.findall(r'"repairs":(\d+)', p.stdout)) if p.returncode == 0 else 0
    return out


def ensure_registered(names: Iterable[str]) -> None:
    """Register the coupled CCs among `names` not yet runnable (building them if needed). Idempotent."""
    wanted = sorted(set(names))
    for name in wanted:
        _check_name(name)
    missing = [n for n in wanted if n not in available()]
    if not missing:
        return
    for name in missing:
        why = explain(name)
        if why and why != f"not registered ({_LOCAL_FIX})":
            raise RigError(f"cannot register {name}: {why}")
    register(missing)


def unregister_all() -> None:
    """Unregister our struct_ops maps; waits until the kernel has dropped the CC names.

    A map disappears once no socket uses it any more (sockets that ran lia keep running lia).
    """
    for name, map_id, state in struct_ops_maps():
        if state != "INUSE":
            continue
        p = _run(["bpftool", "struct_ops", "unregister", "id", str(map_id)])
        if p.returncode != 0 and (name, map_id, "INUSE") in struct_ops_maps():
            raise RigError(f"unregistering {name} (struct_ops id {map_id}) failed: {p.stderr.strip()}")
    deadline = time.monotonic() + 5
    while set(COUPLED) & available() and time.monotonic() < deadline:
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
    current = _run(["ip", "netns", "exec", netns, "cat", str(_SYSCTL / "tcp_allowed_congestion_control")])
    if current.returncode != 0:
        raise RigError(f"netns {netns}: cannot read tcp_allowed_congestion_control: {current.stderr.strip()}")
    allowed = current.stdout.split()
    missing = [n for n in names if n not in allowed]
    if not missing:
        return
    value = " ".join(allowed + missing)
    _run(["ip", "netns", "exec", netns, "sysctl", "-qw", f"net.ipv4.tcp_allowed_congestion_control={value}"])
    now = _run(["ip", "netns", "exec", netns, "cat", str(_SYSCTL / "tcp_allowed_congestion_control")])
    if set(missing) <= set(now.stdout.split()):  # sysctl -q exits 0 even when the write failed
        return
    if not host_wide:
        raise RigError(
            f"netns {netns}: tcp_allowed_congestion_control is host-wide on this kernel (read-only in "
            f"namespaces); set the CC per socket instead (iperf3 -C {missing[0]}), or pass host_wide=True "
            f"to append {' '.join(missing)} to the host's list")
    host = _read_list(_SYSCTL / "tcp_allowed_congestion_control")
    (_SYSCTL / "tcp_allowed_congestion_control").write_text(" ".join(host + [n for n in missing if n not in host]))


_SS_ADDR = re.compile(r"^\S+\s+\S+\s+(?P<local>\S+)\s+(?P<remote>\S+)")


def subflow_ccs(netns: str | None) -> list[dict]:
    """Established TCP sockets in `netns` (None: this namespace) with the CC each runs.

    Each dict: local, remote ("addr:port"), cc, mptcp (True for an MPTCP subflow), and
    cwnd (packets), rtt_ms (smoothed) and bytes_acked when ss reports them.
    """
    p = _run(_in_netns(netns, ["ss", "-tinH", "state", "established"]), timeout=20)
    if p.returncode != 0:
        raise RigError(f"ss in netns {netns} failed: {p.stderr.strip()}")
    return parse_ss(p.stdout)


def parse_ss(text: str) -> list[dict]:
    """The sockets of `ss -tinH state established` output (see subflow_ccs)."""
    out: list[dict] = []
    sock: dict | None = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():  # socket line: Recv-Q Send-Q Local Peer
            m = _SS_ADDR.match(line)
            sock = {"local": m["local"], "remote": m["remote"]} if m else None
            continue
        if sock is not None:  # info line: the CC name comes first
            words = line.split()
            sock["cc"] = words[0] if words and ":" not in words[0] else ""
            sock["mptcp"] = "tcp-ulp-mptcp" in words
            fields = dict(w.split(":", 1) for w in words if ":" in w)
            if fields.get("cwnd", "").isdigit():
                sock["cwnd"] = int(fields["cwnd"])
            if fields.get("bytes_acked", "").isdigit():
                sock["bytes_acked"] = int(fields["bytes_acked"])
            if "rtt" in fields:
                sock["rtt_ms"] = float(fields["rtt"].split("/")[0])
            out.append(sock)
            sock = None
    return out


# `rig cc`: what the node role and lab staff run by hand.


@click.group("cc")
def cc_cli() -> None:
    """Coupled congestion controls (lia, olia, balia) on this host."""


@cc_cli.command("status")
def cc_status() -> None:
    """Which coupled CCs can run here, and why not."""
    for name in COUPLED:
        why = explain(name)
        click.echo(f"{name:6} {'ok' if why is None else why}")


@cc_cli.command("repairs")
def cc_repairs() -> None:
    """Runaway windows (a kernel 6.18 problem) each coupled CC has put back so far."""
    for name, count in repairs().items():
        click.echo(f"{name:6} {count}")


@cc_cli.command("register")
@click.argument("names", nargs=-1)
def cc_register(names: tuple[str, ...]) -> None:
    """Build and register NAMES (default: all three); ones whose object changed are registered again."""
    for name in names:
        _check_name(name)
    click.echo(register(sorted(set(names or COUPLED))))


@cc_cli.command("unregister")
def cc_unregister() -> None:
    """Remove the rig's BPF congestion controls."""
    unregister_all()
    click.echo("unregistered")


@cc_cli.command("subflows")
@click.option("--netns", default=None, help="namespace to look into (default: this one)")
def cc_subflows(netns: str | None) -> None:
    """Established TCP sockets and the CC each one runs (JSON lines)."""
    for sock in subflow_ccs(netns):
        click.echo(json.dumps(sock))
