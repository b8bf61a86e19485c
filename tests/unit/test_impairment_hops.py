"""Impairments act on the hop they name, in the direction they name: which station pipe of the
emulated rig's radio networks gets what (the emulated rig end to end:
tests/system/test_impairments.py)."""

from __future__ import annotations

import pytest

from rig.model.campaign import parse_campaign
from rig.rigs.emulated import impairments
from rig.rigs.emulated.radiospec import Pipe
from rig.model.topology import topology
from rig.core.errors import InputError

BASE = Pipe(rate_bps=20e6, delay_s=0.002, jitter_s=0.0, loss=0.0)


def test_each_interface_is_one_named_hop():
    hops = impairments.hop_names(topology("II", 2))
    assert hops[("s1", "wlan0")] == "wifi" and hops[("s2", "lte0")] == "lte"
    assert hops[("r1", "wlan0")] == "receiver_a" and hops[("r2", "wlan1")] == "receiver_b"
    assert set(hops.values()) == set(impairments.HOPS) - {"lte2"}
    # a second modem is a hop of its own
    two_modems = impairments.hop_names(topology("II", 2, ("wifi", "lte", "lte2"), "fullmesh"))
    assert two_modems[("s1", "lte1")] == "lte2" and set(two_modems.values()) == set(impairments.HOPS)


@pytest.mark.parametrize("direction, up_loss, down_loss", [("up", 0.1, 0.0), ("down", 0.0, 0.1), ("both", 0.1, 0.1)])
def test_an_impairment_acts_in_the_directions_it_names(direction, up_loss, down_loss):
    imp = {"wifi": {"direction": direction, "loss_pct": 10, "delay_ms": 5}}
    up, down = impairments.station_pipes(BASE, "wifi", imp)
    assert (up.loss, down.loss) == (up_loss, down_loss)
    assert (up.delay_s, down.delay_s) == (0.005 if up_loss else 0.002, 0.005 if down_loss else 0.002)
    assert up.rate_bps == down.rate_bps == BASE.rate_bps  # what the impairment does not set stays the profile's
    assert impairments.station_pipes(BASE, "lte", imp) == (BASE, BASE)  # other hops untouched
    assert impairments.station_pipes(BASE, "receiver_a", imp) == (BASE, BASE)


def test_an_impairment_may_size_the_hops_queue():
    up, down = impairments.station_pipes(BASE, "lte", {"lte": {"queue_packets": 12, "direction": "up"}})
    assert (up.queue_packets, down.queue_packets) == (12, None)  # None: sized from the bandwidth-delay product


def test_a_hops_numbers_are_floats_whatever_their_values():
    """A radio model's pipes carry whole zeros: the hops table's columns keep one type (a field
    that changes type between campaigns is refused by InfluxDB)."""
    topo = topology("I", 1)
    wifi = [i for i in topo.interfaces_of("s1") if i.ifname == "wlan0"]
    rows = impairments.hop_rows("ap1", wifi, [(Pipe(rate_bps=0, delay_s=0), Pipe(rate_bps=0, delay_s=0))],
                                impairments.hop_names(topo), {})
    assert len(rows) == 2
    assert all(type(r[k]) is float for r in rows for k in ("rate_bps", "delay_ms", "jitter_ms", "loss_pct"))


def test_the_old_links_field_is_refused_with_a_pointer():
    with pytest.raises(InputError) as e:
        parse_campaign("name: x\nlinks: {wifi: {loss_pct: 10}}\n", "c.yaml")
    assert str(e.value).startswith("c.yaml: links: replaced by 'impairments'")
