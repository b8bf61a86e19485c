"""`radios: models`: a campaign's runs on the rig's own radio models (the per-frame 802.11 DCF
media and the TTI-scheduled LTE cell), end to end on the emulated rig."""

from __future__ import annotations

import json

import pytest

from fixtures.cli import run_rig

pytestmark = pytest.mark.emulated


def test_a_campaign_runs_on_the_dcf_and_tti_models(emulator, rig_prefix, tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text("name: m\nsetups: [I]\npairs: 2\nradios: models\nfactors: {volume: [2MB], homing: [dual, lte]}\n"
                 "limits: {max_lag_p99_ms: 500}\n")
    p = run_rig("campaign", "run", str(f), "--out", str(tmp_path / "out"), "--prefix", rig_prefix)
    assert p.returncode == 0, p.stderr[-2000:]
    (campaign,) = (tmp_path / "out").iterdir()
    for run in (campaign / "runs").iterdir():
        status = json.loads((run / "status.json").read_text())
        assert status["status"] == "ok", status["reason"]
        assert set(status["lag"]) == {"ap1", "ap2", "cell"}  # Setup I: AP1, AP2 and the cell
        pairs = json.loads((run / "pairs.json").read_text())
        assert all(pr["bytes_received"] == 2_000_000 for pr in pairs)
