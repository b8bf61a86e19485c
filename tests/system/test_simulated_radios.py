"""Campaigns on the simulated radios: ns-3's LTE cell (LENA) and 802.11 BSSs instead of links."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from fixtures.cli import run_rig

pytestmark = pytest.mark.emulated

CAMPAIGN = """
name: sim
setups: [I]
pairs: 1
radios: simulated
factors: {volume: [12MB], homing: [dual]}
limits: {run_timeout_s: 60, max_lag_p99_ms: 200}
"""


def test_campaign_on_simulated_radios_records_radio_metrics(tmp_path, emulator, rig_prefix):
    f = tmp_path / "c.yaml"
    f.write_text(CAMPAIGN)
    out = tmp_path / "results"
    run_rig("campaign", "run", str(f), "--out", str(out), "--prefix", rig_prefix, check=True)
    root = next(out.glob("sim-*"))
    [row] = pq.read_table(root / "runs.parquet").to_pylist()
    assert row["status"] == "ok" and row["bytes_lte"] > 0 and row["bytes_wifi"] > 0, row
    radio = pq.read_table(next(root.glob("runs/*/timeseries/radio.parquet"))).to_pylist()
    ue = [r for r in radio if (r["host"], r["interface"]) == ("s1", "lte0")]
    sta = [r for r in radio if (r["host"], r["interface"]) == ("s1", "wlan0")]
    assert ue and all(r["ul_sinr_db"] > 0 for r in ue) and any((r["ul_tb_bits"] or 0) > 0 for r in ue)
    assert sta and any(r["up_bytes"] > 0 for r in sta) and all(r["data_mode"] for r in sta)
