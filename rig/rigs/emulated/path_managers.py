"""The senders' userspace path managers on the emulated rig: one mptcpd with the rig's plugin in
each sender's namespace while a campaign's `paths.manager` is `userspace` (rig.rigs.mptcpd for the
command line; the sender's plan sets the namespace's net.mptcp.path_manager). Started and stopped
here, through rig.core.process; a namespace deleted by `down` takes a stray one with it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from rig.core import process
from rig.rigs import mptcpd

STOP_GRACE_S = 2.0


class PathManagers:
    def __init__(self, log_dir: Path):
        self.log_dir = log_dir  # <host>.log: each mptcpd's log (the plugin's subflows, with their times)
        self.running: dict[str, subprocess.Popen] = {}  # namespace -> mptcpd

    def ensure(self, namespaces: list[str]) -> None:
        """An mptcpd in each of these namespaces (one that exited is started again), the others
        stopped; returns once each new one's plugin is up."""
        self.stop([n for n in self.running if n not in namespaces or self.running[n].poll() is not None])
        new = [n for n in namespaces if n not in self.running]
        if new:
            mptcpd.plugin_built()
            self.log_dir.mkdir(parents=True, exist_ok=True)
        for ns in new:
            log = self.log_dir / f"{ns}.log"
            with open(log, "w") as f:
                self.running[ns] = subprocess.Popen(["ip", "netns", "exec", ns, *mptcpd.argv()],
                                                    stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT)
        try:
            for ns in new:
                mptcpd.wait_ready(self.running[ns], self.log_dir / f"{ns}.log", ns)
        except BaseException:
            self.stop(new)
            raise

    def dead(self) -> list[str]:
        """Namespaces whose mptcpd has exited (ensure() starts it again)."""
        return [ns for ns, p in self.running.items() if p.poll() is not None]

    def stop(self, namespaces: list[str] | None = None) -> None:
        names = list(self.running) if namespaces is None else namespaces
        process.terminate([self.running.pop(n) for n in names if n in self.running], STOP_GRACE_S)
