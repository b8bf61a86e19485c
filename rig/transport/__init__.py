"""How the controller reaches a host: a transport turns "run argv on host" into a local argv.

The emulated rig's hosts are network namespaces (`ip netns exec`); the physical lab's are
reached over SSH. Everything above this layer (node agents, configuration, campaigns) is the
same for both.
"""

from __future__ import annotations

from typing import Protocol


class Transport(Protocol):
    name: str

    def argv(self, host: str, argv: list[str]) -> list[str]:
        """The local command line that runs `argv` on `host`."""

    def agent_argv(self, host: str) -> list[str]:
        """The local command line that starts the node agent on `host`."""
