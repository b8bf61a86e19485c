"""The runs table's RTT, loss and subflow-byte columns (rig.store.path_stats) filled by a real
campaign on the emulated rig: seed 001's paths (a lossy WiFi hop at a short RTT, a loss-free LTE
hop at a longer one), one pair, one volume run dual-homed and one LTE-homed (the per-path columns
of volume runs, which seed 001's claims read; the sums on hand: tests/unit/test_path_stats.py)."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from fixtures.cli import run_rig
from rig.store.path_stats import pair_path_stats

pytestmark = pytest.mark.emulated

CAMPAIGN = """
name: path-stats
setups: [I]
pairs: 1
repetitions: 1
seed: 1
factors:
  volume: [2MB]
  homing: [dual, lte]
impairments:
  wifi: {rate_bps: 15.0e6, delay_ms: 7.5, loss_pct: 1, direction: both}
  lte: {rate_bps: 10.0e6, delay_ms: 25, direction: both}
limits:
  run_timeout_s: 60
  max_lag_p99_ms: 200
"""


def test_a_volume_runs_rows_have_each_paths_rtt_and_loss_and_the_subflows_bytes(tmp_path, emulator, rig_prefix):
    f = tmp_path / "c.yaml"
    f.write_text(CAMPAIGN)
    out = tmp_path / "results"
    run_rig("campaign", "run", str(f), "--out", str(out), "--prefix", rig_prefix, check=True)
    (root,) = [d for d in out.iterdir() if not d.name.startswith(".")]
    rows = {r["homing"]: r for r in pq.read_table(root / "runs.parquet").to_pylist()}
    assert set(rows) == {"dual", "lte"} and all(r["status"] == "ok" for r in rows.values()), rows
    dual, lte = rows["dual"], rows["lte"]

    # each path its own RTT (the LTE hop adds 50 ms, the WiFi hop 15 ms) and the connection's between them
    assert 0 < dual["rtt_ms_wifi"] < dual["mptcp_rtt_ms"] < dual["rtt_ms_lte"] < 1000, dual
    assert dual["rtt_sd_ms_wifi"] >= 0 and dual["rtt_sd_ms_lte"] >= 0
    assert dual["rtt_ms_lte2"] is None and dual["loss_lte2"] is None  # no second modem
    assert dual["loss_wifi"] > 0 and 0 <= dual["loss_lte"] < 1  # 1 % each way on WiFi
    # LTE alone: one path, the connection's RTT is its
    assert lte["rtt_ms_wifi"] is None and lte["mptcp_rtt_ms"] == pytest.approx(lte["rtt_ms_lte"])

    for r in rows.values():
        # the subflows carried at least what the receiver read (the last sample follows its close)
        assert r["subflow_bytes"] >= r["bytes_received"] == r["volume_bytes"], r
        assert r["subflow_excess"] == pytest.approx(r["subflow_bytes"] / r["bytes_received"] - 1)
        assert isinstance(r["subflow_mismatch"], bool)
        # the row is what the run's own subflow series gives
        series = pq.read_table(root / "runs" / r["run_id"] / "timeseries" / "transfer_subflows.parquet").to_pylist()
        again = pair_path_stats([s for s in series if s["pair"] == r["pair"]], r["bytes_received"])
        assert {k: r[k] for k in again} == pytest.approx(again)
