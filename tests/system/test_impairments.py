"""Impairments act on the hop they name, in the direction they name, and the run records them.

The emulated rig end to end (which station pipe gets what: tests/unit/test_impairment_hops.py):
with loss on the senders' WiFi links only, an LTE-only run is as fast as without it in every
setup; a path's measured ping RTT is what its four hop directions' configuration makes it: their
one-way delays and a ping frame's serialisation at their rates."""

from __future__ import annotations

import re
import subprocess
from dataclasses import replace

import pytest

from fixtures.on_time import on_time
from rig.rigs.backends import configure_setup
from rig.model.campaign import Limits, parse_campaign
from rig.campaign.plan import expand
from rig.rigs.emulated import impairments
from rig.rigs.emulated.emulated_rig import EmulatedRig
from rig.model.block import BlockSettings
from rig.agents.client import AgentPool
from rig.run.execute import RunSettings, execute_run
from rig.agents.netns import NetnsTransport

# --- end to end on the emulated rig ----------------------------------------------------------

CAMPAIGN = "name: imp\nsetups: [I]\npairs: 1\nfactors: {volume: [3MB], homing: [lte]}\n"


def _rig_run(prefix: str, setup: str, imp: dict, homing: str = "lte", shared_medium: bool = True, volume: int = 3_000_000):
    """One run on a fresh 1-pair rig with these impairments; its record, and the rig still up."""
    rig = EmulatedRig(prefix)
    settings = BlockSettings(setup, "n5", "band7-10mhz", 1, imp, shared_medium=shared_medium)
    rig.up(settings)
    agents = AgentPool(NetnsTransport(prefix, node_dir=rig.node_dir), rig.topo.nodes)
    try:
        ctx = configure_setup(rig, agents, settings, RunSettings(Limits(run_timeout_s=60, max_lag_p99_ms=200)))
        run = replace(expand(parse_campaign(CAMPAIGN, "imp")).runs[0], setup=setup, homing=homing, volume_bytes=volume)
        return execute_run(ctx, run), rig
    finally:
        agents.close()


@pytest.mark.emulated
@pytest.mark.parametrize("setup", ["I", "II", "III"])
def test_wifi_loss_leaves_an_lte_only_run_alone(emulator, rig_prefix, setup):
    # No jitter on the LTE path's hops (the profile's 0-17.5 ms per hop scatters a 3 MB LTE run's
    # FCT by a third from run to run), so that what WiFi loss would change stands out.
    steady = {hop: {"jitter_ms": 0.0, "direction": "both"} for hop in ("lte", "receiver_b")}
    lossy = {**steady, "wifi": {"loss_pct": 10.0, "direction": "both"}}
    goodputs, retrans = {}, {}
    for name, imp in (("clean", steady), ("lossy", lossy), ("clean again", steady)):
        rec, rig = _rig_run(rig_prefix, setup, imp)
        assert rec.status == "ok", (name, rec.reason)
        goodputs[name], retrans[name] = rec.pairs[0]["goodput_bps"], rec.pairs[0]["retrans_segs"]
        impaired = rec.details["impaired_hops"]
        lossy_hops = {(h["host"], h["interface"], h["hop"], h["direction"], h["loss_pct"]) for h in impaired if h["loss_pct"]}
        # recorded: the loss is on exactly the sender's WiFi hop, both directions
        assert lossy_hops == ({("s1", "wlan0", "wifi", "up", 10.0), ("s1", "wlan0", "wifi", "down", 10.0)} if name == "lossy"
                              else set())
        assert {h["hop"] for h in impaired} == set(imp)
        assert rec.timeseries["hops"].num_rows == 8  # 4 interfaces x 2 directions
        rig.down()
    # The LTE path stayed lossless (10 % loss on it would retransmit hundreds of segments), and
    # the goodput is the clean runs' within this host's noise (10 % loss on the path would cut it
    # several times over).
    assert retrans["lossy"] <= max(retrans["clean"], retrans["clean again"]) + 5, retrans
    assert goodputs["lossy"] >= 0.75 * min(goodputs["clean"], goodputs["clean again"]), goodputs


RTT_MARGIN_MS = 1.0  # what the emulator's forwarding may add to a path's configured RTT
PING_FRAME_BYTES = 98  # ping's default 56 data bytes, ICMP 8, IP 20, Ethernet 14: what a pipe serialises


def _min_rtt_ms(netns: str, src: str, dst: str) -> float:
    out = subprocess.run(["ip", "netns", "exec", netns, "ping", "-n", "-q", "-c", "40", "-i", "0.02", "-I", src, dst],
                         capture_output=True, text=True, timeout=60).stdout
    return float(re.search(r"= ([\d.]+)/", out).group(1))  # min: emulator lag and queues only add


def _configured_ms(row: dict, medium_rate_bps: float) -> float:
    """What one hop direction's configuration makes a ping frame take: its delay, and its
    serialisation at the hop's rate and at its network's shared medium (every frame to or from a
    station crosses the medium once per station hop, links.cc)."""
    rates = [r for r in (row["rate_bps"], medium_rate_bps) if r > 0]
    return row["delay_ms"] + sum(PING_FRAME_BYTES * 8 / r * 1000 for r in rates)


def _path_rtts(prefix: str, setup: str, imp: dict) -> tuple[dict, dict]:
    """Each path's configured RTT (its four hop directions' one-way delays and a ping frame's
    serialisation on them, as the run recorded them) and its measured one, on a fresh 1-pair rig
    with these impairments."""
    rec, rig = _rig_run(prefix, setup, imp, homing="dual")
    try:
        assert rec.status == "ok", rec.reason
        configured = {(h["hop"], h["direction"]): _configured_ms(h, rig.radios[h["network"]].spec.medium_rate_bps)
                      for h in rec.timeseries["hops"].to_pylist()}
        p = rig.topo.pairs[0]
        want, got = {}, {}
        for path, sender_hop, receiver_hop, src, dst in (("wifi", "wifi", "receiver_a", p.radio("wifi"), p.receiver_a),
                                                          ("lte", "lte", "receiver_b", p.radio("lte"), p.receiver_b)):
            want[path] = sum(configured[(h, d)] for h in (sender_hop, receiver_hop) for d in ("up", "down"))
            crossed = [rig.radios[end.network] for end in (src, dst)]  # as the judge: only these can distort it
            got[path] = on_time(crossed, lambda: _min_rtt_ms(rig.ns("s1"), str(src.address), str(dst.address)),
                                late=lambda ms: ms > want[path] + RTT_MARGIN_MS)
        return want, got
    finally:
        rig.down()


@pytest.mark.emulated
@pytest.mark.parametrize("setup", ["I", "II"])
def test_a_paths_ping_rtt_follows_its_hops_delays(emulator, rig_prefix, setup):
    """A path's ping RTT is its configured RTT within 1 ms (the emulator's forwarding adds ~0.5-0.8 ms
    over four radio hops, on top of the hops' delays and a ping frame's serialisation: 0.13 ms on
    the WiFi path, 0.2-0.3 ms on the LTE one), and what impairments add to it is what they
    configure."""
    # No jitter on any hop (the profiles' 0-2.5 ms WiFi and 0-17.5 ms LTE jitter per hop would
    # dominate a minimum of pings).
    steady = {hop: {"jitter_ms": 0.0, "direction": "both"} for hop in impairments.HOPS}
    imp = {**steady, "wifi": {"delay_ms": 10.0, "jitter_ms": 0.0, "direction": "both"},
           "lte": {"delay_ms": 30.0, "jitter_ms": 0.0, "direction": "both"},
           "receiver_b": {"delay_ms": 4.0, "jitter_ms": 0.0, "direction": "both"}}
    want0, got0 = _path_rtts(rig_prefix, setup, steady)
    want, got = _path_rtts(rig_prefix, setup, imp)
    assert want["wifi"] - want0["wifi"] == pytest.approx(10.0)  # recorded: 10 ms in place of the profile's 5 ms, both ways
    for path in ("wifi", "lte"):
        assert want[path] <= got[path] <= want[path] + RTT_MARGIN_MS, (path, got, want)  # the configured RTT, within 1 ms
        assert abs((got[path] - got0[path]) - (want[path] - want0[path])) <= 1.0, (path, got, got0, want, want0)


@pytest.mark.emulated
def test_without_a_shared_medium_each_path_is_only_its_hops(emulator, rig_prefix):
    """On `links` radios the cell's stations share one medium, both directions: in Setup I the LTE
    data crosses it twice (the sender's hop up, the receiver's down), so two 30 Mbit/s hops carry
    half that. Without it (a campaign's shared_medium: false) the path is its hops: 30 Mbit/s."""
    rate = 30e6
    hops = {hop: {"rate_bps": rate, "delay_ms": 5.0, "jitter_ms": 0.0, "direction": "both"} for hop in ("lte", "receiver_b")}
    goodput = {}
    for shared in (True, False):
        rec, rig = _rig_run(rig_prefix, "I", hops, shared_medium=shared, volume=15_000_000)
        try:
            assert rec.status == "ok", (shared, rec.reason)
            assert rig.radios["cell"].spec.medium_rate_bps == (rate if shared else 0.0)
            goodput[shared] = rec.pairs[0]["goodput_bps"]
        finally:
            rig.down()
    assert goodput[True] < 0.55 * rate, goodput  # two crossings of one 30 Mbit/s medium, ACKs on it too
    assert goodput[False] > 0.8 * rate, goodput  # the hops' rate, less headers and the window's growth
