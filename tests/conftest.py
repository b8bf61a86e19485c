"""Shared fixtures: the rig CLI as a user runs it, and emulated rigs that always clean up."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def run_rig(*args: str, timeout: float = 600, cwd: Path | None = None, check: bool = False) -> subprocess.CompletedProcess:
    """`rig ARGS...` in a fresh process, exactly as from a shell."""
    p = subprocess.run([sys.executable, "-m", "rig", *args], capture_output=True, text=True, timeout=timeout,
                       cwd=cwd or REPO, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    if check and p.returncode != 0:
        raise AssertionError(f"rig {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


@pytest.fixture
def rig_prefix():
    """A unique prefix for an emulated rig; the rig is torn down afterwards, also on failure."""
    from rig.emu import netns
    from rig.emu.rig import EmulatedRig

    prefix = "t" + uuid.uuid4().hex[:5]
    yield prefix
    EmulatedRig(prefix).down()
    assert netns.with_prefix(prefix) == [], "the rig left namespaces behind"


@pytest.fixture(scope="session")
def emulator():
    """The ns-3 emulator binary, built if needed (the README's setup builds it too)."""
    if os.geteuid() != 0:
        pytest.fail("the emulated-rig tests need root (network namespaces, TAP devices)")
    from rig.emu.build import build

    return build()
