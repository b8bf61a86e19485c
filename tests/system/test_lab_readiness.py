"""What a real lab needs on its first day, checked here where it can be:

- the gateways' core routes (core_router, as rendered in tests/golden/rendered/) carry every
  pair's paths in every setup, on real kernel routing in namespaces: a station per radio subnet,
  the APs and the EPC joined by one wired LAN;
- Debian 12's own ansible-core (2.14) stops at the playbooks' version check, in one line;
- ansible/check.yml, run on this host as a lab node and as gateways, ends with one line per
  problem naming the host, the check and the fix, exit status 2;
- the node role's packages resolve in this host's Debian index (bookworm).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from ipaddress import IPv4Network
from pathlib import Path

import pytest
import yaml

from fixtures.ansible_env import ANSIBLE, BIN, ansible_env
from fixtures.cli import REPO
from rig.model.topology import ATTACHMENTS, GATEWAY_HOST, SETUPS, topology

GOLDEN = REPO / "tests" / "golden" / "rendered"
# The inventory's gateway hosts by the address plan's gateway names.
GATEWAYS = {"ap1": "ap1", "ap2": "ap2", "ap3": "ap3", "epc": "epc1"}


def _core_addresses() -> dict[str, str]:
    text = (REPO / "inventory.ini").read_text()
    return {host: re.search(rf"^{host} ansible_host=(\S+)", text, re.M).group(1) for host in GATEWAYS.values()}


def _ping(ns: str, address: str) -> bool:
    return subprocess.run(["ip", "netns", "exec", ns, "ping", "-q", "-n", "-c", "1", "-W", "2", address],
                          capture_output=True).returncode == 0


def test_core_routes_carry_every_pairs_paths_in_every_setup(netns):
    lan = netns("lan")
    subprocess.run(["ip", "-n", lan, "link", "add", "br0", "type", "bridge"], check=True)
    subprocess.run(["ip", "-n", lan, "link", "set", "br0", "up"], check=True)
    gateways = {}
    for host, core in _core_addresses().items():
        ns = gateways[host] = netns(host)
        netns.veth(ns, "core0", lan, f"to-{host}")
        for argv in (["-n", lan, "link", "set", f"to-{host}", "master", "br0", "up"],
                     ["-n", ns, "addr", "add", f"{core}/24", "dev", "core0"], ["-n", ns, "link", "set", "core0", "up"]):
            subprocess.run(["ip", *argv], check=True)
        subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ip_forward=1"], check=True)
    stations = {}  # attachment -> (namespace, address)
    for name, (subnet, network) in ATTACHMENTS.items():
        net, gw = IPv4Network(subnet), gateways[GATEWAYS[GATEWAY_HOST[network]]]
        ns = netns(f"st-{name}")
        netns.veth(gw, f"r-{name}", ns, "radio0")
        address = net.network_address + 50
        for argv in (["-n", gw, "addr", "add", f"{net.network_address + 1}/{net.prefixlen}", "dev", f"r-{name}"],
                     ["-n", gw, "link", "set", f"r-{name}", "up"],
                     ["-n", ns, "addr", "add", f"{address}/{net.prefixlen}", "dev", "radio0"],
                     ["-n", ns, "link", "set", "radio0", "up"],
                     ["-n", ns, "route", "add", "default", "via", str(net.network_address + 1)]):
            subprocess.run(["ip", *argv], check=True)
        stations[name] = (ns, str(address))
    # Without the core routes (the lab before core_router) AP1's senders do not reach AP2's receivers.
    assert not _ping(stations["ap1"][0], stations["ap2"][1])
    for host, ns in gateways.items():
        subprocess.run(["ip", "-n", ns, "-batch", str(GOLDEN / host / "etc" / "rig" / "core-routes")], check=True)
    unreachable = []
    for setup in SETUPS:
        pair = topology(setup, 1).pairs[0]
        for src, dst in ((pair.radio("wifi"), pair.receiver_a), (pair.radio("lte"), pair.receiver_b)):
            if src.attachment == dst.attachment:
                continue  # the cell to itself (Setup I): the EPC's UPF, not the core
            for a, b in ((src.attachment, dst.attachment), (dst.attachment, src.attachment)):
                if not _ping(stations[a][0], stations[b][1]):
                    unreachable.append(f"Setup {setup}: {a} -> {b}")
    assert unreachable == []


def test_debians_ansible_stops_at_the_version_check(tmp_path):
    debian = Path("/usr/bin/ansible-playbook")
    if not debian.exists():
        pytest.skip("no Debian ansible-core here")
    run = subprocess.run([str(debian), "site.yml", "--check", "-c", "local", "-l", "s1"],
                         cwd=ANSIBLE, env=ansible_env(tmp_path), capture_output=True, text=True, timeout=300)
    version = re.search(r"ansible-playbook \[core (\S+)\]",
                        subprocess.run([str(debian), "--version"], capture_output=True, text=True).stdout).group(1)
    if not re.match(r"2\.(1[0-4]|[0-9])\.", version):
        pytest.skip(f"Debian's ansible-core here is {version}, not older than 2.15")
    out = run.stdout + run.stderr
    assert run.returncode == 2, out[-3000:]
    assert f"ansible-core {version} is older than 2.15, which these playbooks need: run the pinned one" in " ".join(out.split())
    assert re.search(r"s1 +: ok=0 +changed=0 .*failed=1", out), out[-2000:]


def test_the_venv_runs_the_pinned_ansible_core():
    pinned = re.search(r'"ansible-core==([0-9.]+)"', (REPO / "pyproject.toml").read_text()).group(1)
    run = subprocess.run([BIN / "ansible-playbook", "--version"], capture_output=True, text=True, timeout=60)
    assert f"[core {pinned}]" in run.stdout


CHECK_INVENTORY = """\
[controller]
ctrl ansible_host=127.0.0.1
[epc]
epc1 ansible_host=127.0.0.1 epc_s1_address=10.0.1.3
[aps]
ap1 ansible_host=127.0.0.1 ap_id=ap1 ap_if=wlan0
[senders]
s1 ansible_host=127.0.0.1 pair=1 node_host_id=11 wifi_if=rigwifi9 lte_if=rigwwan9 modem_type=qmi lte_imsi="001010000000011" lte_ip=10.45.0.11
[receivers]
r1 ansible_host=127.0.0.1 pair=1 node_host_id=21 wifi_if=lo wifi2_if=rigwifi8 lte_if=rigwwan8 modem_type=qmi lte_imsi="001010000000021" lte_ip=10.45.0.21
[nodes:children]
senders
receivers
"""


def test_check_playbook_names_each_problem_with_host_check_and_fix(tmp_path):
    """check.yml on this host (local connection) as two nodes and two gateways: none of the lab is
    here, so each check it makes fails, each in one line; exit status 2."""
    inventory = tmp_path / "lab.ini"
    inventory.write_text(CHECK_INVENTORY)
    extra = {"node_rig_command": f"{sys.executable} -m rig", "ansible_python_interpreter": sys.executable,
             "node_coupled_ccs": ["lia", "rig_nosuch"]}
    run = subprocess.run(
        [BIN / "ansible-playbook", "-i", inventory, "check.yml", "-c", "local", "-e", json.dumps(extra)],
        cwd=ANSIBLE, env={**ansible_env(tmp_path), "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=300,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 2, out[-4000:]
    block = out.split("[ERROR]: Task failed: Action failed: ", 1)[1].split("\nOrigin:", 1)[0]
    lines = block.strip().splitlines()
    assert all(re.match(r"^(s1|r1|ap1|epc1): [a-zA-Z -]+: .+: .+", line) for line in lines), out[-6000:]
    checks = {(line.split(": ")[0], line.split(": ")[1]) for line in lines}
    assert {("s1", "interfaces"), ("s1", "routes"), ("s1", "time sync"), ("s1", "congestion controls"),
            ("s1", "systemd-networkd"), ("r1", "interfaces"), ("ap1", "core routes"), ("epc1", "core routes")} <= checks
    assert ("r1", "routes") not in checks  # receivers are not asked to reach anyone
    assert "s1: interfaces: no rigwifi9 (wifi_if)" in block and "r1: interfaces: no rigwifi8 (wifi2_if)" not in block
    ccs = next(line for line in lines if line.startswith("s1: congestion controls: "))
    assert ccs.startswith("s1: congestion controls: rig_nosuch not loadable: ")  # lia runs here


def test_node_packages_resolve_in_this_hosts_debian_index(tmp_path):
    """apt resolves every package the node role installs (and the CC build tools) on an empty
    system, from this host's package index (bookworm here; the lab's arm64 index: see
    docs/provisioning.md, "Checked here")."""
    if not any(Path("/var/lib/apt/lists").glob("*_Packages*")):
        pytest.skip("no package index here (apt-get update)")
    defaults = yaml.safe_load((ANSIBLE / "roles" / "node" / "defaults" / "main.yml").read_text())
    status = tmp_path / "status"
    status.write_text("")
    run = subprocess.run(["apt-get", "-o", f"Dir::State::status={status}", "-s", "install",
                          *defaults["node_packages"], *defaults["node_cc_build_packages"]],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr
    installed = set(re.findall(r"^Inst (\S+) ", run.stdout, re.M))
    assert set(defaults["node_packages"]) <= installed
