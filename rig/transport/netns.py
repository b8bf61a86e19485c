"""Transport to emulated hosts: each host is the network namespace `<prefix>-<host>`."""

from __future__ import annotations

import sys
from pathlib import Path

AGENT = Path(__file__).resolve().parents[2] / "nodes" / "agent" / "rig_agent.py"


class NetnsTransport:
    name = "netns"

    def __init__(self, prefix: str):
        self.prefix = prefix

    def netns(self, host: str) -> str:
        return f"{self.prefix}-{host}"

    def argv(self, host: str, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.netns(host), *argv]

    def agent_argv(self, host: str) -> list[str]:
        # -u: unbuffered, the agent speaks line by line; -I: ignore the caller's PYTHON* env.
        return self.argv(host, [sys.executable, "-u", "-I", str(AGENT)])
