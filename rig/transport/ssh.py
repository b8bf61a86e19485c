"""Transport over SSH: the physical lab's nodes, and emulated nodes on their management network.

One persistent master connection per host (ControlMaster), so the many short commands of a
campaign do not each pay an SSH handshake; the node agent itself is one long session per host.
"""

from __future__ import annotations

import shlex
from pathlib import Path

DEFAULT_AGENT = "/opt/rig/rig_agent.py"  # where the Ansible node role installs the agent


class SshTransport:
    name = "ssh"

    def __init__(self, addresses: dict[str, str], user: str = "root", key: Path | None = None,
                 control_dir: Path = Path("/tmp"), agent_path: str = DEFAULT_AGENT, python: str = "python3",
                 via: list[str] | None = None):
        self.addresses, self.user, self.key = addresses, user, key
        self.control_dir, self.agent_path, self.python = control_dir, agent_path, python
        self.via = via or []  # a command prefix, e.g. ip netns exec <prefix>-mgmt for emulated nodes

    def ssh_options(self) -> list[str]:
        opts = ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                "-o", "LogLevel=ERROR", "-o", "ControlMaster=auto", "-o", f"ControlPath={self.control_dir}/rig-ssh-%C",
                "-o", "ControlPersist=120", "-o", "ConnectTimeout=10",
                # A node that reboots or drops off the network ends the session within ~15 s (the
                # agent is then restarted) instead of leaving a request hanging for TCP's timeout.
                "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"]
        if self.key:
            opts += ["-i", str(self.key)]
        return opts

    def argv(self, host: str, argv: list[str]) -> list[str]:
        return [*self.via, "ssh", *self.ssh_options(), f"{self.user}@{self.addresses[host]}", shlex.join(argv)]

    def agent_argv(self, host: str) -> list[str]:
        # The agent configures routes and sysctls: as a non-root user it runs under sudo, which
        # must not ask for a password (the node role's sudoers entry).
        sudo = [] if self.user == "root" else ["sudo", "-n"]
        return self.argv(host, [*sudo, self.python, "-u", "-I", self.agent_path])
