"""How the controller reaches a host: a transport turns "run argv on host" into a local argv.

The emulated rig's hosts are network namespaces (`ip netns exec`); the physical lab's are
reached over SSH. Everything above this layer (node agents, configuration, campaigns) is the
same for both.
"""

from __future__ import annotations

import subprocess
from typing import Protocol


class Transport(Protocol):
    name: str

    def argv(self, host: str, argv: list[str]) -> list[str]:
        """The local command line that runs `argv` on `host`."""

    def start_agent(self, host: str):
        """The node agent on `host`, started: a process with what rig.run.agents uses of a Popen
        (text stdin, stdout and stderr, pid, returncode, poll, wait, kill)."""


def popen_agent(argv: list[str]) -> subprocess.Popen:
    """A node agent started as the local command line `argv`."""
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, bufsize=1)
