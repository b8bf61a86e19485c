"""`rig doctor`: what this host can do for the rig, what is missing, and the fix for each."""

from __future__ import annotations

import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

import click

from rig.ops.host_tools import which


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _run(argv: list[str]) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None


def check_root() -> Check:
    ok = os.geteuid() == 0
    return Check("root", ok, "running as root" if ok else "not root", "run as root (namespaces, sysctls, TAPs need it)")


def check_mptcp() -> Check:
    v = _read("/proc/sys/net/mptcp/enabled")
    if v is None:
        return Check("kernel MPTCP", False, "no net.mptcp sysctls", "boot a kernel with CONFIG_MPTCP=y (upstream >= 5.15)")
    return Check("kernel MPTCP", v == "1", f"net.mptcp.enabled={v}", "sysctl -w net.mptcp.enabled=1")


def check_ccs() -> list[Check]:
    avail = (_read("/proc/sys/net/ipv4/tcp_available_congestion_control") or "").split()
    out = [Check("congestion controls", bool(avail), " ".join(avail) or "none")]
    try:
        from rig import congestion
    except ImportError:
        return out
    for name in congestion.RIG_CCS:
        why = congestion.explain(name)
        kind = "coupled" if name in congestion.COUPLED else "rig"
        out.append(Check(f"{kind} CC {name}", why is None, "can run (BPF struct_ops)" if why is None else why.message,
                         "see docs/congestion-control.md", required=False))
    return out


def check_iperf3() -> Check:
    p = _run(["iperf3", "--version"])
    if p is None:
        return Check("iperf3 MPTCP mode", False, "iperf3 not installed", "apt-get install iperf3 mptcpize")
    version = p.stdout.split("\n")[0]
    native = "--mptcp" in (_run(["iperf3", "--help"]) or p).stdout
    if native:
        return Check("iperf3 MPTCP mode", True, f"{version}, native -m")
    ok = which("mptcpize") is not None
    return Check("iperf3 MPTCP mode", ok, f"{version}, via mptcpize" if ok else f"{version}, no --mptcp and no mptcpize",
                 "apt-get install mptcpize")


def check_emulator() -> Check:
    try:
        from rig.rigs.emulated.build import emulator_binary
    except ImportError as e:
        return Check("ns-3 emulator", False, f"cannot load the build module: {e}", "pip install -e . (ns3 wheel)")
    path = emulator_binary()
    return Check("ns-3 emulator", path.exists(), f"built: {path}" if path.exists() else "not built",
                 "python -m rig.rigs.emulated.build (scripts/install.sh does it)")


def check_path_manager() -> Check:
    """The rig's mptcpd plugin, which campaigns with paths.manager userspace run (optional)."""
    from rig.rigs import mptcpd

    path = mptcpd.PLUGIN_BUILD / f"{mptcpd.PLUGIN}.so"
    return Check("mptcpd plugin", path.is_file(), f"built: {path}" if path.is_file() else
                 "not built: campaigns with paths.manager userspace cannot run",
                 f"make -C {mptcpd.PLUGIN_BUILD.parent} (scripts/install.sh does it)", required=False)


def check_namespaces() -> Check:
    name = f"rigdoctor-{uuid.uuid4().hex[:6]}"
    p = _run(["ip", "netns", "add", name])
    if p is None or p.returncode != 0:
        return Check("network namespaces", False, (p.stderr.strip() if p else "no ip command"), "run as root with iproute2")
    _run(["ip", "netns", "del", name])
    tun = Path("/dev/net/tun").exists()
    return Check("namespaces + TAP", tun, "ip netns works" + ("" if tun else ", but /dev/net/tun is missing"), "modprobe tun")


def check_steal() -> Check:
    """In a virtual machine: how much CPU time its hypervisor has taken since boot. While it takes
    any, the emulated rig's runs lag (docs/emulator.md, "Why runs lag")."""
    from rig.core.hostcpu import cpu_ticks, steal_share

    share = steal_share((0, 0), cpu_ticks()) or 0.0
    return Check("CPU steal", share < 0.001, f"the hypervisor took {share:.1%} of this host's CPU time since boot",
                 "emulated runs lag while it does: run campaigns on a host of its own, or at a quieter hour "
                 "(docs/emulator.md, \"Why runs lag\")", required=False)


def check_optional() -> list[Check]:
    netem = _run(["tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "0ms"])
    has_netem = netem is not None and netem.returncode == 0
    if has_netem:
        _run(["tc", "qdisc", "del", "dev", "lo", "root"])
    return [
        Check("sch_netem", has_netem, "available" if has_netem else "absent: delay/jitter/loss come from ns-3", required=False),
    ]


def check_programs() -> list[Check]:
    """Every program of rig.ops.host_tools: the ones the emulated rig and the demo run are required."""
    from rig.ops.host_tools import PROGRAMS, which

    out = []
    for prog in PROGRAMS:
        if which(prog.name) is None:
            out.append(Check(f"program {prog.name}", False, f"not installed ({prog.used_for})",
                             f"apt-get install {prog.package} (scripts/install.sh)", required=prog.needed_by in ("rig", "demo")))
    found = len(PROGRAMS) - len(out)
    out.insert(0, Check("programs", not any(c.required for c in out), f"{found} of {len(PROGRAMS)} installed"))
    return out


def run_checks() -> list[Check]:
    return [check_root(), check_mptcp(), *check_ccs(), check_iperf3(), check_emulator(), check_namespaces(),
            *check_programs(), check_path_manager(), *check_optional(), check_steal()]


# The CCs campaigns use; a node's report lists these, and whatever else its kernel has.
CAMPAIGN_CCS = ("cubic", "reno", "lia", "olia", "balia")


def node_cc_report(inventory: Path) -> list[tuple[str, dict[str, congestion.WhyNot | None]]]:
    """Per node of the inventory: each CC and why it cannot run there (None: it can)."""
    from rig import congestion
    from rig.rigs.lab import CONTROL_DIR, NODE_CC_FIX, check_hosts, load_lab, node_cc_facts

    lab = load_lab(inventory)
    check_hosts(lab)  # bad variables: one line, before any node is asked
    hosts = lab.senders + lab.receivers
    facts = node_cc_facts(lab, hosts, CONTROL_DIR)
    report = []
    for host in hosts:
        names = list(CAMPAIGN_CCS) + sorted(facts[host].available - set(CAMPAIGN_CCS))
        report.append((host, {cc: congestion.why_not(cc, facts[host], NODE_CC_FIX) for cc in names}))
    return report


def _doctor_nodes(inventory: Path) -> None:
    report = node_cc_report(inventory)
    for host, ccs in report:
        click.echo(f"{host}: can run {' '.join(cc for cc, why in ccs.items() if why is None) or 'nothing'}")
        for cc, why in ccs.items():
            if why is not None:
                click.echo(f"{host}: cannot run {cc}: {why}")
    lacking = [host for host, ccs in report if any(ccs[cc] for cc in CAMPAIGN_CCS)]
    if lacking:
        click.echo(f"not ready for every campaign CC: {', '.join(lacking)}")
        raise SystemExit(1)
    click.echo(f"every node can run {' '.join(CAMPAIGN_CCS)}")


@click.command()
@click.option("--rig", "inventory", type=click.Path(path_type=Path), default=None,
              help="Check the nodes of this inventory (the physical lab) over SSH instead of this host: "
                   "which congestion controls each can run, and why not.")
def doctor(inventory: Path | None) -> None:
    """Report what this host (or each node of --rig) can do for the rig, and the fix for anything missing."""
    if inventory is not None:
        _doctor_nodes(inventory)
        return
    checks = run_checks()
    for c in checks:
        mark = "ok " if c.ok else ("MISSING" if c.required else "no ")
        line = f"{mark:8} {c.name:22} {c.detail}"
        if not c.ok and c.fix:
            line += f"  -> fix: {c.fix}"
        click.echo(line)
    missing = [c.name for c in checks if c.required and not c.ok]
    if missing:
        click.echo(f"not ready: {', '.join(missing)}")
        raise SystemExit(1)
    click.echo("ready for the emulated rig and the demo")
