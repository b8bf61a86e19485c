"""The lab's clocks: a node's offset and chrony's bound as its agent reads them, and the lab
backend's refusal of nodes whose clock chrony does not keep (lines recorded from chrony 4.3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rig_node import facts

from rig.rigs.lab import Lab, check_clocks, clock_problems

SYNCED = ("0A000002,10.0.0.2,9,1795424741.302561493,-0.000012000,0.000004000,0.000020000,"
          "-0.002,0.001,0.050,0.000150000,0.000030000,16.2,Normal\n")
UNSYNCED = "00000000,,0,0.000000000,0.000000000,0.000000000,0.000000000,0.000,0.000,0.000,1.000000000,1.000000000,0.0,Not synchronised\n"


def test_a_synchronised_clock_has_its_offset_and_chronys_bound():
    c = facts.parse_tracking(SYNCED)
    assert c["offset_s"] == -0.000012 and c["source"] == "10.0.0.2"
    assert c["bound_s"] == pytest.approx(0.000012 + 0.00003 + 0.000075)  # |offset| + dispersion + delay / 2


def test_an_unsynchronised_or_silent_chrony_gives_no_offset():
    assert facts.parse_tracking(UNSYNCED) == {"offset_s": None, "source": "chrony is not synchronised"}
    silent = facts.parse_tracking("", "506 Cannot talk to daemon\n")
    assert silent == {"offset_s": None, "source": "506 Cannot talk to daemon"}


def test_nodes_without_an_offset_are_named():
    clocks = {"s1": facts.parse_tracking(SYNCED), "r1": facts.parse_tracking(UNSYNCED), "s2": facts.parse_tracking("")}
    assert clock_problems(clocks) == ["r1: chrony is not synchronised", "s2: chronyc said nothing"]


def test_emulated_nodes_share_the_hosts_clock_and_are_not_asked(tmp_path):
    lab = Lab(Path("emu.ini"), {"s1": {"node_emulated": "true"}, "r1": {"node_emulated": True}}, ["s1"], ["r1"])
    check_clocks(lab, ["s1", "r1"], tmp_path / "control")  # nothing to ask: no SSH, no control directory
    assert not (tmp_path / "control").exists()
