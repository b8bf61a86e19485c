"""The emulated rig's management network and an SSH server on every emulated host.

Like a real lab, every host has a management interface (`mgmt0`, 10.0.0.0/24 with the lab's
numbering) on one switch: a bridge in the `<prefix>-mgmt` namespace, which is also where the
controller's tools (ssh, ansible-playbook) run. So the SSH transport and the Ansible roles reach
emulated nodes exactly as they reach the lab's boards.

Each host's sshd runs in a private mount namespace in which /etc, /usr, /var, /opt, /root,
/home and /srv are overlays whose upper layers live in the rig's state directory, and /run is a
fresh tmpfs: whatever a role writes on an emulated node stays in that node's layer, and the host's
own files are never touched. Deleting the state directory discards every node's changes.

Trust as on the lab (docs/security.md): every host has its own sshd host key, recorded in the
rig's known_hosts before its sshd starts; the controller's two keys are accepted only from the
controller's address, the runner's restricted to starting the agent.
"""

from __future__ import annotations

import subprocess
import time
from ipaddress import IPv4Address
from pathlib import Path

from rig.rigs.emulated import netns
from rig.core.errors import RigError

MGMT_SUBNET = "10.0.0.0/24"
# The campaign runner's own account on every node, as the node role makes it on the lab: key only,
# no sudo but the agent's command line, its home and authorized_keys root's (docs/security.md).
RUNNER_USER = "rig-runner"
RUNNER_HOME = "/var/lib/rig-runner"
CONTROLLER_ADDRESS = IPv4Address("10.0.0.2")
OVERLAID = ("etc", "usr", "var", "opt", "root", "home", "srv")


def mgmt_address(host: str) -> IPv4Address:
    """The lab's numbering (inventory.ini): APs .11-.13, senders .21-, receivers .31-."""
    base = IPv4Address("10.0.0.0")
    if host[0] in "sr" and host[1:].isdigit():
        return base + (20 if host[0] == "s" else 30) + int(host[1:])
    fixed = {"epc": 3, "core": 5, "ap1": 11, "ap2": 12, "ap3": 13}
    if host not in fixed:
        raise RigError(f"no management address for host {host!r}")
    return base + fixed[host]


def wire_management(prefix: str, hosts: list[str]) -> None:
    """A bridge in <prefix>-mgmt and a `mgmt0` veth into every host."""
    mgmt = f"{prefix}-mgmt"
    netns.add(mgmt)
    netns.ip_batch(mgmt, ["link add br0 type bridge", "link set br0 up", f"addr add {CONTROLLER_ADDRESS}/24 dev br0"])
    for host in hosts:
        port = f"m-{host}"
        netns.ip("link", "add", port, "type", "veth", "peer", "name", "mgmt0", "netns", f"{prefix}-{host}", netns=mgmt)
        netns.ip_batch(mgmt, [f"link set {port} master br0", f"link set {port} up"])
        netns.ip_batch(f"{prefix}-{host}", [f"addr add {mgmt_address(host)}/24 dev mgmt0", "link set mgmt0 up"])


class SshKeys:
    """The controller's two key pairs and the hosts' recorded host keys, in the rig's state dir.

    `provisioning` logs in with a full shell (Ansible, tests); `runner` is the campaign runner's,
    which the nodes restrict to starting the agent (docs/security.md)."""

    def __init__(self, state_dir: Path):
        self.dir = state_dir / "ssh"
        self.provisioning = self.dir / "id_ed25519"
        self.runner = self.dir / "runner_ed25519"
        self.known_hosts = self.dir / "known_hosts"

    def ensure(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.dir.chmod(0o700)
        for key in (self.provisioning, self.runner):
            if not key.exists():
                _keygen(key, f"rig-emulated-{key.stem}")


def _keygen(path: Path, comment: str) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)], check=True, capture_output=True)


def runner_command(agent: str) -> str:
    """The forced command of the runner's key on emulated nodes, as the node role writes it."""
    return f"sudo -n /usr/bin/python3 -u -I {agent}"


def authorized_keys(keys: SshKeys) -> str:
    """root's: the provisioning key (a shell, for Ansible and tests), from the controller only."""
    return f'from="{CONTROLLER_ADDRESS}" {keys.provisioning.with_suffix(".pub").read_text().strip()}\n'


def runner_authorized_keys(keys: SshKeys, agent: str) -> str:
    """The runner account's: from the controller only, its key runs the agent and nothing else
    (`restrict`: no pty, no forwarding), the line the node role writes on the lab's boards."""
    return (f'from="{CONTROLLER_ADDRESS}",restrict,command="{runner_command(agent)}" '
            f'{keys.runner.with_suffix(".pub").read_text().strip()}\n')


SSHD_CONFIG = """\
# Written by the emulated rig: sshd of emulated host {host}, management network only.
ListenAddress {address}
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
Subsystem sftp internal-sftp
"""


def _layer(state_dir: Path, host: str) -> Path:
    return state_dir / "fs" / host


def prepare_layer(state_dir: Path, host: str, keys: SshKeys, agent: str, node_dir: Path) -> str:
    """The host's private upper layers, seeded with its sshd config, its own new host key (in the
    usual place, over the host's), the authorized keys and the node's configuration (its radios,
    from `node_dir`, as the node role writes it); returns its known_hosts line."""
    layer = _layer(state_dir, host)
    etc_rig = layer / "upper" / "etc" / "rig"
    etc_rig.mkdir(parents=True, exist_ok=True)
    (etc_rig / "node.json").write_bytes((node_dir / f"{host}.json").read_bytes())
    for d in OVERLAID:
        (layer / "upper" / d).mkdir(parents=True, exist_ok=True)
        (layer / "work" / d).mkdir(parents=True, exist_ok=True)
    etc_ssh = layer / "upper" / "etc" / "ssh"
    etc_ssh.mkdir(parents=True, exist_ok=True)
    (etc_ssh / "rig_sshd_config").write_text(SSHD_CONFIG.format(host=host, address=mgmt_address(host)))
    host_key = etc_ssh / "ssh_host_ed25519_key"
    if not host_key.exists():
        _keygen(host_key, f"root@{host}")
    root_ssh = layer / "upper" / "root" / ".ssh"
    root_ssh.mkdir(parents=True, exist_ok=True)
    (root_ssh / "authorized_keys").write_text(authorized_keys(keys))
    runner_ssh = layer / "upper" / RUNNER_HOME.lstrip("/") / ".ssh"  # root's, 0755 (the role's modes)
    runner_ssh.mkdir(parents=True, exist_ok=True)
    for d in (runner_ssh.parent, runner_ssh):
        d.chmod(0o755)
    (runner_ssh / "authorized_keys").write_text(runner_authorized_keys(keys, agent))
    sudoers = layer / "upper" / "etc" / "sudoers.d"
    sudoers.mkdir(parents=True, exist_ok=True)
    (sudoers / "rig-agent").write_text(f"{RUNNER_USER} ALL=(root) NOPASSWD: /usr/bin/python3 -u -I {agent}\n")
    (sudoers / "rig-agent").chmod(0o440)
    kind, blob = host_key.with_suffix(".pub").read_text().split()[:2]
    return f"{host},{mgmt_address(host)} {kind} {blob}\n"


def record_host_keys(keys: SshKeys, lines: list[str]) -> None:
    """The emulated rig's known_hosts: written whole at `rig emu up --ssh`, its hosts' keys only."""
    tmp = keys.known_hosts.with_suffix(".tmp")
    tmp.write_text("".join(lines))
    tmp.replace(keys.known_hosts)


def sshd_script(state_dir: Path, host: str) -> str:
    """Mount the overlays and a private /run, then become sshd (run under `unshare --mount`)."""
    layer = _layer(state_dir, host)
    lines = ["set -e"]
    for d in OVERLAID:
        lines.append(f"mount -t overlay overlay -o lowerdir=/{d},upperdir={layer}/upper/{d},workdir={layer}/work/{d} /{d}")
    # The runner's account, in the node's own /etc (an overlay): key only ("*": no password, not locked).
    lines += [f"id -u {RUNNER_USER} >/dev/null 2>&1 || useradd --system --no-create-home --home-dir {RUNNER_HOME} "
              f"--shell /bin/sh --comment 'rig campaign runner' --password '*' {RUNNER_USER}"]
    lines += ["mount -t tmpfs -o mode=755 tmpfs /run", "mkdir -p /run/sshd", "chmod 700 /root/.ssh",
              "exec /usr/sbin/sshd -D -e -f /etc/ssh/rig_sshd_config"]
    return "\n".join(lines)


def start_sshd(prefix: str, state_dir: Path, host: str) -> subprocess.Popen:
    log = open(_layer(state_dir, host) / "sshd.log", "ab")
    argv = ["ip", "netns", "exec", f"{prefix}-{host}", "unshare", "--mount", "--propagation", "private",
            "sh", "-c", sshd_script(state_dir, host)]
    # Its own session: it outlives the command that started it; `rig emu down` kills it by namespace.
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)


def wait_for_ssh(prefix: str, hosts: list[str], timeout_s: float = 15) -> None:
    deadline = time.monotonic() + timeout_s
    pending = set(hosts)
    while pending and time.monotonic() < deadline:
        for host in sorted(pending):
            p = subprocess.run(["ip", "netns", "exec", f"{prefix}-mgmt", "bash", "-c",
                                f"exec 3<>/dev/tcp/{mgmt_address(host)}/22 && head -c 4 <&3"],
                               capture_output=True, text=True, timeout=5)
            if p.stdout.startswith("SSH-"):
                pending.discard(host)
        if pending:
            time.sleep(0.1)
    if pending:
        raise RigError(f"sshd did not come up on {', '.join(sorted(pending))}")
