"""Stopping processes on the controller: SIGTERM, a grace period, then SIGKILL.

The one helper for the controller's own processes (emulators, node agents, whatever runs in an
emulated rig's namespaces, the nightly job's campaign runner, the embedded influxd). The node agent keeps its own `terminate` in
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

# A pid, or a process object with Popen's pid, poll() and wait() (a Popen, a forked node agent).
Target = Union[int, subprocess.Popen]
# How often a stopping process is checked: from 1 ms (most exit within a few ms of being asked)
# doubling up to POLL_S (one that takes its time is not polled hundreds of times).
FIRST_POLL_S, POLL_S = 0.001, 0.05


def terminate(targets: Iterable[Target], grace_s: float, *, term: bool = True, group: bool = False) -> bool:
    """Stop processes given as pids or process objects: SIGTERM, up to `grace_s` for them to exit,
    then SIGKILL and up to `grace_s` again. With term=False the first stage only waits (the
    caller has already asked them to exit another way, e.g. a quit request); with group=True
    each signal goes to the target's whole process group (a leader started in a session of its
    own, with everything it started). Process objects are waited for before it returns. True if
    everything is gone."""
    targets = list(targets)
    left = [t for t in targets if running(t)]
    for sig in (signal.SIGTERM if term else None, signal.SIGKILL):
        if not left:
            break
        if sig is not None:
            for t in left:
                _send(t, sig, group)
        deadline, poll = time.monotonic() + grace_s, FIRST_POLL_S
        while left and time.monotonic() < deadline:
            time.sleep(poll)
            poll = min(2 * poll, POLL_S)
            left = [t for t in left if running(t)]
    for t in targets:
        if not isinstance(t, int):
            t.wait()
    return not left


def running(target: Target) -> bool:
    """Whether the process still runs; an exited but unreaped one (a zombie) counts as gone."""
    if not isinstance(target, int):
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


def _send(target: Target, sig: int, group: bool = False) -> None:
    try:
        (os.killpg if group else os.kill)(target if isinstance(target, int) else target.pid, sig)
    except ProcessLookupError:
        pass
