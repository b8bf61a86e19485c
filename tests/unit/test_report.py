"""The campaign report, rendered by a real headless Chromium; and its statistics."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rig.store.synthetic import write_campaign
from fixtures.chromium import PageImages, chromium
from PIL import Image

from analysis.factors import slices, varied
from analysis.load import load_runs
from analysis.stats import mean_ci, t975

RIG = str(Path(sys.executable).with_name("rig"))
LTE_RGB, WIFI_RGB = (0x1F, 0x77, 0xB4), (0xFF, 0x7F, 0x0E)  # the share plots' colours


@pytest.fixture(scope="module")
def default_like(tmp_path_factory):
    """A campaign shaped like campaigns/default.yaml: Setups I-III x homing dual/lte/wifi, Cubic."""
    root = tmp_path_factory.mktemp("report")
    campaign = write_campaign(root, name="default", ccs=("cubic",), connections=(1,),
                              setups=("I", "II", "III"), homings=("dual", "lte", "wifi"), repetitions=2)
    result = subprocess.run([RIG, "report", str(campaign.path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return campaign, campaign.path / "report" / "index.html"


def test_report_renders_in_chromium_with_share_figures(default_like, tmp_path):
    campaign, index = default_like
    dom = chromium(tmp_path, "--dump-dom", index.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    parsed = PageImages()
    parsed.feed(dom.stdout)
    share = [i for i in parsed.images if "share" in i.get("class", "")]
    goodput = [i for i in parsed.images if "goodput" in i.get("class", "")]
    # the two varied factors of the default campaign: homing and setup
    assert {i["src"] for i in share} == {"share-homing.png", "share-setup.png"}
    assert {i["src"] for i in goodput} == {"goodput-homing.png", "goodput-setup.png"}
    for img in share + goodput:
        with Image.open(index.parent / img["src"]) as png:
            assert png.format == "PNG" and png.width > 400
    assert {"factor-homing", "factor-setup", "problem-table", "summary-table"} <= parsed.ids
    for run_id, (status, reason) in campaign.bad_runs.items():
        assert run_id in dom.stdout and reason in dom.stdout

    # What a person sees: the screenshot holds the LTE and WiFi colours of the stacked bars.
    shot = tmp_path / "report.png"
    taken = chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,1400", index.as_uri())
    assert taken.returncode == 0 and shot.is_file(), taken.stderr[-2000:]
    with Image.open(shot) as img:
        colors = img.convert("RGB").getcolors(maxcolors=1 << 20)
    counts = {rgb: n for n, rgb in colors}
    assert counts.get(LTE_RGB, 0) > 5000 and counts.get(WIFI_RGB, 0) > 5000


def test_report_of_a_sweep_has_one_bar_per_cc(tmp_path):
    campaign = write_campaign(tmp_path, repetitions=2)  # cubic/lia/olia x 1/5/10 connections
    rows = load_runs(campaign.path)
    assert varied(rows) == ["connections"]
    [(fixed, panel)] = slices(rows, "connections")
    assert fixed == {} and len(panel) == len(rows)
    assert subprocess.run([RIG, "report", str(campaign.path)], timeout=120).returncode == 0
    html = (campaign.path / "report/index.html").read_text()
    assert 'src="share-connections.png"' in html and 'src="goodput-connections.png"' in html
    assert "± " in html  # confidence intervals in the per-combination table


def test_report_refuses_a_directory_without_runs(tmp_path):
    result = subprocess.run([RIG, "report", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "runs.parquet: missing" in result.stderr
    assert not (tmp_path / "report").exists()


def test_confidence_interval_matches_students_t():
    assert t975(1) == 12.706 and t975(29) == 2.045
    assert abs(t975(49) - 2.0096) < 0.002  # 50 repetitions, as in seed 002
    assert abs(t975(10_000) - 1.960) < 0.001
    ci = mean_ci([10.0, 12.0, 14.0])  # sd 2, n 3: 4.303 * 2 / sqrt(3)
    assert ci.mean == 12.0 and abs(ci.half_width - 4.303 * 2 / math.sqrt(3)) < 1e-9
    assert math.isnan(mean_ci([5.0]).half_width) and mean_ci([]).n == 0


def test_invalid_runs_are_plotted_only_on_request_and_marked(tmp_path):
    campaign = write_campaign(tmp_path, ccs=("olia",), connections=(1, 5), repetitions=1)
    # A loaded host: every run completed but the emulator lagged.
    runs = pq.read_table(campaign.path / "runs.parquet")
    runs = runs.set_column(runs.column_names.index("status"), "status", pa.array(["invalid"] * runs.num_rows))
    pq.write_table(runs, campaign.path / "runs.parquet")
    for status_file in campaign.path.glob("runs/*/status.json"):
        status = json.loads(status_file.read_text())
        status_file.write_text(json.dumps({**status, "status": "invalid", "reason": "emulator lagged", "lag_retries": 2}))
    assert subprocess.run([RIG, "report", str(campaign.path)], timeout=120).returncode == 0
    html = (campaign.path / "report/index.html").read_text()
    assert "<img" not in html and "--include-invalid" in html
    runs_recorded = len(list(campaign.path.glob("runs/*/status.json")))
    assert f"{2 * runs_recorded} attempts were run again because the emulator" in html
    assert subprocess.run([RIG, "report", "--include-invalid", str(campaign.path)], timeout=120).returncode == 0
    html = (campaign.path / "report/index.html").read_text()
    assert 'id="invalid-warning"' in html and 'src="share-connections.png"' in html
