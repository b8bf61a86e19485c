"""Runs that complete but not as configured are recorded as invalid, with the reason.

Each case breaks one thing on a real emulated rig and executes one real run; how a run is judged
from hand-made records is in tests/unit/test_judge.py.
"""

from __future__ import annotations

import subprocess
from dataclasses import replace
from datetime import datetime

import pytest

from rig.model.campaign import Limits, parse_campaign
from rig.campaign.plan import expand
from rig.rigs.backends import configure_setup
from rig.rigs.emulated.emulated_rig import EmulatedRig
from rig.model.block import BlockSettings
from rig.agents.client import AgentPool
from rig.run import transfers
from rig.run.execute import RunSettings, execute_run
from rig.agents.netns import NetnsTransport

pytestmark = pytest.mark.emulated

CAMPAIGN = "name: v\nsetups: [I]\npairs: 1\nfactors: {volume: [4MB]}\n"


@pytest.fixture
def one_pair_rig(emulator, rig_prefix):
    rig = EmulatedRig(rig_prefix)
    settings = BlockSettings("I", "n5", "band7-10mhz", 1, {})
    rig.up(settings)
    agents = AgentPool(NetnsTransport(rig_prefix, node_dir=rig.node_dir), rig.topo.nodes)
    try:
        ctx = configure_setup(rig, agents, settings, RunSettings(Limits(run_timeout_s=30, max_lag_p99_ms=200)))
        yield rig, ctx
    finally:
        agents.close()
        rig.down()


def _run():
    return expand(parse_campaign(CAMPAIGN, "v")).runs[0]


def test_healthy_run_is_ok(one_pair_rig):
    _, ctx = one_pair_rig
    rec = execute_run(ctx, _run())
    assert rec.status == "ok", rec.reason
    assert rec.pairs[0]["bytes_lte"] > 0 and rec.pairs[0]["bytes_wifi"] > 0
    # every node's MPTCP counters are recorded, the receiver's too
    assert rec.details["mib_delta"]["r1"]["MPTcpExtMPCapableSYNRX"] >= 1
    # the receiver announced its B address on the connection, and it arrived
    assert rec.transfers["s1"]["sink"]["connections"][0]["add_addr_signal"] == 1
    assert rec.pairs[0]["add_addr_lost"] == 0


def test_fallback_to_tcp_is_invalid(one_pair_rig):
    rig, ctx = one_pair_rig
    # The receiver's socket is plain TCP: the sender's MP_CAPABLE SYN gets a plain SYN-ACK.
    ctx.sinks_mptcp = False
    rec = execute_run(ctx, _run())
    assert rec.status == "invalid" and "fell back to plain TCP" in rec.reason, rec.reason
    assert rec.details["mib_delta"]["s1"]["MPTcpExtMPCapableFallbackSYNACK"] >= 1


def test_unused_path_is_invalid(one_pair_rig):
    rig, ctx = one_pair_rig
    # no B address announced: no LTE subflow
    subprocess.run(["ip", "netns", "exec", rig.ns("r1"), "ip", "mptcp", "endpoint", "flush"], check=True)
    rec = execute_run(ctx, _run())
    assert rec.status == "invalid" and "its LTE subflow was never established (the receiver announced no address on it)" \
        in rec.reason, rec.reason
    assert rec.pairs[0]["subflows"] == 1 and rec.pairs[0]["join_s"] is None
    assert rec.transfers["s1"]["sink"]["connections"][0]["add_addr_signal"] == 0


def test_an_announcement_lost_on_the_way_is_the_networks_and_counted(one_pair_rig):
    """Every ADD_ADDR the receiver sends, and each time its kernel sends it again, is lost before
    the sender's stack: the connection has no LTE subflow, and the run is a result with it
    counted; both kernels' counters show it."""
    rig, ctx = one_pair_rig
    nft = ["ip", "netns", "exec", rig.ns("s1"), "nft"]
    subprocess.run(nft + ["-f", "-"], check=True, text=True,
                   input="table inet lost {\n chain announced {\n  type filter hook prerouting priority raw\n"
                         "  tcp option mptcp subtype 3 drop\n }\n}\n")
    try:
        rec = execute_run(ctx, _run())
    finally:
        subprocess.run(nft + ["delete", "table", "inet", "lost"], check=True)
    assert rec.status == "ok", rec.reason
    pair = rec.pairs[0]
    assert pair["add_addr_lost"] == 1 and pair["subflows"] == 1 and pair["join_s"] is None
    assert pair["add_addr_rx"] == 0 and pair["bytes_received"] == 4_000_000
    assert rec.transfers["s1"]["sink"]["connections"][0]["add_addr_signal"] == 1
    # the receiver's kernel sent it again while no echo came back
    assert rec.details["mib_delta"]["r1"]["MPTcpExtAddAddrTx"] >= 2
    assert rec.details["mib_delta"]["r1"].get("MPTcpExtEchoAdd", 0) == 0


def test_a_short_dual_transfer_has_both_paths_and_their_join_times(one_pair_rig):
    """10 KB is over in a few WiFi round trips, before the LTE join could carry anything: the
    connection still has its LTE subflow (the source keeps its side open for it), established
    within the bound; that the scheduler left it idle is recorded, not an error."""
    _, ctx = one_pair_rig
    run = replace(_run(), volume_bytes=10_000)
    rec = execute_run(ctx, run)
    assert rec.status == "ok", rec.reason
    life = rec.timeseries["subflow_life"].to_pylist()
    established = {r["path"]: r for r in life if r["established_s"] is not None}
    assert set(established) == {"wifi", "lte"}, life
    assert established["wifi"]["initial"] and not established["lte"]["initial"]
    assert established["wifi"]["established_s"] < established["lte"]["established_s"] < 0.5
    # the kernel's path manager opened the LTE subflow once it could: after the connection was fully
    # established (its first data acknowledged) and the receiver's B address had arrived
    assert established["wifi"]["established_s"] < established["lte"]["ready_s"] < established["lte"]["established_s"]
    assert established["wifi"]["first_data_s"] is not None
    pair = rec.pairs[0]
    assert pair["subflows"] == 2
    assert pair["join_s"] == pytest.approx(established["lte"]["established_s"] - established["wifi"]["established_s"])
    assert pair["mp_join_synack_rx"] >= 1 and pair["add_addr_rx"] >= 1


def test_a_connection_whose_first_packets_are_lost_goes_on_as_tcp_and_the_run_is_a_result(one_pair_rig):
    """What a starved WiFi station did in a busy BSS: its queue expired a connection's first
    packets after the handshake, the ones carrying MP_CAPABLE (the third ACK, the first data). Here
    the receiver drops them on arrival. It makes the connection's socket from the next segment, as
    plain TCP, and the sender falls back at its answer; both kernels count it, the transfer
    completes as TCP and the run is a result with the fallback counted."""
    rig, ctx = one_pair_rig
    s1 = ctx.topo.pairs[0]
    # one segment per packet, as the station's queue held them: the first data alone carries
    # MP_CAPABLE, and the segments after it reach the receiver
    subprocess.run(["ip", "-n", rig.ns("s1"), "link", "set", "dev", s1.radio("wifi").ifname, "gso_max_segs", "1"],
                   check=True)
    nft = ["ip", "netns", "exec", rig.ns("r1"), "nft"]
    subprocess.run(nft + ["-f", "-"], check=True, text=True,
                   input="table inet lost {\n chain first {\n  type filter hook prerouting priority raw\n"
                         "  tcp flags & syn == 0 tcp option mptcp subtype 0 drop\n }\n}\n")
    try:
        rec = execute_run(ctx, replace(_run(), homing="wifi"))
        dual = execute_run(ctx, _run())
    finally:
        subprocess.run(nft + ["delete", "table", "inet", "lost"], check=True)
    assert rec.status == "ok", rec.reason
    pair = rec.pairs[0]
    assert pair["data_fallbacks"] == 1 and pair["bytes_received"] == 4_000_000
    assert rec.details["mib_delta"]["s1"]["MPTcpExtMPCapableDataFallback"] == 1
    assert rec.details["mib_delta"]["r1"]["MPTcpExtMPCapableFallbackACK"] == 1
    # Dual-homed, the source saw its connection go on as TCP: it is not held to an LTE join it
    # cannot have (without that, "its LTE subflow was never established"), and the run is a result
    # with the fallback counted, as for lost SYNs
    assert dual.status == "ok", dual.reason
    assert dual.pairs[0]["data_fallbacks"] == 1 and dual.pairs[0]["subflows"] == 1 and dual.pairs[0]["join_s"] is None


def test_dead_emulator_is_invalid(one_pair_rig):
    rig, ctx = one_pair_rig
    rec_ok = execute_run(ctx, _run())
    assert rec_ok.status == "ok", rec_ok.reason
    ctx.radios.processes["ap2"].stop()  # the receivers' BSS disappears
    rec = execute_run(ctx, _run())
    assert rec.status in ("invalid", "failed") and "emulator for ap2 exited" in rec.reason, rec.reason


def test_subflows_record_the_cc_that_ran(one_pair_rig):
    from rig import congestion

    congestion.ensure_registered(["lia"])
    _, ctx = one_pair_rig
    run = expand(parse_campaign(CAMPAIGN.replace("factors: {volume: [4MB]", "factors: {cc: [lia], volume: [10MB]"), "v")).runs[0]
    rec = execute_run(ctx, run)
    assert rec.status == "ok", rec.reason
    flows = rec.details["subflow_ccs"]["s1"]
    assert set(flows.values()) == {"lia"} and len(flows) == 2, flows  # WiFi -> A and LTE -> B, both coupled
    series = rec.timeseries["subflows"].to_pylist()
    assert series and all(r["cc"] == "lia" for r in series if r["bytes_acked"] and r["bytes_acked"] > 8192)


def _buffer_runs():
    """Two runs of each receive buffer, smallest first: LTE-only, then WiFi-only (prepared during
    the LTE run, whose routing plan has the WiFi interface down)."""
    text = "name: v\nsetups: [I]\npairs: 1\nfactors: {volume: [2MB], rcvbuf: [1000KB, 2000KB], homing: [lte, wifi]}\n"
    runs = sorted(expand(parse_campaign(text, "v")).runs, key=lambda r: (r.rcvbuf_bytes, r.homing != "lte"))
    assert [r.homing for r in runs] == ["lte", "wifi", "lte", "wifi"]
    return runs


def _sink_started(rec) -> float:
    return rec.transfers["s1"]["_rig"]["sink"]["started_at"]


def _source_started(rec) -> float:
    return rec.transfers["s1"]["_rig"]["source"]["started_at"]


def _began(rec) -> float:
    return datetime.fromisoformat(rec.started_at).timestamp()


def _alive(ctx, key: str, host: str) -> bool:
    return ctx.agents.agents[host].request("alive", key=key)["alive"]


def test_the_next_run_is_prepared_during_a_run_only_when_that_cannot_change_the_run(one_pair_rig):
    """During its transfer a run starts the next run's sink and held source on the other port;
    the next run releases them. A next run with another receive buffer is not prepared (the
    sysctl would change under this run's sockets); a run other than the prepared one (a lag
    retry) replaces what waits; after a block's last run nothing is left waiting."""
    _, ctx = one_pair_rig
    small1, small2, large1, large2 = _buffer_runs()
    first = execute_run(ctx, small1, next_run=small2)
    assert first.status == "ok", first.reason
    assert not first.details["prepared"] and _sink_started(first) >= _began(first)
    assert ctx.prepared == small2.run_id and _alive(ctx, transfers.source_key(transfers.other_port(ctx.port)), "s1")
    second = execute_run(ctx, small2, next_run=large1)  # another receive buffer: not prepared
    assert second.status == "ok", second.reason
    assert second.details["prepared"] and _sink_started(second) < _began(second)
    # Prepared: its source program started during the run before; it connects at T0, not before.
    # (Its sockets, made once released, may be ready a little after T0 on a loaded host: the rig
    # reports that lateness, it does not promise it away.)
    assert _source_started(second) < _began(second)
    t0 = datetime.fromisoformat(second.details["t0"]).timestamp()
    assert t0 <= second.transfers["s1"]["source"]["started_at"]
    # Nothing of the LTE run (whose subflows close after its programs ended) in this WiFi one.
    assert second.pairs[0]["bytes_lte"] == 0 and second.pairs[0]["bytes_wifi"] >= 2_000_000, second.pairs[0]
    assert ctx.prepared is None
    third = execute_run(ctx, large1, next_run=large2)
    assert third.status == "ok" and not third.details["prepared"], third.reason
    assert ctx.prepared == large2.run_id
    retry = execute_run(ctx, large1, next_run=large2)  # not the prepared run: what waits is replaced
    assert retry.status == "ok" and not retry.details["prepared"], retry.reason
    last = execute_run(ctx, large2)  # a block's last run
    assert last.status == "ok" and last.details["prepared"], last.reason  # the retry prepared it again
    assert ctx.prepared is None
    for port in transfers.PORTS:
        assert not _alive(ctx, transfers.sink_key(port), "r1") and not _alive(ctx, transfers.source_key(port), "s1")
