"""The node role provisions the emulated rig's nodes over SSH, as it would the lab's boards.

A lab user's sequence, for real: `rig emu up --ssh`, `rig emu inventory`, ansible/nodes.yml from
the management namespace (twice: the second run must change nothing), then a campaign on the
same, still running nodes through the SSH transport with the agent the role installed. The
host's /etc must be as before: everything the role wrote lives in the nodes' private layers.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from fixtures.ansible_env import ANSIBLE, BIN, ansible_env
from fixtures.cli import REPO, run_rig
from fixtures.etc_fingerprint import etc_fingerprint
from rig import congestion
from rig.rigs.emulated import mgmt, netns
from rig.rigs.emulated.emulated_rig import STATE_ROOT, EmulatedRig
from rig.model.topology import topology
from rig.model.routing import node_plan
from rig.agents.ssh import SshTransport

AGENT = "/opt/rig/rig_agent.py"  # the role's node_agent_path
RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


@pytest.fixture
def ae_prefix():
    """A unique prefix for this file's rigs; the rig is torn down afterwards, also on failure."""
    prefix = "ae" + uuid.uuid4().hex[:5]
    try:
        yield prefix
    finally:
        EmulatedRig(prefix).down()
        assert netns.with_prefix(prefix) == [], "the rig left namespaces behind"


def play_recap(stdout: str) -> dict[str, dict[str, int]]:
    return {m[1]: {"ok": int(m[2]), "changed": int(m[3]), "unreachable": int(m[4]), "failed": int(m[5])}
            for m in RECAP.finditer(stdout.split("PLAY RECAP", 1)[-1])}


def nodes_playbook(prefix: str, inventory: Path, tmp_path: Path) -> dict[str, dict[str, int]]:
    """ansible/nodes.yml against the emulated rig, from its management namespace."""
    p = subprocess.run(
        ["ip", "netns", "exec", f"{prefix}-mgmt", BIN / "ansible-playbook", "-i", inventory, "nodes.yml",
         "--vault-password-file", ANSIBLE / "vault-demo-password.txt"],
        cwd=ANSIBLE, env=ansible_env(tmp_path), capture_output=True, text=True, timeout=300,
    )
    recap = play_recap(p.stdout)
    assert p.returncode == 0 and recap, p.stdout[-4000:] + p.stderr[-2000:]
    return recap


def on_node(prefix: str, host: str, script: str) -> str:
    keys = mgmt.SshKeys(STATE_ROOT / prefix)  # the provisioning key: a shell (the runner's gets only the agent)
    ssh = SshTransport({host: str(mgmt.mgmt_address(host))}, known_hosts=keys.known_hosts, key=keys.provisioning,
                       control_dir=keys.dir, via=["ip", "netns", "exec", f"{prefix}-mgmt"])
    p = subprocess.run(ssh.argv(host, ["sh", "-c", script]), capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.mark.emulated
def test_node_role_provisions_emulated_nodes_then_a_campaign_runs_on_them(tmp_path, emulator, ae_prefix):
    before = etc_fingerprint()
    assert not Path(AGENT).exists(), f"{AGENT} on this host: the test could not tell whose agent ran"
    up = run_rig("emu", "up", "--ssh", "--setup", "I", "--pairs", "1", "--prefix", ae_prefix, check=True)
    assert "coupled CCs runnable" in up.stdout and set(congestion.COUPLED) <= congestion.available(), up.stdout
    inventory = tmp_path / "emu.ini"
    inventory.write_text(run_rig("emu", "inventory", "--prefix", ae_prefix, check=True).stdout)
    keys = mgmt.SshKeys(STATE_ROOT / ae_prefix)
    recorded = keys.known_hosts.read_text()

    first = nodes_playbook(ae_prefix, inventory, tmp_path)
    second = nodes_playbook(ae_prefix, inventory, tmp_path)
    assert set(first) == set(second) == {"s1", "r1"}, first
    assert all(r["changed"] > 0 and r["failed"] == r["unreachable"] == 0 for r in first.values()), first
    assert all(r["changed"] == 0 and r["failed"] == r["unreachable"] == 0 for r in second.values()), second
    # The host keys the role read are the ones `rig emu up --ssh` recorded.
    assert keys.known_hosts.read_text() == recorded

    agent_sha = hashlib.sha256((REPO / "nodes" / "agent" / "rig_agent.py").read_bytes()).hexdigest()
    for host in ("s1", "r1"):
        mode, sha = on_node(ae_prefix, host, f"stat -c %a {AGENT}; sha256sum {AGENT}").split()[:2]
        assert (mode, sha) == ("755", agent_sha)
        # The node's routing plan is the one campaigns send (rig paths, one owner), and applied.
        stored = json.loads(on_node(ae_prefix, host, "test -x /usr/local/sbin/rig-if-up && cat /etc/rig/paths.json"))
        assert stored == node_plan(topology("I", 1), host)
        assert f"from {stored['interfaces'][0]['address']} lookup 101" in on_node(ae_prefix, host, "ip rule show")
        # The coupled CCs' sources, script and boot unit are installed; nothing is built or
        # registered from a node that shares the host's kernel (tasks/congestion.yml).
        installed = on_node(ae_prefix, host, "ls /opt/rig/bpf; test -x /usr/local/sbin/rig-cc-register && "
                                             "test -f /etc/systemd/system/rig-cc.service && echo unit; ls /var/cache/rig 2>&1 || true")
        assert {"Makefile", "lia.bpf.c", "coupled.bpf.h", "unit"} <= set(installed.split()) and "build" not in installed.split()
        assert "No such file" in installed, installed  # no build directory
    # The runner's key: from the controller only, and it starts the role's agent, nothing else,
    # as an account of its own: no group but its own, no sudo but the agent's command line, its
    # authorized_keys root's; not a key of the provisioning account (root here).
    runner = " ".join(keys.runner.with_suffix(".pub").read_text().split()[:2])
    home = "/var/lib/rig-runner"
    for host in ("s1", "r1"):
        assert on_node(ae_prefix, host, f"cat {home}/.ssh/authorized_keys").splitlines() == [
            f'from="10.0.0.2",restrict,command="sudo -n /usr/bin/python3 -u -I {AGENT}" {runner} rig-runner']
        assert runner not in on_node(ae_prefix, host, "cat /root/.ssh/authorized_keys")
        account = on_node(ae_prefix, host, f"getent passwd rig-runner; id -nG rig-runner; "
                                           f"stat -c '%U %a' {home} {home}/.ssh {home}/.ssh/authorized_keys").splitlines()
        assert account[0].split(":")[5:] == [home, "/bin/sh"] and account[1:] == ["rig-runner", "root 755", "root 755",
                                                                                  "root 644"], account
        rights = on_node(ae_prefix, host, "sudo -l -U rig-runner")
        assert rights.split("may run the following commands on")[1].split()[1:] == [
            "(root)", "NOPASSWD:", "/usr/bin/python3", "-u", "-I", AGENT], rights
        # The agent's radios: the node's own configuration, written by the role.
        # (the emulated inventory gives a sender its second modem, lte1, as lte2_if)
        radios = ["lte0", "lte1", "wlan0", "wlan1"] if host == "s1" else ["lte0", "wlan0", "wlan1"]
        assert sorted(json.loads(on_node(ae_prefix, host, "cat /etc/rig/node.json"))["radios"]) == radios
    assert not Path(AGENT).exists() and not Path("/etc/rig").exists() and not Path("/opt/rig/bpf").exists()

    # The same nodes, still up, through the SSH transport with the role-installed agent (which
    # exists only in the nodes' layers, so a run that works used it).
    campaign = tmp_path / "c.yaml"
    campaign.write_text("name: provisioned\nsetups: [I]\npairs: 1\nfactors: {volume: [3MB]}\nlimits: {max_lag_p99_ms: 200}\n")
    out = tmp_path / "results"
    run_rig("campaign", "run", str(campaign), "--out", str(out), "--prefix", ae_prefix, "--transport", "ssh",
            "--agent-path", AGENT, "--use-running", check=True)
    rows = pq.read_table(next(out.glob("provisioned-*")) / "runs.parquet").to_pylist()
    assert len(rows) == 1 and rows[0]["status"] == "ok" and rows[0]["bytes_lte"] > 0 and rows[0]["bytes_wifi"] > 0, rows
    assert EmulatedRig(ae_prefix).status()["up"], "--use-running must leave the user's rig up"
    assert on_node(ae_prefix, "s1", f"test -x {AGENT} && echo kept").strip() == "kept"

    assert etc_fingerprint() == before


def test_use_running_refuses_a_rig_that_is_not_up(tmp_path):
    campaign = tmp_path / "c.yaml"
    campaign.write_text("name: x\nsetups: [I]\npairs: 1\nfactors: {volume: [3MB]}\n")
    prefix = "ae" + uuid.uuid4().hex[:5]
    p = run_rig("campaign", "run", str(campaign), "--out", str(tmp_path / "results"), "--prefix", prefix,
                "--transport", "ssh", "--use-running")
    assert p.returncode == 1 and f"emulated rig '{prefix}' is not up" in p.stderr, p.stderr
    assert not (tmp_path / "results").exists()  # nothing half-written
    assert netns.with_prefix(prefix) == []
