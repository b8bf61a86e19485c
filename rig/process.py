"""Stopping processes on the controller: SIGTERM, a grace period, then SIGKILL.

The one helper for the controller's own processes (emulators, node agents, whatever runs in an
emulated rig's namespaces). The node agent keeps its own `terminate` in
nodes/agent/rig_node/programs.py: node code is stdlib-only and copied to the boards on its own,
so it cannot import the rig package.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Iterable, Union

Target = Union[int, subprocess.Popen]
POLL_S = 0.05


def terminate(targets: Iterable[Target], grace_s: float, *, term: bool = True) -> bool:
    """Stop processes given as pids or Popen objects: SIGTERM, up to `grace_s` for them to exit,
    then SIGKILL and up to `grace_s` again. With term=False the first stage only waits (the
    caller has already asked them to exit another way, e.g. a quit request). Popen objects are
    reaped before it returns. True if everything is gone."""
    targets = list(targets)
    left = [t for t in targets if running(t)]
    for sig in (signal.SIGTERM if term else None, signal.SIGKILL):
        if not left:
            break
        if sig is not None:
            for t in left:
                _send(t, sig)
        deadline = time.monotonic() + grace_s
        while left and time.monotonic() < deadline:
            time.sleep(POLL_S)
            left = [t for t in left if running(t)]
    for t in targets:
        if isinstance(t, subprocess.Popen):
            t.wait()
    return not left


def running(target: Target) -> bool:
    """Whether the process still runs; an exited but unreaped one (a zombie) counts as gone."""
    if isinstance(target, subprocess.Popen):
        return target.poll() is None
    try:
        os.kill(target, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        pass
    try:
        state = Path(f"/proc/{target}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _send(target: Target, sig: int) -> None:
    try:
        os.kill(target.pid if isinstance(target, subprocess.Popen) else target, sig)
    except ProcessLookupError:
        pass
