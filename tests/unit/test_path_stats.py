"""The runs table's RTT, loss and subflow-byte columns (rig.store.path_stats): hand-worked on a
pair's subflow samples, then through the synthetic store to the export, the findings metrics and
the report's RTT table."""

from __future__ import annotations

import json
import math

import pyarrow.parquet as pq
import pytest

from fixtures.study_campaign import write_study_campaign
from rig.export import export_campaign
from rig.findings.data import CampaignData
from rig.findings.metrics import METRICS
from rig.store.columns import DESCRIPTIONS, RUNS_SCHEMA
from rig.store.path_stats import PATHS, pair_path_stats
from rig.store.reader import CampaignDir
from rig.store.synthetic import write_campaign

NEW = ("mptcp_rtt_ms", *(f"{k}_{p}" for p in PATHS for k in ("rtt_ms", "rtt_sd_ms", "loss")), "subflow_bytes",
       "subflow_excess", "subflow_mismatch")


def sample(t, path, port, acked, sent, retrans, rtt, connection=0):
    """A subflow's sample; `acked`: data bytes (the kernel's bytes_acked also counts the SYN)."""
    return {"time": t, "pair": 1, "connection": connection, "local": f"10.{1 if path == 'wifi' else 2}.0.11:{port}",
            "remote": "10.9.0.21:5201", "path": path, "bytes_acked": acked + 1, "bytes_sent": sent,
            "bytes_retrans": retrans, "rtt_ms": rtt}


def test_rtts_weigh_each_sample_by_the_bytes_acked_since_the_one_before():
    samples = [
        # wifi: 1000 bytes at 10 ms, then 3000 more at 30 ms; 200 of 4200 sent were retransmissions
        sample(1.0, "wifi", 40000, 1000, 1000, 0, 10.0), sample(2.0, "wifi", 40000, 4000, 4200, 200, 30.0),
        # lte: 4000 bytes at 100 ms, then nothing more (its later sample at 500 ms weighs nothing)
        sample(1.0, "lte", 40001, 4000, 4000, 0, 100.0), sample(2.0, "lte", 40001, 4000, 4000, 0, 500.0),
    ]
    s = pair_path_stats(samples, bytes_received=8000)
    assert s["rtt_ms_wifi"] == pytest.approx(25.0)  # (1000 x 10 + 3000 x 30) / 4000
    assert s["rtt_sd_ms_wifi"] == pytest.approx(math.sqrt((1000 * 15 ** 2 + 3000 * 5 ** 2) / 4000))
    assert s["rtt_ms_lte"] == pytest.approx(100.0) and s["rtt_sd_ms_lte"] == 0.0
    assert s["mptcp_rtt_ms"] == pytest.approx((1000 * 10 + 3000 * 30 + 4000 * 100) / 8000)  # between the paths
    assert s["loss_wifi"] == pytest.approx(200 / 4200) and s["loss_lte"] == 0.0
    assert s["rtt_ms_lte2"] is None and s["loss_lte2"] is None  # no such path in the run
    assert s["subflow_bytes"] == 8000 and s["subflow_excess"] == 0.0 and s["subflow_mismatch"] is False


def test_a_connections_subflows_are_told_apart_and_an_idle_one_has_no_rtt():
    samples = [sample(1.0, "wifi", 40000, 5000, 5000, 0, 20.0),
               sample(1.0, "wifi", 40000, 5000, 5000, 0, 40.0, connection=1),  # same addresses, another connection
               sample(1.0, "lte", 40001, 0, 0, 0, 80.0)]  # joined, carried nothing
    s = pair_path_stats(samples, bytes_received=10_000)
    assert s["rtt_ms_wifi"] == pytest.approx(30.0) and s["subflow_bytes"] == 10_000
    assert s["rtt_ms_lte"] is None and s["loss_lte"] is None and s["mptcp_rtt_ms"] == pytest.approx(30.0)


@pytest.mark.parametrize("carried, flagged", [(10_500, False), (11_001, True), (9_995, False), (9_980, True)])
def test_subflow_bytes_against_what_the_receiver_read(carried, flagged):
    """Above: data sent on two subflows (flagged beyond 10 %); below: bytes the samples missed
    (flagged beyond 0.1 %)."""
    s = pair_path_stats([sample(1.0, "wifi", 40000, carried, carried + 300, 300, 20.0)], bytes_received=10_000)
    assert s["subflow_bytes"] == carried
    assert s["subflow_excess"] == pytest.approx((carried - 10_000) / 10_000)
    assert s["subflow_mismatch"] is flagged


def test_no_samples_or_nothing_read_leaves_the_columns_empty():
    assert all(v is None for v in pair_path_stats([], 1000).values())
    s = pair_path_stats([sample(1.0, "wifi", 40000, 100, 100, 0, 20.0)], bytes_received=None)
    assert s["subflow_bytes"] == 100 and s["subflow_excess"] is None and s["subflow_mismatch"] is None


def test_every_new_column_is_in_the_schema_with_a_description():
    assert set(NEW) <= set(RUNS_SCHEMA.names) and set(NEW) <= set(DESCRIPTIONS)
    assert set(pair_path_stats([], None)) == set(NEW)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return write_campaign(tmp_path_factory.mktemp("paths") / "results", ccs=("lia",), connections=(1,),
                          repetitions=3, transfer_subflows=True)


def test_the_synthetic_stores_runs_carry_the_columns(store):
    rows = CampaignDir(store.path).runs_rows()
    ok = [r for r in rows if r["status"] == "ok"]
    assert ok and all(r[c] is not None for r in ok for c in ("mptcp_rtt_ms", "rtt_ms_wifi", "rtt_sd_ms_lte",
                                                              "loss_wifi", "subflow_bytes", "subflow_excess"))
    assert all(r["rtt_ms_wifi"] < r["mptcp_rtt_ms"] < r["rtt_ms_lte"] for r in ok)
    assert all(r["loss_wifi"] > r["loss_lte"] for r in ok)
    flagged = [(r["run_id"], r["pair"]) for r in ok if r["subflow_mismatch"]]
    assert flagged == [(store.ok_run_ids[0], 0)]
    failed = [r for r in rows if r["status"] == "failed"]
    assert failed and all(r["subflow_excess"] is None for r in failed)  # nothing read, nothing to check against


def test_the_export_describes_them(store, tmp_path):
    export_campaign(store.path, tmp_path / "bundle")
    package = json.loads((tmp_path / "bundle" / "datapackage.json").read_text())
    runs = next(r for r in package["resources"] if r["name"] == "runs")
    fields = {f["name"]: f for f in runs["schema"]["fields"]}
    assert all(fields[c].get("description") for c in NEW)
    assert fields["subflow_mismatch"]["type"] == "boolean" and fields["rtt_sd_ms_wifi"]["type"] == "number"
    table = pq.read_table(tmp_path / "bundle" / "data" / "runs.parquet")
    assert table.column("subflow_mismatch").to_pylist().count(True) == 1


def test_findings_metrics_read_them_per_run(store):
    data = CampaignData.read([store.path])["fixture"]
    rtt, lte, wifi = (METRICS[m].compute(data) for m in ("mptcp_rtt_ms", "rtt_ms_lte", "rtt_ms_wifi"))
    assert set(rtt) == set(data.runs) and all(wifi[k] < rtt[k] < lte[k] for k in rtt)
    assert all(METRICS[m].runs == "any" for m in ("mptcp_rtt_ms", "rtt_sd_ms_lte", "loss_wifi", "subflow_sum_ratio"))
    ratio, share = METRICS["subflow_sum_ratio"].compute(data), METRICS["subflow_mismatch"].compute(data)
    first = f"0/{store.ok_run_ids[0]}"
    assert ratio[first] == pytest.approx(1 + 0.15 / 5, rel=1e-3) and share[first] == pytest.approx(1 / 5)
    assert all(v == pytest.approx(1.0, rel=1e-4) for k, v in ratio.items() if k != first)


def test_the_reports_rtt_table_has_the_connection_level_rtt(tmp_path):
    """Seed 000's Fig. 6: per homing the connection's RTT next to each path's (fixture 'long':
    LTE at 200 ms carries 1 Mbit/s in odd seconds, WiFi at 30 ms 4 Mbit/s)."""
    from analysis.studies import study_tables

    rows = {(r["homing"], r["path"]): r for r in study_tables(write_study_campaign(tmp_path, "long"))["metric_rtt"]}
    assert rows[("lte", "mptcp")]["mean_ms"] == pytest.approx(rows[("lte", "lte")]["mean_ms"], rel=0.01)
    dual = rows[("dual", "mptcp")]
    assert dual["samples"] == 2  # one per flow
    assert rows[("dual", "wifi")]["mean_ms"] < dual["mean_ms"] < rows[("dual", "lte")]["mean_ms"]
    assert dual["mean_ms"] == pytest.approx((4 * 31 + 0.5 * 201) / 4.5, rel=0.01)  # by the bytes each path carried
