"""Transport to this host itself: the node agent's checks of what this host's kernel can run
come from the same code as a lab node's (rig doctor, congestion)."""

from __future__ import annotations

import sys

from rig.agents.transport import popen_agent
from rig.agents.netns import AGENT


class LocalTransport:
    name = "local"

    def argv(self, host: str, argv: list[str]) -> list[str]:
        return list(argv)

    def start_agent(self, host: str):
        return popen_agent([sys.executable, "-u", "-I", "-S", str(AGENT)])  # the agent is standard library only
