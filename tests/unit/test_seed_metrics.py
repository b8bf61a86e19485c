"""The studies' metrics (analysis/metrics.py) on small tables whose answers are worked out by hand."""

from __future__ import annotations

import math

import pytest

from analysis.metrics import (benefit, benefit_rows, cv, fct_by_size, mptcp_vs_best_single, path_rates, quantile,
                              recovery_times, rtt_distribution, run_t0, state_events, subflow_timeline,
                              throughput_cv, traffic_share)

T0 = 100.0


def sample(t, acked, path="wifi", connection=0, rtt=None, run="r", pair=1):
    local = {"wifi": "10.1.0.11", "lte": "10.2.0.11"}[path]
    return {"run_id": run, "time": T0 + t, "host": "s1", "pair": pair, "connection": connection,
            "local": f"{local}:{40000 + connection}", "remote": "10.9.0.21:5201", "path": path,
            "bytes_acked": acked, "rtt_ms": rtt}


# Bytes acked per subflow (cumulative) and when the sender sampled them.
SUBFLOWS = [
    sample(0.5, 1000, rtt=10), sample(1.0, 3000, rtt=20), sample(1.5, 3000, rtt=30), sample(2.0, 5000, rtt=40),
    sample(2.4, 6000),  # after the last whole interval: not counted
    sample(0.8, 1000, connection=1), sample(1.8, 1000, connection=1),  # a second connection's WiFi subflow
    sample(0.5, 0, "lte", rtt=100), sample(1.5, 500, "lte", rtt=300), sample(2.0, 500, "lte"),
]


def test_path_rates_put_acked_bytes_into_whole_intervals():
    rates = path_rates(SUBFLOWS, {"r": T0}, bin_s=1.0)
    got = {(r["path"], r["interval"]): r["bps"] for r in rates}
    # WiFi interval 0: 1000 + 2000 (first connection) + 1000 (second); interval 1: 2000 + 0
    assert got == {("wifi", 0): 32000.0, ("wifi", 1): 16000.0, ("lte", 0): 0.0, ("lte", 1): 4000.0}
    assert {r["t_s"] for r in rates} == {1.0, 2.0}


def test_cv_and_per_path_throughput_cv():
    assert cv([1.0]) is None and cv([0.0, 0.0]) is None
    assert cv([2.0, 4.0, 6.0]) == pytest.approx(0.5)  # stdev 2 (n-1), mean 4
    rows = {r["path"]: r for r in throughput_cv(path_rates(SUBFLOWS, {"r": T0}))}
    assert rows["wifi"]["mean_bps"] == 24000 and rows["wifi"]["cv"] == pytest.approx(8000 * math.sqrt(2) / 24000)
    assert rows["lte"]["mean_bps"] == 2000 and rows["lte"]["cv"] == pytest.approx(math.sqrt(2))
    assert rows["total"]["mean_bps"] == 26000 and rows["total"]["cv"] == pytest.approx(6000 * math.sqrt(2) / 26000)
    assert rows["wifi"]["intervals"] == 2


def test_traffic_share_counts_intervals_where_a_path_carries_more():
    rates = [{"run_id": "r", "pair": 1, "path": p, "interval": i, "t_s": i + 1.0, "bps": v}
             for i, (w, lte) in enumerate([(5, 1), (1, 5), (3, 3), (0, 0), (0, 2)])
             for p, v in (("wifi", w), ("lte", lte))]
    [row] = traffic_share(rates)
    # 4 intervals with traffic: LTE more in 2, WiFi in 1, equal in 1 (the idle one is left out)
    assert row["intervals"] == 4
    assert (row["lte_more"], row["wifi_more"], row["equal"]) == (0.5, 0.25, 0.25)


def test_rtt_distribution_per_homing_and_path():
    assert quantile([10, 20, 30, 40], 0.1) == pytest.approx(13)
    runs = [{"run_id": "r", "homing": "dual"}]
    rows = {r["path"]: r for r in rtt_distribution(SUBFLOWS, runs)}
    wifi = rows["wifi"]
    assert (wifi["homing"], wifi["samples"], wifi["mean_ms"]) == ("dual", 4, 25)
    assert (wifi["p10_ms"], wifi["p50_ms"], wifi["p90_ms"], wifi["max_ms"]) == pytest.approx((13, 25, 37, 40))
    assert rows["lte"]["samples"] == 2 and rows["lte"]["p50_ms"] == 200


def test_subflow_timeline_has_each_subflows_throughput_and_rtt():
    rows = subflow_timeline(SUBFLOWS, {"r": T0})
    first = [r for r in rows if r["path"] == "wifi" and r["connection"] == 0]
    assert [(r["t_s"], r["bps"], r["rtt_ms"]) for r in first] == [(1.0, 24000.0, 15.0), (2.0, 16000.0, 35.0)]
    assert len({r["subflow"] for r in rows}) == 3


def test_fct_by_size_and_mptcp_against_the_best_single_path():
    runs = [{"setup": "I", "cc": "olia", "connections": 1, "volume_bytes": 1_000_000, "homing": h, "fct_s": f}
            for h, f in (("dual", 1.0), ("dual", 2.0), ("wifi", 2.0), ("wifi", 2.0), ("lte", 3.0), ("lte", None))]
    fct = {r["homing"]: r for r in fct_by_size(runs)}
    assert fct["dual"]["mean_s"] == 1.5 and fct["dual"]["ci_s"] == pytest.approx(12.706 * 0.5)
    assert fct["lte"]["pairs"] == 1 and fct["lte"]["ci_s"] is None
    [row] = mptcp_vs_best_single(fct_by_size(runs))
    assert (row["best_single"], row["best_single_s"], row["dual_s"], row["ratio"]) == ("wifi", 2.0, 1.5, 0.75)


def test_benefit_formula():
    caps = [10.0, 8.0]
    assert benefit(15, caps) == pytest.approx(5 / 8)  # (G - Cmax) / (sum - Cmax)
    assert benefit(5, caps) == pytest.approx(-0.5)  # (G - Cmax) / Cmax
    assert (benefit(10, caps), benefit(18, caps), benefit(0, caps)) == (0.0, 1.0, -1.0)


def test_benefit_rows_take_the_best_single_path_repetition():
    def run(run_id, homing, goodputs, policy="none", loss=0.1):
        return [{"run_id": run_id, "homing": homing, "policy": policy, "goodput_bps": g, "cc": "balia",
                 "setup": "I", "volume_bytes": None, "duration_s": 120.0, "fct_s": None,
                 "lossy_path": "wifi", "loss_pct": loss} for g in goodputs]
    runs = (run("w1", "wifi", [10e6]) + run("w2", "wifi", [9e6]) + run("l1", "lte", [8e6]) + run("l2", "lte", [7e6])
            + run("d1", "dual", [11e6, 13e6]) + run("d2", "dual", [9e6], "loss-aware")
            + run("d3", "dual", [20e6], loss=1.0))  # another condition, without single-path runs: left out
    rows = {r["run_id"]: r for r in benefit_rows(runs)}
    assert set(rows) == {"d1", "d2"}
    assert rows["d1"]["g_bps"] == 12e6 and rows["d1"]["c_wifi_bps"] == 10e6 and rows["d1"]["c_lte_bps"] == 8e6
    assert rows["d1"]["benefit"] == pytest.approx(0.25) and rows["d1"]["policy"] == "none"
    assert rows["d2"]["benefit"] == pytest.approx(-0.1) and rows["d2"]["policy"] == "loss-aware"
    assert rows["d1"]["duration"] == 120.0


def _event(at_s, state, actual, where="radio", pair=None):
    return {"run_id": "r", "planned": 1000.0 + at_s, "actual": 1000.0 + actual, "at_s": at_s, "path": "lte",
            "pair": pair, "what": "state", "values": f'{{"state": "{state}"}}', "where": where}


EVENTS = [_event(10, "down", 10.3, "node"), _event(10, "down", 10.2), _event(20, "up", 20.05),
          _event(30, "down", 30.0), _event(35, "up", 35.0), {**_event(60, "down", 0), "actual": None}]


def test_state_events_merge_the_rigs_parts_to_the_earliest():
    cuts = state_events(EVENTS)
    assert [(e["state"], e["actual"]) for e in cuts][:2] == [("down", 1010.2), ("up", 1020.05)]
    assert len(cuts) == 4  # the event due after the run ended was never applied
    assert run_t0([{"run_id": "r", "started_at": "1970-01-01T00:16:40.5+00:00"}], EVENTS) == {"r": 1000.0}
    assert run_t0([{"run_id": "r", "started_at": "1970-01-01T00:16:40.5+00:00"}]) == {"r": 1000.5}


def test_recovery_time_after_a_restore():
    bps = [0] + [1000] * 9 + [0] * 10 + [200, 300, 600] + [1000] * 7 + [0] * 10
    rates = [{"run_id": "r", "pair": 1, "path": "lte", "interval": i, "t_s": i + 1.0, "bps": float(v)}
             for i, v in enumerate(bps)]
    first, second = recovery_times(rates, EVENTS, {"r": 1000.0}, fraction=0.5, pre_s=10.0)
    # before the cut at 10.2 s: whole intervals in [0.2, 10.2) are 1..9, all 1000 bit/s
    assert first["pre_bps"] == 1000 and first["down_at_s"] == pytest.approx(10.2)
    # the first interval starting after 20.05 s at >= 500 is (22, 23]
    assert first["recovered_at_s"] == 23.0 and first["recovery_s"] == pytest.approx(2.95)
    assert first["cut_s"] == pytest.approx(9.85) and first["pair"] == 1
    # the second cut (30-35 s): nothing afterwards
    assert second["pre_bps"] == pytest.approx((200 + 300 + 600 + 7 * 1000) / 10)  # intervals 20..29
    assert second["recovery_s"] is None


def test_the_lossy_condition_of_a_campaign():
    from analysis.studies import lossy_condition

    assert lossy_condition({}) == {"lossy_path": None, "loss_pct": None, "rate_bps": None}
    hops = {"wifi": {"rate_bps": 30e6, "delay_ms": 5}, "lte": {"rate_bps": 20e6}}
    by_event = {"impairments": hops, "events": [{"at_s": 0, "path": "lte", "loss_pct": 1, "direction": "up"}]}
    assert lossy_condition(by_event) == {"lossy_path": "lte", "loss_pct": 1.0, "rate_bps": 20e6}
    by_hop = {"impairments": {"wifi": {"rate_bps": 10e6, "loss_pct": 0.01}}}
    assert lossy_condition(by_hop) == {"lossy_path": "wifi", "loss_pct": 0.01, "rate_bps": 10e6}


def test_the_lossy_condition_of_a_run_of_seed_003s_grid():
    from analysis.studies import lossy_condition

    campaign = {"impairments": {"wifi": {"rate_bps": 30e6, "delay_ms": 5}, "lte": {"delay_ms": 37.5}},
                "events": [{"at_s": 0, "path": "wifi", "loss_pct": 1, "direction": "up"}]}
    # the run's levels win over the campaign's hop and event; a 0 % level is a lossy path's cell too
    assert lossy_condition(campaign, {"link_rate_bps": 10e6, "lte_loss_pct": 0.1}) == {
        "lossy_path": "lte", "loss_pct": 0.1, "rate_bps": 10e6}
    assert lossy_condition(campaign, {"wifi_loss_pct": 0.0}) == {"lossy_path": "wifi", "loss_pct": 0.0,
                                                                  "rate_bps": 30e6}
    assert lossy_condition(campaign, {"wifi_loss_pct": None, "link_rate_bps": None}) == lossy_condition(campaign)
    assert lossy_condition({}, {"link_rate_bps": 20e6}) == {"lossy_path": None, "loss_pct": None, "rate_bps": 20e6}


def test_benefit_rows_compare_within_each_cell_of_the_grid():
    """C_i is the best single-path run of the same (rate, loss) cell, never of another cell."""
    def run(run_id, homing, goodput, rate, loss, policy="none"):
        return {"run_id": run_id, "homing": homing, "policy": policy, "goodput_bps": goodput, "cc": "balia",
                "setup": "I", "volume_bytes": None, "duration_s": 20.0, "lossy_path": "wifi", "loss_pct": loss,
                "rate_bps": rate}
    runs = [run("w-10-1", "wifi", 6e6, 10e6, 1), run("l-10-1", "lte", 9e6, 10e6, 1),
            run("w-20-1", "wifi", 12e6, 20e6, 1), run("l-20-1", "lte", 18e6, 20e6, 1),
            run("w-10-10", "wifi", 1e6, 10e6, 10), run("l-10-10", "lte", 9e6, 10e6, 10),
            run("d-10-1", "dual", 12e6, 10e6, 1), run("d-20-1", "dual", 18e6, 20e6, 1, "loss-aware"),
            run("d-10-10", "dual", 4.5e6, 10e6, 10)]
    rows = {r["run_id"]: r for r in benefit_rows(runs)}
    assert (rows["d-10-1"]["c_wifi_bps"], rows["d-10-1"]["c_lte_bps"]) == (6e6, 9e6)
    assert rows["d-10-1"]["benefit"] == pytest.approx(0.5)  # (12 - 9) / 6
    assert rows["d-20-1"]["benefit"] == 0.0 and rows["d-20-1"]["policy"] == "loss-aware"  # G = Cmax = 18
    assert rows["d-10-10"]["benefit"] == pytest.approx(-0.5)  # (4.5 - 9) / 9
    assert (rows["d-10-10"]["rate_bps"], rows["d-10-10"]["loss_pct"], rows["d-10-10"]["lossy_path"]) == (10e6, 10, "wifi")
