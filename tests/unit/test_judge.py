"""How a run is judged from what it recorded: subflow problems, lag, kernel fallbacks, joins, a
program's traceback. Each case builds the records by hand; the cases on a real emulated rig are
in tests/system/test_run_validity.py."""

from __future__ import annotations

from dataclasses import replace


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
    from rig.model.campaign import Limits
    from rig.model.topology import topology
    from rig.campaign.plan import Run
    from rig.run.judge import judge_run
    from rig.run.transfers import PairTransfer

    run = Run("r", 0, "b", "II", "lte", "cubic", 1, 10**6, 10**6, "n5", 1, 1)
    pair = {"pair": 1, "sender": "s1", "receiver": "r1", "goodput_bps": 5e6, "bytes_lte": 10**6, "bytes_wifi": 0}
    mib_delta = {"s1": {"MPTcpExtMPCapableSYNACKRX": 1}}
    lags = {"cell": {"samples": 1000, "p99_ms": 3.0, "busy_max_ms": 2.0, "cpu": 0.1}}

    complete = PairTransfer(started_at=1.0, first_byte_at=1.1, last_byte_at=2.6, bytes_sent=10**6, bytes_delivered=10**6)

    def verdict(transfer, lags):
        return judge_run(run, [pair], {"s1": transfer}, mib_delta, lags, {"cell": True}, Limits(),
                         crossed=topology("II", 1).networks_crossed("lte"), path_bytes={"s1": {"lte": 10**6}})

    lagged = verdict(complete, lags)
    assert lagged.status == "invalid" and lagged.lagged
    assert lagged.reason == "emulator lagged: p99 3.00 ms on cell > 1 ms (busy up to 2 ms at a stretch, 0.10 core)"
    stolen = verdict(complete, {"cell": {**lags["cell"], "host_steal": 0.12}})  # a virtual machine's CPUs taken away
    assert stolen.reason.endswith("(busy up to 2 ms at a stretch, 0.10 core; the hypervisor took 12.0% of the host's CPU time)")
    assert not verdict(complete, {"cell": {**lags["cell"], "p99_ms": 0.5}}).lagged  # ok: nothing to redo
    short = replace(complete, bytes_delivered=900_000, error="delivered 900000 of 1000000 bytes")
    broken = verdict(short, lags)  # the run failed on its own account
    assert broken.status == "failed" and not broken.lagged
    # In Setup II an LTE-only run crosses the cell and AP3 (its receivers' side B), not AP1/AP2:
    # their lag is recorded but does not judge the run.
    assert verdict(complete, {"ap1": lags["cell"], "ap2": lags["cell"]}).status == "ok"
    assert verdict(complete, {"ap3": lags["cell"]}).lagged
    # An idle network late too: no traffic of the run made it late, the host held every emulator off.
    paused = verdict(complete, {"cell": lags["cell"], "ap1": {**lags["cell"], "p99_ms": 2.0}})
    assert paused.lagged and paused.reason.endswith(
        "0.10 core); ap1 late too, with no traffic of the run: the host held the emulators off"), paused.reason


def test_kernel_fallbacks_after_lost_syns_or_first_packets_are_results_and_a_missing_handshake_is_not():
    from rig.model.campaign import Limits
    from rig.model.topology import topology
    from rig.campaign.plan import Run
    from rig.run.judge import judge_run
    from rig.run.transfers import PairTransfer

    run = Run("r", 0, "b", "I", "wifi", "olia", 10, 10**6, 10**6, "g", 1, 1)
    pair = {"pair": 1, "sender": "s1", "receiver": "r1", "goodput_bps": 5e6, "bytes_lte": 0, "bytes_wifi": 10**7}
    complete = PairTransfer(started_at=1.0, first_byte_at=1.1, last_byte_at=2.6, bytes_sent=10**7, bytes_delivered=10**7)

    def verdict(delta: dict):
        return judge_run(run, [pair], {"s1": complete}, {"s1": delta}, {}, {}, Limits(),
                         crossed=topology("I", 1).networks_crossed("wifi"), path_bytes={"s1": {"wifi": 10**7}})

    # seen on 802.11g with 50 connections: 4 of a sender's 10 MP_CAPABLE SYNs lost twice, the
    # kernel sent the third as plain TCP (MPCapableSYNTXDrop): the network's doing
    assert verdict({"MPTcpExtMPCapableSYNACKRX": 6, "MPTcpExtMPCapableSYNTXDrop": 4}).status == "ok"
    # no such evidence: MPTCP was not in use as configured
    assert verdict({"MPTcpExtMPCapableSYNACKRX": 6}).reason == "s1: connection was not MPTCP (no MP_CAPABLE handshake)"
    # the handshake done, then the receiver's first packet without MPTCP options (counted since
    # kernel 6.17): a fallback, named as one, not taken for a missing join
    assert verdict({"MPTcpExtMPCapableSYNACKRX": 10, "MPTcpExtMPCapableDataFallback": 8}).reason == \
        "s1: connection fell back to plain TCP (MPCapableDataFallback)"

    def with_receiver(fell_back: int, made_without: int):
        return judge_run(run, [pair], {"s1": complete},
                         {"s1": {"MPTcpExtMPCapableSYNACKRX": 10, "MPTcpExtMPCapableDataFallback": fell_back},
                          "r1": {"MPTcpExtMPCapableFallbackACK": made_without}}, {}, {}, Limits(),
                         crossed=topology("I", 1).networks_crossed("wifi"), path_bytes={"s1": {"wifi": 10**7}})

    # the receiver made a socket from a segment without MP_CAPABLE for each of them: the packets
    # carrying it were lost (a starved station's queue), the network's doing; the run is a result
    assert with_receiver(8, 8).status == "ok"
    # more fallbacks than the receiver accounts for: not explained, and the reason gives its part
    assert with_receiver(8, 7).reason == "s1: connection fell back to plain TCP (MPCapableDataFallback; at the " \
                                         "receiver: MPCapableFallbackACK)"


def test_the_networks_a_run_crosses():
    from rig.model.topology import topology

    assert topology("I", 2).networks_crossed("wifi") == {"ap1", "ap2"}
    assert topology("I", 2).networks_crossed("lte") == {"cell"}
    assert topology("II", 2).networks_crossed("lte") == {"cell", "ap3"}
    assert topology("III", 2).networks_crossed("dual") == {"ap1", "ap2", "cell"}


def _report(events: list, samples: list, started_at: float = 100.0) -> dict:
    """A sender's report of one connection: its path manager's events and subflow samples."""
    return {"connections": [{"started_at": started_at, "local": "10.1.1.11:40000", "events": events, "subflows": samples}]}


def _established(t: float, local: str, remote: str, first: bool = False) -> dict:
    return {"t": t, "event": "created" if first else "sub_established", "local": local, "remote": remote}


def test_every_path_must_join_within_a_bound_whatever_the_transfers_length():
    from rig.run.joins import PairSubflows
    from rig.model.spec import Limits
    from rig.model.topology import topology

    pair = topology("I", 1).pairs[0]
    w, l = f"{pair.radio('wifi').address}", f"{pair.radio('lte').address}"
    a, b = f"{pair.receiver_a.address}:5301", f"{pair.receiver_b.address}:5301"
    wifi = _established(100.01, f"{w}:40000", a, first=True)
    sample = [100.1, f"{w}:40000", a, 9000, 9000, 0, 20.0, 10, 2147483647]  # 20 ms on WiFi
    limits = Limits()

    def problem(events, samples=(sample,), syn_retransmits=0):
        return PairSubflows(_report(events, list(samples)), pair, pair.subflows("dual", "paired"),
                            sender_delta={"TcpExtTCPSynRetrans": syn_retransmits}).problem(limits)

    # the LTE subflow joined 0.19 s after the connection: ok, whether or not it carried data
    assert problem([wifi, _established(100.2, f"{l}:40001", b)]) is None
    # never established: invalid, even for a transfer over in 0.1 s
    assert problem([wifi]) == "connection 0: its LTE subflow was never established"
    # ... unless the connection went on as plain TCP (the source's getsockopt TCP_IS_MPTCP): no
    # other path can join it, and the judge's fallback checks rule on it
    fell_back = _report([wifi], [sample])
    fell_back["connections"][0]["mptcp"] = False
    assert PairSubflows(fell_back, pair, pair.subflows("dual", "paired")).problem(limits) is None
    # a join that failed (closed with an error, never established) is no join
    failed = {"t": 100.3, "event": "sub_closed", "local": f"{l}:40001", "remote": b, "error": 111}
    assert problem([wifi, failed]) == "connection 0: its LTE subflow was never established"
    # too late: 0.5 s at least, 3 RTTs when that is more
    assert problem([wifi, _established(100.71, f"{l}:40001", b)]) == \
        "connection 0: its LTE subflow was established 0.70 s after its path manager could open it (bound 0.50 s)"
    # a queue on the WiFi path (300 ms smoothed RTT before the join) delays the announcement
    queued = [100.5, f"{w}:40000", a, 90000, 90000, 0, 300.0, 10, 2147483647]
    assert problem([wifi, _established(100.71, f"{l}:40001", b)], [sample, queued]) is None
    # RTTs seen only after the join do not widen its bound
    later = [101.5, f"{w}:40000", a, 90000, 90000, 0, 300.0, 10, 2147483647]
    assert "bound 0.50 s" in problem([wifi, _established(100.71, f"{l}:40001", b)], [sample, later])
    # ... but the joined subflow's own first RTT does: its handshake crossed a path slower than
    # the first one (a cell edge: 550 ms), and one round trip of it is no late join
    slow = [101.0, f"{l}:40001", b, 1448, 1448, 0, 550.0, 10, 2147483647]
    assert problem([wifi, _established(100.71, f"{l}:40001", b)], [sample, slow]) is None
    # a path manager that opened a fast path late is still the rig's: its handshake was quick
    quick = [102.0, f"{l}:40001", b, 1448, 1448, 0, 30.0, 10, 2147483647]
    assert "bound 0.50 s" in problem([wifi, _established(101.9, f"{l}:40001", b)], [sample, quick])
    # a retransmitted SYN waited for TCP's 1 s timeout: the network's, not the rig's
    assert problem([wifi, _established(101.31, f"{l}:40001", b)], syn_retransmits=1) is None
    # the first subflow's own handshake (a SYN lost on a busy medium) is no join: counted from the connection
    late_start = _established(101.2, f"{w}:40000", a, first=True)
    assert problem([late_start, _established(101.4, f"{l}:40001", b)]) is None
    # The path manager acts once the connection is fully established (its first data acknowledged)
    # and, for an announced address, once the ADD_ADDR arrived: the time until then is the network's.
    full = {"t": 100.61, "event": "established", "local": f"{w}:40000", "remote": a}  # a first window queued 0.6 s
    announced = {"t": 100.61, "event": "announced", "remote": b}
    assert problem([wifi, full, announced, _established(100.66, f"{l}:40001", b)]) is None
    resent = {"t": 105.0, "event": "announced", "remote": b}  # the first ADD_ADDR lost, sent again
    assert problem([wifi, full, resent, _established(105.05, f"{l}:40001", b)]) is None
    rows = PairSubflows(_report([wifi, full, resent, _established(105.05, f"{l}:40001", b)], [sample]), pair,
                        pair.subflows("dual", "paired")).rows()
    assert [(r["path"], r["ready_s"]) for r in rows] == [("wifi", None), ("lte", 5.0)]
    # ... and from there the same bound: announced, but joined 0.79 s later, is the rig's
    assert problem([wifi, full, announced, _established(101.4, f"{l}:40001", b)]) == \
        "connection 0: its LTE subflow was established 0.79 s after its path manager could open it (bound 0.50 s)"
    # announced and echoed, never joined (what a homing switch once left behind): invalid
    assert problem([wifi, full, announced]) == "connection 0: its LTE subflow was never established"
    # without events the paths cannot be checked: not a valid run either
    assert "cannot be checked" in PairSubflows({"events_error": "MPTCP events: [Errno 1] not permitted",
                                                "connections": []}, pair, pair.subflows("dual", "paired")).problem(limits)


def test_a_path_whose_announcement_never_reached_the_sender_is_the_networks_only_with_the_evidence():
    """The receiver's ADD_ADDR rides on its pure ACKs, which a busy medium can lose; its kernel
    sends it again while no echo comes, a few times. When none arrived, the connection has no
    path to that address: the network's doing, if both kernels' counters account for it."""
    from rig.run.joins import PairSubflows
    from rig.model.spec import Limits
    from rig.model.topology import topology

    pair = topology("II", 1).pairs[0]
    w, a = f"{pair.radio('wifi').address}", f"{pair.receiver_a.address}:5301"
    b = f"{pair.receiver_b.address}:5301"
    wifi = _established(100.01, f"{w}:40000", a, first=True)
    sample = [100.1, f"{w}:40000", a, 9000, 9000, 0, 20.0, 10, 2147483647]
    # seen on 802.11a with 50 connections: the receiver sent 17 ADD_ADDRs for its 10
    # connections, 13 were echoed; one connection heard none of its own
    sender = {"MPTcpExtAddAddr": 0, "TcpExtTCPSynRetrans": 0}
    receiver = {"MPTcpExtAddAddrTx": 4, "MPTcpExtEchoAdd": 0, "MPTcpExtAddAddrTxDrop": 0}

    def paths(announced, sender_delta=sender, receiver_delta=receiver, events=(wifi,)):
        sink = {"connections": [{"peer": f"{w}:40000", "add_addr_signal": announced}]}
        return PairSubflows(_report(list(events), [sample]), pair, pair.subflows("dual", "paired"), sink,
                            sender_delta, receiver_delta)

    lost = paths(1)
    assert lost.problem(Limits()) is None and lost.summary()["add_addr_lost"] == 1
    assert lost.summary()["subflows"] == 1 and lost.summary()["join_s"] is None
    # the receiver had no address to announce: the rig's, and the reason says so
    assert paths(0).problem(Limits()) == \
        "connection 0: its LTE subflow was never established (the receiver announced no address on it)"
    # the sender's kernel took an ADD_ADDR no connection's events show: it may have been this one's
    assert "never established" in paths(1, sender_delta={**sender, "MPTcpExtAddAddr": 1}).problem(Limits())
    # the receiver's kernel counted no announcement sent (the connection ended before it went
    # out): nothing was on the way to be lost
    assert "never established" in paths(1, receiver_delta={**receiver, "MPTcpExtAddAddrTx": 0}).problem(Limits())
    # the receiver's kernel left one unsent (no room in its options): not the network's
    assert "never established" in paths(1, receiver_delta={**receiver, "MPTcpExtAddAddrTxDrop": 1}).problem(Limits())
    # either side's counters not read (its agent lost), or no receiver's report: no evidence
    assert "never established" in paths(1, receiver_delta={}).problem(Limits())
    assert "never established" in PairSubflows(_report([wifi], [sample]), pair, pair.subflows("dual", "paired"),
                                               None, sender, receiver).problem(Limits())
    # announced and heard, never joined: the rig's, whatever the counters
    heard = paths(1, sender_delta={**sender, "MPTcpExtAddAddr": 1},
                  events=(wifi, {"t": 100.3, "event": "announced", "remote": b}))
    assert heard.problem(Limits()) == "connection 0: its LTE subflow was never established"
    assert heard.summary()["add_addr_lost"] == 0


def test_a_full_mesh_needs_each_radio_to_each_receiver_address():
    from rig.run.joins import PairSubflows
    from rig.model.spec import Limits
    from rig.model.topology import topology

    pair = topology("II", 1, ("lte", "lte2"), "fullmesh").pairs[0]
    l1, l2 = f"{pair.radio('lte').address}", f"{pair.radio('lte2').address}"
    a, b = f"{pair.receiver_a.address}:5301", f"{pair.receiver_b.address}:5301"
    first = _established(100.01, f"{l1}:40000", a, first=True)
    sample = [100.1, f"{l1}:40000", a, 9000, 9000, 0, 40.0, 10, 2147483647]
    joined = [_established(100.1, f"{l1}:40001", b), _established(100.1, f"{l2}:40002", a)]

    def problem(events):
        return PairSubflows(_report(events, [sample]), pair, pair.subflows("dual", "fullmesh")).problem(Limits())

    assert problem([first, *joined, _established(100.2, f"{l2}:40003", b)]) is None
    # the second modem reached side A only: its subflow to the announced B address is missing
    assert problem([first, *joined]) == "connection 0: its second LTE -> B subflow was never established"
    rows = PairSubflows(_report([first, *joined], [sample]), pair, pair.subflows("dual", "fullmesh")).rows()
    assert [r["path"] for r in rows] == ["lte-a", "lte-b", "lte2-a"]


def test_a_programs_traceback_is_one_line_in_the_reason():
    from rig.run.transfers import pair_transfer

    traceback = ('Traceback (most recent call last):\n  File "/x/rig_transfer.py", line 120, in sink\n'
                 '    srv.bind(("0.0.0.0", port))\n    ^^^^^^^^^^^^^^^^^^^^^^^^^^\n'
                 'OSError: [Errno 98] Address already in use\n')
    source = {"rc": 0, "stdout": '{"started_at": 1.0, "connections": [{"bytes": 10}]}'}
    t, _ = pair_transfer(source, {"rc": 1, "stdout": "", "stderr": traceback}, 10)
    assert t.error == "receiver exited with 1: OSError: [Errno 98] Address already in use"
