"""The rig transfer's loss-aware path policy (nodes/agent/rig_node/pathpolicy.py): its decisions,
checked on synthetic samples. The real program in namespaces: tests/system/test_transfer_subflows.py."""

from __future__ import annotations

import pytest

from rig_node.linkloss import StatsLog
from rig_node.linkloss import source as linkloss_source
from rig_node.pathpolicy import Endpoints, LossAware, Sample, Switch

MB = 1 << 20


# -- the policy's decisions, on synthetic samples ------------------------------------------------

def policy(thresholds: dict[str, float], **kw) -> LossAware:
    """A policy that measures from the first sample on (settling is tested on its own)."""
    return LossAware(thresholds, **{"settle_s": 0.0, **kw})


def feed(policy: LossAware, t: float, paths: dict[str, tuple[int, int]], established: bool = True) -> list[Switch]:
    """One round: each address one subflow with cumulative (sent, retrans)."""
    return policy.observe(t, [Sample(("c0", a), a, s, r, s - r, established) for a, (s, r) in paths.items()])


def run_rounds(policy: LossAware, rounds: int, step: float, rates: dict[str, tuple[int, float]], t0: float = 0.0,
               totals: dict | None = None) -> list[Switch]:
    """`rounds` rounds every `step` s; each address sends `bytes` per round with `loss` of them retransmitted."""
    totals = totals if totals is not None else {a: [0, 0] for a in rates}
    out = []
    for k in range(1, rounds + 1):
        for a, (per_round, loss) in rates.items():
            totals[a][0] += per_round
            totals[a][1] += int(per_round * loss)
        out += feed(policy, t0 + k * step, {a: tuple(v) for a, v in totals.items()})
    return out


def test_a_lossy_path_goes_backup_once_a_full_window_shows_it():
    p = policy({"w": 0.001, "l": 0.01}, window_s=1.0)
    totals = {"w": [0, 0], "l": [0, 0]}
    rates = {"w": (MB, 0.002), "l": (MB, 0.0)}
    # the first round (t = 0.1) is the base: at t = 1.0 the history spans 0.9 s, no full window
    assert run_rounds(p, 10, 0.1, rates, totals=totals) == []
    switches = run_rounds(p, 1, 0.1, rates, t0=1.0, totals=totals)
    assert [(s.address, s.action) for s in switches] == [("w", "backup")]
    assert switches[0].loss == pytest.approx(0.002, rel=0.01) and switches[0].t == pytest.approx(1.1)
    assert p.held() == ["w"]


def test_below_the_threshold_nothing_switches():
    p = policy({"w": 0.001, "l": 0.01}, window_s=1.0)
    assert run_rounds(p, 50, 0.1, {"w": (MB, 0.0009), "l": (MB, 0.009)}) == []


def test_the_last_path_that_is_not_backup_is_never_switched():
    # the other path has no established subflow
    p = policy({"w": 0.001}, window_s=1.0)
    for k in range(1, 30):
        assert p.observe(k * 0.1, [Sample("a", "w", k * MB, k * MB // 10, k * MB // 2, True),
                                   Sample("b", "l", k * MB, 0, k * MB, False)]) == []
    # the other path's subflow is established but nothing is acknowledged on it (its interface
    # went down: the subflow lasts until its timeouts)
    p = policy({"w": 0.001}, window_s=1.0)
    for k in range(1, 30):
        assert p.observe(k * 0.1, [Sample("a", "w", k * MB, k * MB // 10, k * MB // 2, True),
                                   Sample("b", "l", MB, 0, MB // 2, True)]) == []
    # the other path is backup from the start (the campaign's setting)
    p = policy({"w": 0.001}, window_s=1.0, backup_at_start=frozenset({"l"}))
    assert run_rounds(p, 30, 0.1, {"w": (MB, 0.1), "l": (MB, 0.0)}) == []
    # both lossy: the first goes backup, the second then is the last one left
    p = policy({"w": 0.001, "l": 0.001}, window_s=1.0)
    switches = run_rounds(p, 30, 0.1, {"w": (MB, 0.1), "l": (MB, 0.1)})
    assert [s.action for s in switches] == ["backup"] and len(p.held()) == 1


def test_a_window_with_too_few_bytes_is_no_measure():
    p = policy({"w": 0.001, "l": 0.01}, window_s=1.0)
    # 1 retransmitted segment of 10 in each window: 10 % "loss" from 14 kB is no measure
    assert run_rounds(p, 40, 0.1, {"w": (1448, 0.1), "l": (MB, 0.0)}) == []


def test_one_lost_segment_is_no_measure_of_a_low_threshold():
    """At 10 Mbit/s one lost segment in a 1 s window is 0.12 %: a 0.1 % threshold is judged once
    3 segments are lost, or over enough data for it to mean 3 lost segments (4.3 MB, 3.5 s)."""
    p = policy({"w": 0.001, "l": 0.01}, window_s=1.0)
    totals = {"w": [0, 0], "l": [0, 0]}
    rate = {"w": (125_000, 0.0), "l": (MB, 0.0)}
    assert run_rounds(p, 5, 0.1, rate, totals=totals) == []
    totals["w"][1] += 1448  # a queue overflow
    assert run_rounds(p, 100, 0.1, rate, t0=0.5, totals=totals) == []
    # while a steady 0.2 % is found once 3 segments are lost (250 B a round: after 1.8 s)
    p = policy({"w": 0.001, "l": 0.01}, window_s=1.0)
    switches = run_rounds(p, 100, 0.1, {"w": (125_000, 0.002), "l": (MB, 0.0)})
    assert [(s.action, s.t) for s in switches] == [("backup", pytest.approx(1.9))]


def test_slow_start_is_left_out():
    """A subflow counts from settle_s after its slow start ended: the overshoot's loss burst,
    retransmitted right after the first loss, is not the link's."""
    def overshoot_then_clean(p: LossAware, key: str, t0: float) -> list[Switch]:
        out, sent, retrans = [], 0, 0
        for k in range(1, 61):  # slow start for 0.5 s, 20 % lost in the next 0.4 s, then none
            sent += MB
            retrans += MB // 5 if 5 < k <= 9 else 0
            t, lte = t0 + k * 0.1, int((t0 + k * 0.1) * 10 * MB)
            out += p.observe(t, [Sample(key, "w", sent, retrans, sent - retrans, True, k > 5),
                                 Sample("l", "l", lte, 0, lte, True)])
        return out
    assert [s.action for s in overshoot_then_clean(policy({"w": 0.01}, window_s=1.0), "a", 0.0)][:1] == ["backup"]
    p = LossAware({"w": 0.01}, window_s=1.0)  # settle_s 1 s
    assert overshoot_then_clean(p, "a", 0.0) == []
    assert overshoot_then_clean(p, "b", 6.0) == []  # a subflow that joins later (the path came back)


def test_a_subflow_that_begins_to_count_is_judged_on_a_full_window_of_its_counting():
    """HyStart ends slow start without a loss (ssthresh set at 0.3 s); the queue overflows a
    second later, just after the subflow began to count: that round alone is no window."""
    def hystart_then_overflow(p: LossAware) -> list[Switch]:
        out, sent, retrans = [], 0, 0
        for k in range(1, 41):  # 3 MB/s; 55 kB of 350 kB lost at 1.4 s, none after
            sent += 350_000
            retrans += 55_000 if k == 14 else 0
            t = k * 0.1
            out += p.observe(t, [Sample("a", "w", sent, retrans, sent - retrans, True, k >= 3),
                                 Sample("l", "l", k * MB, 0, k * MB, True)])
        return out
    assert hystart_then_overflow(LossAware({"w": 0.12}, window_s=1.0)) == []  # 55 kB of a counted window's 3.5 MB
    backup = hystart_then_overflow(LossAware({"w": 0.012}, window_s=1.0))
    assert [(s.action, s.t) for s in backup][:1] == [("backup", pytest.approx(2.3))]  # once a window of counting shows it
    assert backup[0].loss == pytest.approx(55_000 / 3_500_000)


def test_a_backup_path_is_restored_when_what_it_sent_shows_low_loss():
    p = policy({"w": 0.01, "l": 0.01}, window_s=1.0, hold_s=100)
    totals = {"w": [0, 0], "l": [0, 0]}
    assert [s.action for s in run_rounds(p, 11, 0.1, {"w": (MB, 0.05), "l": (MB, 0)}, totals=totals)] == ["backup"]
    # still lossy while backup: stays backup
    assert run_rounds(p, 20, 0.1, {"w": (MB // 8, 0.05), "l": (MB, 0)}, t0=1.1, totals=totals) == []
    # no loss, but 200 kB a window is too small a sample for 1 % (5 segments at 1 %: 724 kB)
    assert run_rounds(p, 20, 0.1, {"w": (20_000, 0.0), "l": (MB, 0)}, t0=3.1, totals=totals) == []
    # what it carries now, enough of it, arrives without loss: restored within a window
    switches = run_rounds(p, 12, 0.1, {"w": (MB // 8, 0.0), "l": (MB, 0)}, t0=5.1, totals=totals)
    assert [(s.address, s.action) for s in switches] == [("w", "restore")]
    assert switches[0].loss < 0.01 and p.held() == []  # the sliding window fell below the threshold


def test_a_backup_path_that_carries_nothing_is_restored_after_the_hold():
    p = policy({"w": 0.01, "l": 0.01}, window_s=1.0, hold_s=5.0)
    totals = {"w": [0, 0], "l": [0, 0]}
    backup = run_rounds(p, 11, 0.1, {"w": (MB, 0.05), "l": (MB, 0)}, totals=totals)
    assert [s.action for s in backup] == ["backup"]
    switches = run_rounds(p, 60, 0.1, {"w": (0, 0), "l": (MB, 0)}, t0=1.1, totals=totals)
    assert [(s.address, s.action, s.loss) for s in switches] == [("w", "restore", None)]
    assert switches[0].t - backup[0].t == pytest.approx(5.0)
    # measured afresh as a regular path (from the restore on): still lossy => backup again as
    # soon as a window since the restore has enough bytes
    again = run_rounds(p, 12, 0.1, {"w": (MB, 0.05), "l": (MB, 0)}, t0=7.1, totals=totals)
    assert [(s.action, s.t) for s in again] == [("backup", pytest.approx(7.2))]


def test_subflows_that_come_and_go_keep_the_path_counts_cumulative():
    p = policy({"w": 0.01, "l": 0.01}, window_s=1.0)
    for k in range(1, 12):  # subflow "a" on w, then it closes and "b" (counting from 0) replaces it
        sub = [Sample("a", "w", k * MB, 0, k * MB, True)] if k <= 5 else [Sample("b", "w", (k - 5) * MB, 0, (k - 5) * MB, True)]
        assert p.observe(k * 0.1, sub + [Sample("x", "l", k * MB, 0, k * MB, True)]) == []
    assert p.paths["w"].sent == 11 * MB and p.paths["w"].retrans == 0


def test_release_restores_every_path_the_policy_holds():
    p = policy({"w": 0.01, "l": 0.01}, window_s=1.0)
    run_rounds(p, 11, 0.1, {"w": (MB, 0.05), "l": (MB, 0)})
    assert [(s.address, s.action, s.loss) for s in p.release(99.0)] == [("w", "restore", None)]
    assert p.held() == [] and p.release(100.0) == []


# -- the link measure: what each path's own link dropped at random ------------------------------

def test_with_the_link_measure_a_full_queues_drops_do_not_count():
    """w's subflow retransmits 2 % (its queue overflowing) but its link lost nothing; l's link
    lost 5 % of its frames: l goes backup, w never does, at the paper's thresholds."""
    p = LossAware({"w": 0.001, "l": 0.01}, window_s=1.0, measure="link")
    switches = []
    for k in range(1, 31):
        t = k * 0.1
        links = {"w": (1000 * k, 0), "l": (1000 * k, 50 * k)}  # cumulative (given, lost) frames
        switches += p.observe(t, [Sample("a", "w", k * MB, k * MB // 50, k * MB, True),
                                  Sample("b", "l", k * MB, 0, k * MB, True)], links)
    assert [(s.address, s.action) for s in switches] == [("l", "backup")]
    assert switches[0].loss == pytest.approx(0.05) and switches[0].t == pytest.approx(1.1)  # a window after the base


def test_with_the_link_measure_too_few_frames_are_no_measure():
    p = LossAware({"w": 0.001, "l": 0.01}, window_s=1.0, measure="link")
    for k in range(1, 21):  # 10 % of l's frames lost, but it was given 40 in all (2 s of 20 a second)
        assert p.observe(k * 0.1, [Sample("a", "w", k * MB, 0, k * MB, True), Sample("b", "l", k * MB, 0, k * MB, True)],
                         {"w": (10_000 * k, 0), "l": (2 * k, (2 * k) // 10)}) == []


def test_the_emulators_stats_log_is_read_from_its_end_as_it_grows(tmp_path):
    log = tmp_path / "ap1.stats.jsonl"
    log.write_text('{"t": 1.0, "station": "s1w", "up_frames": 900, "up_loss_drops": 100}\n{"t": 1.0, "sta')
    reader = StatsLog(str(log), "s1w")  # what was logged before is not counted, the partial line neither
    with log.open("a") as f:
        f.write('tion": "s2w", "up_frames": 5, "up_loss_drops": 5}\n'
                # its second began before the reader did: the previous run's last frames, at its loss
                '{"t": 2.0, "station": "s1w", "up_frames": 80, "up_loss_drops": 20}\n'
                '{"t": 3.0, "station": "s1w", "up_frames": 95, "up_loss_drops": 5, "up_queue_drops": 40}\n'
                '{"t": 3.0, "station": "s2w", "up_fr')
    assert reader.read() == (100, 5)  # given: delivered + lost at random; a queue's drops are not the link's
    with log.open("a") as f:
        f.write('ames": 1}\n{"t": 4.0, "station": "s1w", "up_frames": 10, "up_loss_drops": 0}\n')
    assert reader.read() == (110, 5)
    with pytest.raises(ValueError, match="not stats"):
        linkloss_source("stats:relative.jsonl:s1w")
    assert isinstance(linkloss_source(f"stats:{log}:s1w"), StatsLog)


def test_endpoints_by_address():
    e = Endpoints([{"address": "10.0.0.1", "id": 1, "subflow": True, "dev": "w0"},
                   {"address": "10.0.1.1", "id": 2, "subflow": True, "backup": True, "dev": "l0"}])
    assert e.ids == {"10.0.0.1": 1, "10.0.1.1": 2} and e.backup == {"10.0.1.1"}
    with pytest.raises(RuntimeError, match="no MPTCP endpoint"):
        e.apply(Switch(0.0, "10.9.9.9", 0.5, "backup"))
