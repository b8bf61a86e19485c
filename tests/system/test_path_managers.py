"""The emulated rig's userspace path managers (rig/rigs/emulated/path_managers.py): one real
mptcpd with the rig's plugin per sender namespace, started once, started again when it died,
stopped when a namespace leaves the list and at the end, through rig.core.process."""

from __future__ import annotations

import os
import signal

from rig.core import process
from rig.rigs.emulated.path_managers import PathManagers


def test_one_mptcpd_per_sender_namespace_started_watched_and_stopped(netns, tmp_path):
    a, b = netns("s1"), netns("s2")
    managers = PathManagers(tmp_path / "mptcpd")
    try:
        managers.ensure([a, b])
        first = dict(managers.running)
        assert set(first) == {a, b} and managers.dead() == []
        for ns in (a, b):  # each in its own namespace, its plugin up
            assert os.stat(f"/proc/{first[ns].pid}/ns/net").st_ino == os.stat(f"/run/netns/{ns}").st_ino
            assert "rig_pm: ready" in (tmp_path / "mptcpd" / f"{ns}.log").read_text()
        managers.ensure([a, b])
        assert managers.running == first  # nothing started twice
        os.kill(first[a].pid, signal.SIGKILL)
        first[a].wait()
        assert managers.dead() == [a]
        managers.ensure([b])  # the dead one is not started again when the namespace is left out
        assert set(managers.running) == {b} and managers.running[b] is first[b]
        managers.ensure([a, b])  # and it is when the namespace is back
        assert managers.running[a] is not first[a] and process.running(managers.running[a])
    finally:
        procs = list(managers.running.values())
        managers.stop()
    assert managers.running == {} and not any(process.running(p) for p in procs)
