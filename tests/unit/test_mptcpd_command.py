"""The lab's rig-mptcpd unit runs mptcpd as the emulated rig does: the same command line
(rig.rigs.mptcpd.argv) with the node role's plugin directory."""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml

from fixtures.cli import REPO
from rig.rigs import mptcpd

ROLE = REPO / "ansible" / "roles" / "node"


def test_the_lab_unit_and_the_emulated_rig_start_mptcpd_alike():
    plugin_dir = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())["node_mptcpd_plugin_dir"]
    unit = (ROLE / "templates" / "rig-mptcpd.service.j2").read_text()
    [line] = [x for x in unit.splitlines() if x.startswith("ExecStart=")]
    command = line.removeprefix("ExecStart=").replace("{{ node_mptcpd_plugin_dir }}", plugin_dir)
    assert shlex.split(command) == mptcpd.argv(Path(plugin_dir))

