"""The rig's SSH trust (docs/security.md), for real on the emulated rig's management network:
the controller knows its nodes' host keys, the runner's key starts the agent and nothing else,
only from the controller, and the SSH control sockets live in a private directory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.ansible_env import ANSIBLE, BIN, ansible_env
from fixtures.cli import run_rig
from rig.rigs.emulated import mgmt
from rig.rigs.emulated.emulated_rig import EmulatedRig
from rig.model.block import BlockSettings
from rig.core.errors import RigError
from rig.rigs.lab import CONTROL_DIR
from rig.agents.ssh import SshTransport

SETTINGS = BlockSettings("II", "n5", "band7-10mhz", 1, {})
HELLO = '{"op": "hello"}\n{"op": "quit"}\n'


def ssh_up(prefix: str) -> EmulatedRig:
    rig = EmulatedRig(prefix)
    rig.up(SETTINGS, ssh=True)
    return rig


def sshd_listener(rig: EmulatedRig, host: str) -> int:
    """The pid of the sshd that listens in `host`'s namespace (not a session's)."""
    pids = subprocess.run(["ip", "netns", "pids", rig.ns(host)], capture_output=True, text=True, check=True).stdout.split()
    for pid in pids:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"[listener]" in cmdline:  # sshd's own title for its listening process
            return int(pid)
    raise AssertionError(f"no sshd listening in {rig.ns(host)}")


def from_elsewhere(rig: EmulatedRig, key: Path) -> SshTransport:
    """A client on r1's management address (not the controller's), with its own control sockets."""
    keys = mgmt.SshKeys(rig.state_dir)
    return SshTransport({"s1": str(mgmt.mgmt_address("s1"))}, known_hosts=keys.known_hosts, control_dir=rig.state_dir / "r1-ssh",
                        key=key, via=["ip", "netns", "exec", rig.ns("r1")])


@pytest.mark.emulated
def test_a_node_whose_host_key_changed_is_refused_in_one_line(tmp_path, emulator, rig_prefix):
    rig = ssh_up(rig_prefix)
    keys = mgmt.SshKeys(rig.state_dir)
    recorded = keys.known_hosts.read_text()
    assert {line.split()[0] for line in recorded.splitlines()} == {"s1,10.0.0.21", "r1,10.0.0.31"}

    # s1 gets a new host key (as a reinstalled board would), through the provisioning key's shell;
    # sshd re-reads it on SIGHUP.
    shell = rig.ssh_transport(provisioning=True)
    p = subprocess.run(shell.argv("s1", ["sh", "-c", "rm -f /etc/ssh/ssh_host_ed25519_key* && "
                                         "ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key"]),
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    os.kill(sshd_listener(rig, "s1"), signal.SIGHUP)
    mgmt.wait_for_ssh(rig.prefix, ["s1"])

    with pytest.raises(RigError) as refused:
        rig.ssh_transport().connect("s1")
    line = str(refused.value)
    assert "\n" not in line and line.startswith("s1 (10.0.0.21): its SSH host key has changed"), line
    assert str(keys.known_hosts) in line and "rig emu up --ssh" in line, line
    rig.ssh_transport().connect("r1")  # the other node is still trusted

    # A campaign on that rig: one line and a non-zero status, not ssh's banner.
    campaign = tmp_path / "c.yaml"
    campaign.write_text("name: trust\nsetups: [II]\npairs: 1\nfactors: {volume: [3MB]}\n")
    run = run_rig("campaign", "run", str(campaign), "--out", str(tmp_path / "results"), "--prefix", rig.prefix,
                  "--transport", "ssh", "--use-running")
    errors = [ln for ln in run.stderr.splitlines() if ln.startswith("error:")]
    assert run.returncode == 1 and len(errors) == 1, run.stderr
    assert "s1 (10.0.0.21): its SSH host key has changed" in errors[0], run.stderr
    assert "IDENTIFICATION HAS CHANGED" not in run.stderr and "@@@" not in run.stderr, run.stderr
    assert keys.known_hosts.read_text() == recorded  # nothing re-trusted behind the user's back


@pytest.mark.emulated
def test_the_runner_key_gets_the_agent_not_a_shell(tmp_path, emulator, rig_prefix):
    rig = ssh_up(rig_prefix)
    runner = rig.ssh_transport()
    keys = mgmt.SshKeys(rig.state_dir)
    shell = rig.ssh_transport(provisioning=True)
    on_s1 = lambda script: subprocess.run(shell.argv("s1", ["sh", "-c", script]), capture_output=True, text=True,
                                          timeout=30, check=True).stdout
    runner_blob = keys.runner.with_suffix(".pub").read_text().split()[1]
    # The runner logs in as an account of its own whose only key is the runner's, in a file of root's.
    auth = on_s1(f"cat {mgmt.RUNNER_HOME}/.ssh/authorized_keys").splitlines()
    assert len(auth) == 1 and runner_blob in auth[0], auth
    assert auth[0].startswith('from="10.0.0.2",restrict,command="sudo -n /usr/bin/python3 -u -I '), auth
    assert runner_blob not in on_s1("cat /root/.ssh/authorized_keys")
    assert on_s1(f"stat -c '%U %a' {mgmt.RUNNER_HOME} {mgmt.RUNNER_HOME}/.ssh {mgmt.RUNNER_HOME}/.ssh/authorized_keys"
                 ).split("\n")[:3] == ["root 755", "root 755", "root 644"]
    assert runner.destination("s1").startswith(f"{mgmt.RUNNER_USER}@")

    # Whatever command the client asks for, the node runs the agent: it answers hello.
    p = subprocess.run(runner.argv("s1", ["sh", "-c", "echo a-shell-ran; id"]), input=HELLO,
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert "a-shell-ran" not in p.stdout and "uid=" not in p.stdout
    assert "python" in json.loads(p.stdout.splitlines()[0]), p.stdout
    # No pty either (restrict); the agent still answers.
    p = subprocess.run([*runner.via, "ssh", "-tt", *runner.ssh_options("s1"), runner.destination("s1"), "bash"],
                       input=HELLO, capture_output=True, text=True, timeout=30)
    assert "PTY allocation request failed" in p.stderr and "python" in p.stdout, (p.stdout, p.stderr)
    # No port forwarding (a remote forward is refused).
    p = subprocess.run([*runner.via, "ssh", "-o", "ControlPath=none", "-o", "ExitOnForwardFailure=yes", "-N",
                        "-R", "127.0.0.1:0:127.0.0.1:22", *runner.ssh_options("s1"), runner.destination("s1")],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode != 0 and "forwarding failed" in p.stderr, p.stderr

    # Only from the controller's address: from r1's management address the keys are refused.
    for key in (keys.runner, keys.provisioning):
        with pytest.raises(RigError, match="SSH refused the rig's key"):
            from_elsewhere(rig, key).connect("s1")

    # The control sockets are in the rig's 0700 state directory, one set per key.
    control = [o.split("=", 1)[1] for o in runner.ssh_options("s1") if o.startswith("ControlPath=")][0]
    assert control == f"{keys.dir}/runner_ed25519-%C" and not control.startswith("/tmp")
    assert oct(keys.dir.stat().st_mode & 0o777) == "0o700"


def test_control_sockets_live_in_a_private_directory(tmp_path):
    d = tmp_path / "rig" / "ssh"
    t = SshTransport({"s1": "10.0.0.21"}, known_hosts=tmp_path / "known_hosts", control_dir=d)
    assert f"ControlPath={d}/default-%C" in t.ssh_options("s1")
    assert d.stat().st_mode & 0o777 == 0o700
    d.chmod(0o755)  # ours, and nobody else could write into it: narrowed
    t.ssh_options("s1")
    assert d.stat().st_mode & 0o777 == 0o700
    d.chmod(0o777)
    with pytest.raises(RigError, match="writable by others"):
        t.ssh_options("s1")
    d.chmod(0o700)
    os.chown(d, 65534, 65534)
    with pytest.raises(RigError, match="must be a directory owned by"):
        t.ssh_options("s1")
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    with pytest.raises(RigError, match="must be a directory owned by"):
        SshTransport({}, known_hosts=tmp_path / "kh", control_dir=link).ssh_options("s1")
    assert not str(CONTROL_DIR).startswith("/tmp")


def test_host_key_checking_is_strict_with_the_rigs_known_hosts(tmp_path):
    t = SshTransport({"s1": "10.0.0.21"}, known_hosts=tmp_path / "known_hosts", control_dir=tmp_path / "ctl")
    opts = " ".join(t.argv("s1", ["true"]))
    assert "StrictHostKeyChecking=yes" in opts and f"UserKnownHostsFile={tmp_path / 'known_hosts'}" in opts
    assert "HostKeyAlias=s1" in opts and "/dev/null" not in opts.replace("GlobalKnownHostsFile=/dev/null", "")


def _preflight(tmp_path: Path, host: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([BIN / "ansible-playbook", "site.yml", "--check", "-c", "local", "-l", host, "--tags", "preflight",
                           "--vault-password-file", "vault-demo-password.txt", "-e", f"ansible_python_interpreter={sys.executable}",
                           *extra], cwd=ANSIBLE, env=ansible_env(tmp_path), capture_output=True, text=True, timeout=300)


def test_preflights_refuse_an_open_influxdb_and_smuggled_key_options(tmp_path):
    assert _preflight(tmp_path, "ctrl").returncode == 0
    ok = _preflight(tmp_path, "ctrl", "-e", "controller_influxdb_bind_address=10.0.0.2:8086")  # auth follows
    assert ok.returncode == 0, ok.stdout[-2000:]
    open_db = _preflight(tmp_path, "ctrl", "-e", "controller_influxdb_bind_address=0.0.0.0:8086",
                         "-e", "controller_influxdb_auth_enabled=false")
    assert open_db.returncode != 0 and "is beyond loopback" in open_db.stdout, open_db.stdout[-2000:]

    # this host has none of a board's radios: the node's interface preflight is an emulated node's
    emulated = ("-e", "node_emulated=true")
    assert _preflight(tmp_path, "s1", *emulated).returncode == 0
    smuggled = _preflight(tmp_path, "s1", *emulated, "-e", '{"node_runner_from": ["10.0.0.2\\",command=\\"sh"]}')
    assert smuggled.returncode != 0 and "authorized_keys line" in smuggled.stdout, smuggled.stdout[-2000:]
