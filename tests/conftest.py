"""Shared fixtures (the emulator build, emulated rigs and namespaces that always clean up) and
the split of the suite into `pure` tests (need nothing: any user, any host, no root) and `system`
tests (root, network namespaces, the ns-3 emulator, InfluxDB, hostapd, ...).

`pytest -m pure` runs the pure ones; plain `pytest` (./test.sh) runs everything. What several test
modules share lives in tests/fixtures/ (no test module imports another)."""

from __future__ import annotations

import os
import uuid

import pytest

import fixtures.node_agent  # noqa: F401 (puts the node agent's package rig_node on the path)
from fixtures.namespaces import netns  # noqa: F401 (the shared namespace fixture)

# What makes a test a `system` test, decided here rather than in each file: it uses one of these
# fixtures, carries the `emulated` marker, lives in one of these modules (each needs what is said
# for the whole module or for most of its tests) or is one of SYSTEM_TESTS.
SYSTEM_FIXTURES = {"rig_prefix", "emulator", "netns"}
SYSTEM_MODULES = {
    "test_ansible": "ansible-lint and ansible-playbook runs, hostapd",
    "test_ansible_emulated": "Ansible over SSH into emulated nodes; rig state under /run",
    "test_cc_provisioning": "root: registers BPF congestion controls",
    "test_congestion_api": "root: network namespaces, BPF",
    "test_congestion_e2e": "root: network namespaces, BPF, iperf3",
    "test_congestion_math": "clang builds the BPF programs",
    "test_congestion_ssthresh": "root: network namespaces, BPF",
    "test_influx": "starts InfluxDB",
    "test_install": "the installed packages and programs, root",
    "test_node_agent": "root: a network namespace",
    "test_node_routing": "root: network namespaces",
    "test_rendered_configs": "hostapd parses the rendered configs",
    "test_ssh_trust": "root: chowns key directories; ansible-playbook preflights",
}

# Single tests in otherwise pure modules.
SYSTEM_TESTS = {
    # `rig campaign run` takes the emulated rig's lock under /run/rig before it checks the host's
    # congestion controls
    "test_bad_inputs.py::test_bad_campaign_file[cc_unknown_on_host]",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        system = (item.path.stem in SYSTEM_MODULES or f"{item.path.name}::{item.name}" in SYSTEM_TESTS
                  or item.get_closest_marker("emulated") is not None
                  or not SYSTEM_FIXTURES.isdisjoint(item.fixturenames))
        item.add_marker(pytest.mark.system if system else pytest.mark.pure)


@pytest.fixture
def rig_prefix():
    """A unique prefix for an emulated rig; the rig is torn down afterwards, also on failure."""
    from rig.rigs.emulated import netns
    from rig.rigs.emulated.emulated_rig import EmulatedRig

    prefix = "t" + uuid.uuid4().hex[:5]
    yield prefix
    EmulatedRig(prefix).down()
    assert netns.with_prefix(prefix) == [], "the rig left namespaces behind"


@pytest.fixture(scope="session")
def emulator():
    """The ns-3 emulator binary, built if needed (the README's setup builds it too)."""
    if os.geteuid() != 0:
        pytest.fail("the emulated-rig tests need root (network namespaces, TAP devices)")
    from rig.rigs.emulated.build import build

    return build()
