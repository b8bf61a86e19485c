"""Every external program the rig runs on this machine, and the Debian package it comes from.

The one list: `rig doctor` checks these are installed, scripts/install.sh installs their
packages (tests/system/test_install.py checks each program is there and `dpkg -S` attributes it to a
package install.sh lists), and that test also greps the code for programs missing from here.
Programs of the Python environment (ansible-lint, the rig itself) come from pyproject.toml;
the lab's boards get theirs from the node role (node_packages).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

# Where the rig looks for programs: the system's PATH, not a virtualenv's.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class Program:
    name: str
    package: str  # the Debian package that ships it (listed in scripts/install.sh)
    used_for: str
    # "rig": the emulated rig and campaigns cannot run without it; "demo": ./demo.sh needs it too;
    # "lab": the physical lab or optional features; "tests": only the test suite runs it.
    needed_by: str


PROGRAMS: tuple[Program, ...] = (
    Program("ip", "iproute2", "namespaces, addresses, rules, routes, MPTCP endpoints", "rig"),
    Program("ss", "iproute2", "subflow snapshots and server readiness (node agent)", "rig"),
    Program("tc", "iproute2", "probing sch_netem (rig doctor)", "lab"),
    Program("sysctl", "procps", "the nodes' MPTCP and TCP settings", "rig"),
    Program("iperf3", "iperf3", "the traffic of every run", "rig"),
    Program("mptcpize", "mptcpize", "makes iperf3 3.12 (no --mptcp) open MPTCP sockets", "rig"),
    Program("sh", "dash", "node setup scripts (node agent)", "rig"),
    Program("bash", "bash", "scripts/install.sh, demo.sh, SSH reachability probe", "rig"),
    # coreutils: node scripts, scripts/install.sh, demo.sh, the CC reproducer, the tests
    *(Program(name, "coreutils", "shell scripts and node commands", "rig") for name in (
        "cat", "head", "tail", "uname", "sleep", "ls", "sort", "cut", "tr", "dirname", "basename", "ln", "rm", "cp",
        "touch", "mktemp", "timeout", "sha256sum", "env", "seq")),
    Program("xargs", "findutils", "the CC reproducer's cleanup (nodes/bpf/repro)", "lab"),
    Program("tar", "tar", "the node role packs the agent's modules on the controller", "lab"),
    Program("jq", "jq", "the CC reproducer reads iperf3's JSON (nodes/bpf/repro)", "lab"),
    Program("unshare", "util-linux", "a private /run for each emulated node's sshd", "lab"),
    *(Program(name, "mount", "a small filesystem that fills up under a campaign's results", "tests")
      for name in ("mount", "umount")),
    Program("dpkg-query", "dpkg", "scripts/install.sh: which packages are missing", "rig"),
    Program("apt-get", "apt", "scripts/install.sh installs the packages", "rig"),
    Program("grep", "grep", "server readiness check on the nodes", "rig"),
    Program("sed", "sed", "nodes/bpf/Makefile (target architecture)", "lab"),
    Program("python3", "python3-minimal", "the node agent over SSH, Ansible's interpreter", "lab"),
    Program("g++", "g++", "compiles the ns-3 radio emulator", "rig"),
    Program("make", "make", "builds the BPF congestion controls", "lab"),
    Program("clang", "clang", "compiles the BPF congestion controls", "lab"),
    Program("bpftool", "bpftool", "registers and inspects the BPF congestion controls", "lab"),
    Program("modprobe", "kmod", "loads out-of-tree MPTCP CC modules (rig-cc-register)", "lab"),
    Program("chronyc", "chrony", "each lab node's clock offset, recorded per run (node agent)", "lab"),
    Program("modinfo", "kmod", "which out-of-tree MPTCP CC modules a kernel has (CC facts)", "lab"),
    Program("ethtool", "ethtool", "offloads off in the CC end-to-end test", "tests"),
    Program("ping", "iputils-ping", "reachability by hand (rig emu up prints it)", "lab"),
    Program("hostapd", "hostapd", "parses the rendered AP configs", "tests"),
    # outside PATH (Debian's systemd unit starts it): named by its path
    Program("/usr/libexec/mptcpd", "mptcpd", "a sender's path manager with the rig's plugin (paths.manager "
            "userspace), and Debian's plugins in test_path_return", "lab"),
    Program("gcc", "gcc", "compiles the rig's mptcpd plugin (nodes/mptcpd)", "lab"),
    Program("wpa_supplicant", "wpasupplicant", "parses the rendered WiFi client configs", "tests"),
    Program("chronyd", "chrony", "parses the rendered chrony.conf (chronyd -p)", "tests"),
    Program("nft", "nftables", "checks the APs' rendered upstream NAT (nft -c)", "tests"),
    Program("iw", "iw", "WiFi adapter capabilities (ap_hostapd preflight)", "lab"),
    Program("influxd", "influxdb", "the embedded time-series sink (rig influx start)", "demo"),
    Program("git", "git", "provenance: the rig's commit in every campaign", "rig"),
    Program("ansible-playbook", "ansible-core", "provisioning the lab, re-wiring between setups", "lab"),
    Program("ansible-inventory", "ansible-core", "reading the lab's inventory (--rig INVENTORY)", "lab"),
    Program("ssh", "openssh-client", "reaching the lab's nodes (SSH transport)", "lab"),
    Program("ssh-keygen", "openssh-client", "keys of the emulated rig's management network", "lab"),
    Program("sshd", "openssh-server", "SSH servers of emulated nodes (rig emu up --ssh)", "lab"),
    Program("useradd", "passwd", "the runner's own account on emulated nodes (rig emu up --ssh)", "lab"),
    Program("sudo", "sudo", "the runner's account starts the node agent as root (emulated nodes over SSH)", "lab"),
    Program("journalctl", "systemd", "the nightly's failure note", "lab"),
    Program("systemd-analyze", "systemd", "verifies the nightly units and the units the roles render", "tests"),
    Program("chromium", "chromium", "renders the report in the tests", "tests"),
)

BY_NAME = {p.name: p for p in PROGRAMS}


def which(name: str) -> str | None:
    """The program's path on the system PATH (sbin included, as root has it), or None."""
    return shutil.which(name, path=SYSTEM_PATH)


def missing(needed_by: tuple[str, ...]) -> list[Program]:
    return [p for p in PROGRAMS if p.needed_by in needed_by and which(p.name) is None]
