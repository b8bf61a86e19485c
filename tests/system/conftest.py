"""The system tier: tests that need root and the kernel (network namespaces, TAP devices, BPF, the
ns-3 emulator, InfluxDB, hostapd, Ansible runs). This is the one place that says they need root:
for any other user each of them is skipped with that reason (./test.sh runs them as root). Those
marked `emulated` (the ns-3 emulator's radios) also need /dev/net/tun.

Their fixtures: emulated rigs and namespaces that always clean up, and the emulator's build."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from fixtures.namespaces import netns  # noqa: F401 (the shared namespace fixture)
from fixtures.two_paths import two_paths  # noqa: F401 (a dual-homed client and its server)

SYSTEM = Path(__file__).parent
NEEDS_ROOT = pytest.mark.skip(reason="a system test: needs root (network namespaces, TAP devices, BPF, ...)")
NEEDS_TUN = pytest.mark.skip(reason="the emulated rig's radios need TAP devices: no /dev/net/tun")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    root, tun = os.geteuid() == 0, Path("/dev/net/tun").exists()
    for item in items:
        if not item.path.is_relative_to(SYSTEM):  # the hook sees the whole session's items
            continue
        if not root:
            item.add_marker(NEEDS_ROOT)
        elif not tun and item.get_closest_marker("emulated"):
            item.add_marker(NEEDS_TUN)


def _emulated_rig_prefix():
    from rig.rigs.emulated import netns
    from rig.rigs.emulated.emulated_rig import EmulatedRig

    prefix = "t" + uuid.uuid4().hex[:5]
    yield prefix
    EmulatedRig(prefix).down()
    assert netns.with_prefix(prefix) == [], "the rig left namespaces behind"


@pytest.fixture
def rig_prefix():
    """A unique prefix for an emulated rig; the rig is torn down afterwards, also on failure."""
    yield from _emulated_rig_prefix()


@pytest.fixture(scope="module")
def module_rig_prefix():
    """rig_prefix for a module whose tests share one campaign."""
    yield from _emulated_rig_prefix()


@pytest.fixture(scope="session")
def emulator():
    """The ns-3 emulator binary, built if needed (the README's setup builds it too)."""
    from rig.rigs.emulated.build import build

    return build()
