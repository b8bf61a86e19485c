"""The studies' sections of `rig report` (rendered by a real headless Chromium) and their tables
in `rig export`, on campaign directories shaped like the studies' campaigns."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from rig.store.synthetic import write_campaign
from fixtures.chromium import PageImages, chromium
from fixtures.study_campaign import write_study_campaign
from PIL import Image

from analysis.studies import study_tables

RIG = str(Path(sys.executable).with_name("rig"))

# kind -> (sections the report must have, figures in them, tables next to them)
EXPECTED = {
    "long": ({"study-variability", "study-timeline"}, {"study-cv.png", "study-rtt.png", "study-traffic.png"},
             {"table-cv", "table-rtt", "table-traffic"}),
    "cut": ({"study-timeline"}, {"study-timeline-0.png"}, {"table-timeline-0"}),
    "sizes": ({"study-fct"}, {"study-fct.png"}, {"table-fct"}),
    "lossy": ({"study-benefit"}, {"study-benefit.png"}, {"table-benefit"}),
    "grid": ({"study-benefit"}, {"study-benefit.png", "study-benefit-goodput.png"}, {"table-benefit"}),
}
SECTIONS = {s for sections, _, _ in EXPECTED.values() for s in sections}


@pytest.mark.parametrize("kind", sorted(EXPECTED))
def test_report_draws_each_studys_figure_next_to_its_table(kind, tmp_path):
    campaign = write_study_campaign(tmp_path, kind)
    result = subprocess.run([RIG, "report", str(campaign)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    index = campaign / "report" / "index.html"
    dom = chromium(tmp_path, "--dump-dom", index.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    parsed = PageImages()
    parsed.feed(dom.stdout)
    sections, figures, tables = EXPECTED[kind]
    assert {i for i in parsed.ids if i.startswith("study-")} == sections
    shown = {i["src"] for i in parsed.images if "study-figure" in i.get("class", "")}
    assert figures <= shown
    assert tables <= parsed.ids
    for src in shown:
        with Image.open(index.parent / src) as png:
            assert png.format == "PNG" and png.width > 400
    # the seed 002 figures stay as they were
    assert any("share" in i.get("class", "") for i in parsed.images)


def test_numbers_in_the_tables(tmp_path):
    html = {}
    for kind in EXPECTED:
        campaign = write_study_campaign(tmp_path, kind)
        assert subprocess.run([RIG, "report", str(campaign)], timeout=120).returncode == 0
        html[kind] = (campaign / "report/index.html").read_text()
    # dual-homed: LTE 1 Mbit/s in every other second -> CV of 20 values 0/1 = 1.03
    assert "<td>dual</td><td>lte</td><td>2</td><td>0.50</td><td>1.03</td>" in html["long"]
    # the cut: restored at 20.00 s, back above half its 2 Mbit/s in the second (21, 22]
    assert "<td>10.00</td><td>20.00</td><td>2.00</td><td>2.00</td>" in html["cut"]
    # MPTCP 0.8 x and WiFi 1.0 x the base time at 1 MB: ratio 0.80
    assert "<td>1 MB</td><td>0.328</td><td>wifi</td><td>0.410</td><td>0.80</td>" in html["sizes"]
    # loss-aware 11 and 9.9 Mbit/s against C = 8 (WiFi), 10 (LTE): Ben 0.125 and -0.01
    assert "<td>loss-aware</td><td>2</td><td>0.06</td><td>-0.01</td><td>0.12</td>" in html["lossy"]
    # seed 003's grid, a row per cell and policy: at 20 Mbit/s and 1 % G 9 against C 8 (WiFi), 18 (LTE)
    assert ("<td>wifi</td><td>1</td><td>20</td><td>none</td><td>1</td><td>-0.50</td><td>-0.50</td><td>-0.50</td>"
            "<td>9.00</td><td>8.00</td><td>18.00</td>") in html["grid"]
    cells = re.findall(r"<tr><td>wifi</td><td>([\d.]+)</td><td>(\d+)</td><td>([a-z-]+)</td>", html["grid"])
    assert cells == [(loss, rate, policy) for loss in ("0.1", "1") for rate in ("10", "20")
                     for policy in ("loss-aware", "none")]  # in numeric order


def test_a_default_campaigns_report_has_no_study_sections(tmp_path):
    campaign = write_campaign(tmp_path, name="default", ccs=("cubic",), connections=(1,),
                              setups=("I", "II", "III"), homings=("dual", "lte", "wifi"), repetitions=1)
    assert study_tables(campaign.path) == {}
    assert subprocess.run([RIG, "report", str(campaign.path)], timeout=120).returncode == 0
    html = (campaign.path / "report/index.html").read_text()
    assert 'id="study-' not in html and "study-figure" not in html


def test_export_carries_the_study_tables_with_descriptions(tmp_path):
    campaign = write_study_campaign(tmp_path, "cut")
    bundle = tmp_path / "bundle"
    result = subprocess.run([RIG, "export", str(campaign), "--to", str(bundle)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    recovery = pq.read_table(bundle / "data/metric_recovery.parquet").to_pylist()
    assert [round(r["recovery_s"], 2) for r in recovery] == [2.0]
    package = json.loads((bundle / "datapackage.json").read_text())
    resources = {r["name"]: r for r in package["resources"]}
    assert {"metric_recovery", "metric_subflow_timeline", "metric_path_events"} <= set(resources)
    fields = {f["name"]: f for f in resources["metric_recovery"]["schema"]["fields"]}
    assert fields["recovery_s"]["type"] == "number" and "restore" in fields["up_at_s"]["description"]
    assert subprocess.run([RIG, "export", "--verify", str(bundle)], timeout=60).returncode == 0


def test_a_flow_size_sweep_over_a_lossy_link_has_no_benefit_table(tmp_path):
    """Ben(M) is over the goodput of time runs (seed 003); a volume sweep on a lossy WiFi (seed 001) is FCT only."""
    campaign = write_study_campaign(tmp_path, "sizes")
    (campaign / "campaign.yaml").write_text("name: seed-sizes\nimpairments:\n  wifi: {loss_pct: 1, direction: both}\n")
    tables = study_tables(campaign)
    assert "metric_fct" in tables and "metric_benefit" not in tables


def test_the_grids_benefit_table_has_each_cells_rate_and_loss(tmp_path):
    """What `rig export` writes as data/metric_benefit.parquet; the runs' levels come from their
    params.json, or from plan.json where there is none (an export has no runs/)."""
    from analysis.studies import study_arrow_tables

    campaign = write_study_campaign(tmp_path, "grid")
    table = study_arrow_tables(campaign)["metric_benefit"]
    assert {"lossy_path", "loss_pct", "rate_bps", "benefit"} <= set(table.column_names)
    assert "cell" in table.schema.field("rate_bps").metadata[b"description"].decode()
    rows = table.to_pylist()
    assert {(r["rate_bps"], r["loss_pct"]) for r in rows} == {(rate, loss) for rate in (10e6, 20e6) for loss in (0.1, 1.0)}
    assert sorted({round(r["benefit"], 3) for r in rows}) == [-0.5, 0.0, 0.375]
    for f in campaign.glob("runs/*/params.json"):
        f.unlink()
    assert study_arrow_tables(campaign)["metric_benefit"].to_pylist() == rows
