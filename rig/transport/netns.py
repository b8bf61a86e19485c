"""Transport to emulated hosts: each host is the network namespace `<prefix>-<host>`."""

from __future__ import annotations

import sys
from pathlib import Path

AGENT = Path(__file__).resolve().parents[2] / "nodes" / "agent" / "rig_agent.py"


class NetnsTransport:
    name = "netns"

    def __init__(self, prefix: str, log_dir: Path | None = None):
        self.prefix = prefix
        self.log_dir = log_dir  # each agent logs the requests it refused to <log_dir>/<host>.log
        if log_dir:
            log_dir.mkdir(parents=True, exist_ok=True)

    def netns(self, host: str) -> str:
        return f"{self.prefix}-{host}"

    def argv(self, host: str, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.netns(host), *argv]

    def agent_argv(self, host: str) -> list[str]:
        # -u: unbuffered, the agent speaks line by line; -I: ignore the caller's PYTHON* env; -S: no
        # site packages (the agent is standard library only, and ten start side by side at bring-up).
        log = ["--log", str(self.log_dir / f"{host}.log")] if self.log_dir else []
        return self.argv(host, [sys.executable, "-u", "-I", "-S", str(AGENT), *log])
