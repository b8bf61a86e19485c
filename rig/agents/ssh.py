"""Transport over SSH: the physical lab's nodes, and emulated nodes on their management network.

One persistent master connection per host and key (ControlMaster), so the many short commands of
a campaign do not each pay an SSH handshake; the node agent itself is one long session per host.

The controller knows its nodes: host keys are checked against the rig's own known_hosts file
(StrictHostKeyChecking=yes, the node's name as HostKeyAlias), which the node role fills on the
lab and `rig emu up --ssh` on the emulated rig (docs/security.md). The key the runner logs in
with is restricted on the nodes to starting the agent (a forced command): the command this
transport asks for is then ignored by the node, which runs its own.
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import threading
from pathlib import Path

from rig.core.errors import RigError
from rig.agents.transport import popen_agent

DEFAULT_AGENT = "/opt/rig/rig_agent.py"  # where the Ansible node role installs the agent
# The rig's own SSH client configuration (ssh -F): nothing of ~/.ssh/config or /etc/ssh/ssh_config
# applies (no other identity, agent, proxy or forwarding); the options on the command line add the
# per-host ones, and the key: the transport's key is the only one offered.
SSH_CONFIG = """\
# Written by rig (rig/agents/ssh.py): the campaign runner's SSH client configuration.
Host *
    BatchMode yes
    IdentitiesOnly yes
    IdentityAgent none
    ForwardAgent no
    ForwardX11 no
    PasswordAuthentication no
    KbdInteractiveAuthentication no
    StrictHostKeyChecking yes
    GlobalKnownHostsFile /dev/null
"""


def private_dir(path: Path) -> Path:
    """`path` as a directory only its owner (this user) can enter: created 0700, or checked.

    An existing one of ours that is wider is narrowed (nothing could have been put in it by
    others unless it was writable to them, which is refused); one of another user, a symlink or a
    group/world-writable one is refused."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise RigError(f"{path}: must be a directory owned by uid {os.geteuid()} (SSH control sockets live there)")
    if st.st_mode & 0o022:
        raise RigError(f"{path}: writable by others (mode {stat.S_IMODE(st.st_mode):o}); SSH control sockets need a 0700 directory")
    if stat.S_IMODE(st.st_mode) != 0o700:
        path.chmod(0o700)
    return path


class SshTransport:
    name = "ssh"

    def __init__(self, addresses: dict[str, str], known_hosts: Path, control_dir: Path, user: str = "root",
                 key: Path | None = None, agent_path: str = DEFAULT_AGENT, python: str = "python3",
                 via: list[str] | None = None, retrust: str = "re-record its key"):
        self.addresses, self.user, self.key = addresses, user, key
        self.known_hosts, self.control_dir = Path(known_hosts), Path(control_dir)
        self.agent_path, self.python = agent_path, python
        self.via = via or []  # a command prefix, e.g. ip netns exec <prefix>-mgmt for emulated nodes
        self.retrust = retrust  # how a user re-trusts a node whose host key changed ({host}, {known_hosts})

    def ssh_options(self, host: str) -> list[str]:
        # Sockets per key: a master opened with a restricted key must not carry another key's commands.
        tag = self.key.stem if self.key else "default"
        opts = ["-F", str(self._config()), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={self.known_hosts}",
                "-o", "GlobalKnownHostsFile=/dev/null", "-o", f"HostKeyAlias={host}", "-o", "LogLevel=ERROR",
                "-o", "ControlMaster=auto", "-o", f"ControlPath={private_dir(self.control_dir)}/{tag}-%C",
                "-o", "ControlPersist=120", "-o", "ConnectTimeout=10",
                # A node that reboots or drops off the network ends the session within ~15 s (the
                # agent is then restarted) instead of leaving a request hanging for TCP's timeout.
                "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"]
        if self.key:
            opts += ["-o", "IdentitiesOnly=yes", "-i", str(self.key)]
        return opts

    def _config(self) -> Path:
        """SSH_CONFIG in the private control directory (written when it differs; the agents of a
        pool connect side by side, and other processes may share the directory: a file each)."""
        path = private_dir(self.control_dir) / "ssh_config"
        try:
            if path.read_text() == SSH_CONFIG:
                return path
        except OSError:
            pass
        tmp = path.with_name(f".ssh_config.{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(SSH_CONFIG)
        tmp.replace(path)
        return path

    def destination(self, host: str) -> str:
        return f"{self.user}@{self.addresses[host]}"

    def argv(self, host: str, argv: list[str]) -> list[str]:
        return [*self.via, "ssh", *self.ssh_options(host), self.destination(host), shlex.join(argv)]

    def connect(self, host: str) -> None:
        """Open (or find) the master connection to `host`; ssh's refusals become one line."""
        check = [*self.via, "ssh", *self.ssh_options(host), "-O", "check", self.destination(host)]
        if subprocess.run(check, capture_output=True).returncode == 0:
            return
        # -f -N: authenticate, then keep the master in the background without any session. (The
        # first -o of a name wins, so ControlMaster=yes goes before the common options.)
        master = [*self.via, "ssh", "-o", "ControlMaster=yes", *self.ssh_options(host), "-f", "-N", self.destination(host)]
        try:
            p = subprocess.run(master,
                               stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            raise RigError(f"{host} ({self.addresses[host]}): SSH did not get through in 60 s") from None
        if p.returncode != 0:
            raise RigError(self.explain(host, p.stderr))

    def explain(self, host: str, stderr: str) -> str:
        """One line for what ssh said when it could not reach `host`."""
        where = f"{host} ({self.addresses[host]})"
        if "REMOTE HOST IDENTIFICATION HAS CHANGED" in stderr or "has changed and you have requested strict" in stderr:
            fix = self.retrust.format(host=host, known_hosts=self.known_hosts)
            return (f"{where}: its SSH host key has changed since it was recorded in {self.known_hosts}; refusing to "
                    f"connect (someone may be answering for it). If the node was reinstalled: {fix}")
        if "No " in stderr and "host key is known" in stderr or "Host key verification failed" in stderr:
            fix = self.retrust.format(host=host, known_hosts=self.known_hosts)
            return f"{where}: its SSH host key is not in {self.known_hosts}; {fix}"
        if "Permission denied" in stderr:
            return f"{where}: SSH refused the rig's key {self.key or '(default)'} for {self.user}"
        last = next((ln.strip() for ln in reversed(stderr.splitlines()) if ln.strip()), "no message")
        return f"{where}: SSH failed: {last}"

    def start_agent(self, host: str):
        return popen_agent(self.agent_argv(host))

    def agent_argv(self, host: str) -> list[str]:
        # Connecting first turns a refused host key or login into one clear line here, not into
        # an agent that "did not answer". The agent configures routes and sysctls: as a non-root
        # user it runs under sudo, which must not ask for a password (the node role's sudoers
        # entry). A node that restricts the runner's key runs its forced command instead.
        self.connect(host)
        sudo = [] if self.user == "root" else ["sudo", "-n"]
        return self.argv(host, [*sudo, self.python, "-u", "-I", self.agent_path])
