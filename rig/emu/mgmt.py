"""The emulated rig's management network and an SSH server on every emulated host.

Like a real lab, every host has a management interface (`mgmt0`, 10.0.0.0/24 with the lab's
numbering) on one switch: a bridge in the `<prefix>-mgmt` namespace, which is also where the
controller's tools (ssh, ansible-playbook) run. So the SSH transport and the Ansible roles reach
emulated nodes exactly as they reach the lab's boards.

Each host's sshd runs in a private mount namespace in which /etc, /usr, /var, /opt, /root,
/home and /srv are overlays whose upper layers live in the rig's state directory, and /run is a
fresh tmpfs: whatever a role writes on an emulated node stays in that node's layer, and the host's
own files are never touched. Deleting the state directory discards every node's changes.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from ipaddress import IPv4Address
from pathlib import Path

from rig.emu import netns
from rig.errors import RigError

MGMT_SUBNET = "10.0.0.0/24"
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
    """The controller's key pair and the hosts' shared host key, in the rig's state dir."""

    def __init__(self, state_dir: Path):
        self.dir = state_dir / "ssh"
        self.client_key = self.dir / "id_ed25519"
        self.host_key = self.dir / "host_ed25519"

    def ensure(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.dir.chmod(0o700)
        for key in (self.client_key, self.host_key):
            if not key.exists():
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "rig-emulated", "-f", str(key)],
                               check=True, capture_output=True)


SSHD_CONFIG = """\
# Written by the emulated rig: sshd of emulated host {host}, management network only.
ListenAddress {address}
HostKey /etc/ssh/rig_host_ed25519
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


def prepare_layer(state_dir: Path, host: str, keys: SshKeys) -> None:
    """The host's private upper layers, seeded with its sshd config, host key and authorized key."""
    layer = _layer(state_dir, host)
    for d in OVERLAID:
        (layer / "upper" / d).mkdir(parents=True, exist_ok=True)
        (layer / "work" / d).mkdir(parents=True, exist_ok=True)
    etc_ssh = layer / "upper" / "etc" / "ssh"
    etc_ssh.mkdir(parents=True, exist_ok=True)
    (etc_ssh / "rig_sshd_config").write_text(SSHD_CONFIG.format(host=host, address=mgmt_address(host)))
    shutil.copy(keys.host_key, etc_ssh / "rig_host_ed25519")
    (etc_ssh / "rig_host_ed25519").chmod(0o600)
    root_ssh = layer / "upper" / "root" / ".ssh"
    root_ssh.mkdir(parents=True, exist_ok=True)
    (root_ssh / "authorized_keys").write_text(keys.client_key.with_suffix(".pub").read_text())


def sshd_script(state_dir: Path, host: str) -> str:
    """Mount the overlays and a private /run, then become sshd (run under `unshare --mount`)."""
    layer = _layer(state_dir, host)
    lines = ["set -e"]
    for d in OVERLAID:
        lines.append(f"mount -t overlay overlay -o lowerdir=/{d},upperdir={layer}/upper/{d},workdir={layer}/work/{d} /{d}")
    lines += ["mount -t tmpfs -o mode=755 tmpfs /run", "mkdir -p /run/sshd", "chmod 700 /root/.ssh",
              "exec /usr/sbin/sshd -D -e -f /etc/ssh/rig_sshd_config"]
    return "\n".join(lines)


def start_sshd(prefix: str, state_dir: Path, host: str, keys: SshKeys) -> subprocess.Popen:
    prepare_layer(state_dir, host, keys)
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
