"""mptcpd with the rig's path-management plugin (nodes/mptcpd/rig_pm.c): a sender's path manager
when a campaign's `paths.manager` is `userspace` (docs/campaigns.md, "Path managers").

The one command line, for the emulated rig (one mptcpd in each sender's namespace, started and
stopped through rig.core.process) and the tests; the lab's node role runs the same flags from its
systemd unit (ansible/roles/node/templates/rig-mptcpd.service.j2).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from rig.core.errors import RigError
from rig.core.repo import MPTCPD_PLUGIN_DIR

MPTCPD = "/usr/libexec/mptcpd"  # Debian's mptcpd package (outside PATH: a systemd unit starts it)
PLUGIN = "rig_pm"
# mptcpd loads every plugin in the directory it is given: this one holds only the rig's.
PLUGIN_BUILD = Path(os.environ.get("RIG_MPTCPD_BUILD", MPTCPD_PLUGIN_DIR / "build"))
READY = "rig_pm: ready"  # what the plugin logs once mptcpd has loaded it
START_S = 10


def argv(plugin_dir: Path = PLUGIN_BUILD) -> list[str]:
    """mptcpd with the rig's plugin alone. Every setting is on the command line, so the host's
    /etc/mptcpd/mptcpd.conf changes nothing; mptcpd never sets addresses or endpoints with it."""
    return [MPTCPD, "--log=stderr", f"--plugin-dir={plugin_dir}", f"--path-manager={PLUGIN}",
            f"--load-plugins={PLUGIN}", "--notify-flags=existing,skip_link_local,skip_loopback"]


def plugin_built(plugin_dir: Path = PLUGIN_BUILD) -> Path:
    path = plugin_dir / f"{PLUGIN}.so"
    if not path.is_file():
        raise RigError(f"the rig's mptcpd plugin {path} is not built: make -C {MPTCPD_PLUGIN_DIR} "
                       f"(scripts/install.sh builds it)")
    return path


def wait_ready(daemon: subprocess.Popen, log: Path, where: str) -> None:
    """Waits until mptcpd's log file (its stderr) says its plugin is up; RigError if it exits or
    takes more than START_S. (A file, not a pipe: an unread pipe would stop mptcpd once full.)"""
    deadline = time.monotonic() + START_S
    while True:
        text = log.read_text(errors="replace") if log.exists() else ""
        if READY in text:
            return
        if daemon.poll() is not None or time.monotonic() > deadline:
            tail = " | ".join(text.strip().splitlines()[-3:])
            raise RigError(f"mptcpd on {where} did not start (exit status {daemon.poll()}): {tail}")
        time.sleep(0.05)
