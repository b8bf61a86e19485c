"""Runs that complete but not as configured are recorded as invalid, with the reason.

Each case breaks one thing on a real emulated rig and executes one real run.
"""

from __future__ import annotations

import subprocess
from dataclasses import replace
from datetime import datetime

import pytest

from rig.campaign.model import Limits, parse_campaign
from rig.campaign.plan import expand
from rig.campaign.backends import configure_setup
from rig.emu.rig import EmulatedRig, RadioSettings
from rig.run.agents import AgentPool
from rig.run import transfers
from rig.run.execute import execute_run
from rig.transport.netns import NetnsTransport

pytestmark = pytest.mark.emulated

CAMPAIGN = "name: v\nsetups: [I]\npairs: 1\nfactors: {volume: [4MB]}\n"


@pytest.fixture
def one_pair_rig(emulator, rig_prefix):
    rig = EmulatedRig(rig_prefix)
    settings = RadioSettings("I", "n5", "band7-10mhz", 1, {})
    rig.up(settings)
    agents = AgentPool(NetnsTransport(rig_prefix), rig.topo.nodes)
    try:
        ctx = configure_setup(rig, agents, settings, Limits(run_timeout_s=30, max_lag_p99_ms=200))
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


def test_fallback_to_tcp_is_invalid(one_pair_rig):
    rig, ctx = one_pair_rig
    # The receiver's socket is plain TCP: the sender's MP_CAPABLE SYN gets a plain SYN-ACK.
    ctx.sinks_mptcp = False
    rec = execute_run(ctx, _run())
    assert rec.status == "invalid" and "fell back to plain TCP" in rec.reason, rec.reason


def test_unused_path_is_invalid(one_pair_rig):
    rig, ctx = one_pair_rig
    # no B address announced: no LTE subflow (4 MB over WiFi take ~1 s: long enough for a join)
    subprocess.run(["ip", "netns", "exec", rig.ns("r1"), "ip", "mptcp", "endpoint", "flush"], check=True)
    ctx.limits = ctx.limits.model_copy(update={"join_within_s": 0.3})
    rec = execute_run(ctx, _run())
    assert rec.status == "invalid" and "used only the WiFi path" in rec.reason, rec.reason


def test_dead_emulator_is_invalid(one_pair_rig):
    rig, ctx = one_pair_rig
    rec_ok = execute_run(ctx, _run())
    assert rec_ok.status == "ok", rec_ok.reason
    ctx.radios["ap2"].stop()  # the receivers' BSS disappears
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
    ctx.next_run = small2
    first = execute_run(ctx, small1)
    assert first.status == "ok", first.reason
    assert not first.details["prepared"] and _sink_started(first) >= _began(first)
    assert ctx.prepared == small2.run_id and _alive(ctx, transfers.source_key(transfers.other_port(ctx.port)), "s1")
    ctx.next_run = large1  # another receive buffer: not prepared
    second = execute_run(ctx, small2)
    assert second.status == "ok", second.reason
    assert second.details["prepared"] and _sink_started(second) < _began(second)
    t0 = datetime.fromisoformat(second.details["t0"]).timestamp()
    src = second.transfers["s1"]["source"]
    assert src["ready_at"] <= t0 <= src["started_at"]
    # Nothing of the LTE run (whose subflows close after its programs ended) in this WiFi one.
    assert second.pairs[0]["bytes_lte"] == 0 and second.pairs[0]["bytes_wifi"] >= 2_000_000, second.pairs[0]
    assert ctx.prepared is None
    ctx.next_run = large2
    third = execute_run(ctx, large1)
    assert third.status == "ok" and not third.details["prepared"], third.reason
    assert ctx.prepared == large2.run_id
    retry = execute_run(ctx, large1)  # not the prepared run: what waits is replaced
    assert retry.status == "ok" and not retry.details["prepared"], retry.reason
    ctx.next_run = None  # a block's last run
    last = execute_run(ctx, large2)
    assert last.status == "ok" and last.details["prepared"], last.reason  # the retry prepared it again
    assert ctx.prepared is None
    for port in transfers.PORTS:
        assert not _alive(ctx, transfers.sink_key(port), "r1") and not _alive(ctx, transfers.source_key(port), "s1")


def test_subflow_problems_name_runaway_windows_and_wrong_ccs():
    from rig.run.subflows import problems

    row = {"time": 1.0, "host": "s1", "local": "10.1.1.11:40000", "remote": "10.1.2.21:5201", "cc": "lia",
           "cwnd": 40, "rtt_ms": 20.0, "bytes_acked": 10**6}
    assert problems([row], "lia", 100_000) is None
    assert "cwnd runaway on s1" in problems([{**row, "cwnd": 1_780_000_000}], "lia", 100_000)
    assert "did not run lia" in problems([{**row, "cc": "cubic"}], "lia", 100_000)
    assert problems([{**row, "cc": "cubic", "bytes_acked": 10}], "lia", 100_000) is None  # control connection


def test_the_previous_runs_subflows_still_closing_are_not_this_runs():
    from rig.run.subflows import of_this_run, problems

    old = {"time": 99.5, "host": "s1", "local": "10.1.1.11:40000", "remote": "10.1.2.21:5201", "cc": "olia",
           "cwnd": 3, "rtt_ms": 20.0, "bytes_acked": 10**6}
    new = {**old, "local": "10.1.1.11:41000", "cc": "balia"}
    rows = [old, {**old, "time": 100.5}, {**new, "time": 100.5}]
    # seen in a campaign: a balia run judged invalid for the olia subflows of the run before it
    assert "did not run balia" in problems(rows, "balia", 100_000)
    assert of_this_run(rows, t0=100.0) == [{**new, "time": 100.5}]
    assert problems(of_this_run(rows, t0=100.0), "balia", 100_000) is None


def test_only_runs_spoiled_by_lag_alone_count_as_lagged():
    from rig.campaign.model import Limits
    from rig.campaign.plan import Run
    from rig.run.judge import judge_run
    from rig.run.transfers import PairTransfer

    run = Run("r", 0, "b", "II", "lte", "cubic", 1, 10**6, 10**6, "n5", 1, 1)
    pair = {"pair": 1, "sender": "s1", "receiver": "r1", "goodput_bps": 5e6, "bytes_lte": 10**6, "bytes_wifi": 0}
    mib = ({"MPTcpExtMPCapableSYNACKRX": 0}, {"MPTcpExtMPCapableSYNACKRX": 1})
    lags = {"cell": {"samples": 1000, "p99_ms": 3.0, "busy_max_ms": 2.0, "cpu": 0.1}}

    complete = PairTransfer(started_at=1.0, first_byte_at=1.1, last_byte_at=2.6, bytes_sent=10**6, bytes_delivered=10**6)

    def verdict(transfer, lags):
        return judge_run(run, [pair], {"s1": transfer}, {"s1": mib[0]}, {"s1": mib[1]}, lags, {"cell": True}, Limits())

    lagged = verdict(complete, lags)
    assert lagged.status == "invalid" and lagged.lagged
    assert lagged.reason == "emulator lagged: p99 3.00 ms on cell > 1 ms (busy up to 2 ms at a stretch, 0.10 core)"
    assert not verdict(complete, {"cell": {**lags["cell"], "p99_ms": 0.5}}).lagged  # ok: nothing to redo
    short = replace(complete, bytes_delivered=900_000, error="delivered 900000 of 1000000 bytes")
    broken = verdict(short, lags)  # the run failed on its own account
    assert broken.status == "failed" and not broken.lagged
    # In Setup II an LTE-only run crosses the cell and AP3 (its receivers' side B), not AP1/AP2:
    # their lag is recorded but does not judge the run.
    assert verdict(complete, {"ap1": lags["cell"], "ap2": lags["cell"]}).status == "ok"
    assert verdict(complete, {"ap3": lags["cell"]}).lagged


def test_the_networks_a_run_crosses():
    from rig.topology import topology

    assert topology("I", 2).networks_crossed("wifi") == {"ap1", "ap2"}
    assert topology("I", 2).networks_crossed("lte") == {"cell"}
    assert topology("II", 2).networks_crossed("lte") == {"cell", "ap3"}
    assert topology("III", 2).networks_crossed("dual") == {"ap1", "ap2", "cell"}


def test_a_dual_transfer_may_end_before_its_lte_subflow_joins():
    from rig.run.judge import judge_run
    from rig.run.transfers import PairTransfer
    from rig.spec import Limits, Run

    run = Run("r", 0, "b", "I", "dual", "lia", 1, 10_000, 10**6, "n5", 1, 1)
    pair = {"pair": 1, "sender": "s1", "receiver": "r1", "goodput_bps": 1e6, "bytes_lte": 0, "bytes_wifi": 11_000}
    mib = ({}, {"MPTcpExtMPCapableSYNACKRX": 1})  # an MPTCP connection, no MP_JOIN answered

    def verdict(fct_s):
        t = PairTransfer(started_at=1.0, first_byte_at=1.05, last_byte_at=1.0 + fct_s, bytes_sent=10_000, bytes_delivered=10_000)
        return judge_run(run, [pair], {"s1": t}, {"s1": mib[0]}, {"s1": mib[1]}, {}, {}, Limits())

    assert verdict(0.08).status == "ok"  # a 10 KB flow is over in a few RTTs: the first subflow carries it all
    long = verdict(5.0)
    assert long.status == "invalid" and long.reason == "s1: used only the WiFi path (the LTE subflow never joined within 5.0 s)"
