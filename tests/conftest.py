"""The suite's two tiers, one folder each:

  unit/    need nothing from the host: any user, no root, no namespaces (marked `pure`)
  system/  root and the kernel: namespaces, the ns-3 emulator, InfluxDB, hostapd, clang, Ansible
           runs (marked `system`); system/conftest.py says once that they need root, and holds
           their fixtures (the emulator build, emulated rigs and namespaces that always clean up)

`pytest -m pure` runs the unit tests; plain `pytest` (./test.sh, as root) runs everything. What
several test modules share lives in tests/fixtures/ (no test module imports another)."""

from __future__ import annotations

from pathlib import Path

import pytest

import fixtures.node_agent  # noqa: F401 (puts the node agent's package rig_node on the path)

TIERS = {"unit": pytest.mark.pure, "system": pytest.mark.system}
TESTS = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test is marked by its folder: a test outside the tier folders is an error."""
    for item in items:
        tier = item.path.relative_to(TESTS).parts[0]
        if tier not in TIERS:
            raise pytest.UsageError(f"{item.nodeid}: a test lives in tests/unit/ or tests/system/")
        item.add_marker(TIERS[tier])
