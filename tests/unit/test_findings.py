"""`rig findings`: claims as data (campaigns/findings/*.yaml) checked on synthetic campaign
directories whose answers are known: held, not held and inconclusive each shown, invalid runs
never counted, verdicts the same on every call, the Markdown for docs/studies.md."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import numpy as np
import pytest

from fixtures.cli import REPO
from rig.findings.synthetic import run, write_findings_campaign
from fixtures.study_campaign import write_study_campaign
from rig.core.errors import InputError
from rig.findings.data import CampaignData
from rig.findings.evaluate import HELD, INCONCLUSIVE, NOT_EVALUATED, NOT_HELD, evaluate
from rig.findings.metrics import METRICS
from rig.findings.model import FACTORS, campaign_levels, conditions, load_findings, parse_findings, parse_level, same, shipped
from rig.findings.render import arrow_table, markdown
from rig.model.campaign import load_campaign

CLAIMS = """
study: "002"
title: test
min_runs: 5
claims:
  - {id: cubic-over-lia, quote: q, source: s, campaigns: [seed002-standards], metric: goodput_bps, where: {homing: dual},
     test: difference, a: {cc: cubic}, b: {cc: lia}, expect: {direction: greater}}
  - {id: lia-over-cubic, quote: q, source: s, campaigns: [seed002-standards], metric: goodput_bps, where: {homing: dual},
     test: difference, a: {cc: lia}, b: {cc: cubic}, expect: {direction: greater}}
  - {id: olia-over-lia, quote: q, source: s, campaigns: [seed002-standards], metric: goodput_bps, where: {homing: dual},
     test: difference, a: {cc: olia}, b: {cc: lia}, expect: {direction: greater}}
  - {id: too-few, quote: q, source: s, campaigns: [seed002-standards], metric: goodput_bps, where: {homing: dual},
     test: difference, a: {cc: cubic}, b: {cc: lia}, expect: {direction: greater}, min_runs: 50}
  - {id: dual-over-best-single, quote: q, source: s, campaigns: [seed002-homing-buffer], metric: goodput_bps, where: {cc: lia},
     test: ratio, a: {homing: dual}, b: {homing: [lte, wifi]}, best: max, expect: {above: 1.0}, paper: 1.5}
  - {id: lia-rate, quote: q, source: s, campaigns: [seed002-standards], metric: goodput_bps, where: {homing: dual, cc: lia},
     test: mean, expect: {near: 8.0e6, tolerance: 0.1}, paper: 8.5e6}
  - {id: wifi-share, quote: q, source: s, campaigns: [seed002-standards], metric: lte_share, where: {homing: dual},
     for_each: [cc], test: mean, expect: {below: 0.5}}
  - {id: conn-trend, quote: q, source: s, campaigns: [seed002-connections], metric: goodput_bps, test: trend,
     factor: connections, expect: {direction: increasing}}
"""


def _homing_runs(reps: int = 10, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    runs = []
    for rep in range(reps):
        for cc, g in (("cubic", 10e6), ("lia", 8e6), ("olia", 8e6)):
            runs.append(run(g * (1 + 0.05 * rng.standard_normal()), cc=cc, homing="dual", lte_share=0.3))
        for homing, g in (("lte", 3e6), ("wifi", 5e6)):
            runs.append(run(g * (1 + 0.05 * rng.standard_normal()), cc="lia", homing=homing, lte_share=1.0 if homing == "lte" else 0.0))
    return runs


def _dual_runs(reps: int = 10, seed: int = 0) -> list[dict]:
    """The dual-homed runs, of cubic, lia and olia (seed002-standards' conditions)."""
    return [r for r in _homing_runs(reps, seed) if r["homing"] == "dual"]


def _lia_runs() -> list[dict]:
    """lia's runs, dual- and single-homed (seed002-homing-buffer's conditions)."""
    return [r for r in _homing_runs() if r["cc"] == "lia"]


@pytest.fixture
def findings(tmp_path):
    return parse_findings(CLAIMS, "test.yaml")


def _verdicts(findings, dirs) -> dict[str, list]:
    out: dict[str, list] = {}
    for v in evaluate([("test.yaml", findings)], CampaignData.read(dirs)):
        out.setdefault(v.claim.id, []).append(v)
    return out


def test_held_not_held_inconclusive(tmp_path, findings):
    d = write_findings_campaign(tmp_path, "seed002-standards-emulated", _dual_runs())
    h = write_findings_campaign(tmp_path, "seed002-homing-buffer-emulated", _lia_runs())
    v = _verdicts(findings, [d, h])
    assert v["cubic-over-lia"][0].verdict == HELD
    assert v["cubic-over-lia"][0].low > 0 and v["cubic-over-lia"][0].n == {"a": 10, "b": 10}
    assert 1.5e6 < v["cubic-over-lia"][0].effect < 2.5e6
    assert v["lia-over-cubic"][0].verdict == NOT_HELD
    assert v["olia-over-lia"][0].verdict == INCONCLUSIVE and "includes 0" in v["olia-over-lia"][0].reason
    assert v["too-few"][0].verdict == INCONCLUSIVE and "too few valid runs (10 < 50)" in v["too-few"][0].reason
    best = v["dual-over-best-single"][0]
    assert best.verdict == HELD and 1.5 < best.effect < 1.7 and best.n == {"a": 10, "b lte": 10, "b wifi": 10}
    rate = v["lia-rate"][0]
    assert rate.verdict == HELD and rate.rel_error == pytest.approx((rate.effect - 8.5e6) / 8.5e6)
    assert [(x.group, x.verdict) for x in v["wifi-share"]] == [("cc cubic", HELD), ("cc lia", HELD), ("cc olia", HELD)]
    assert v["conn-trend"][0].verdict == NOT_EVALUATED  # no seed002-connections runs given


def test_invalid_runs_are_never_evidence(tmp_path, findings):
    runs = _dual_runs()
    # invalid and failed runs that would reverse cubic vs lia; a run with one invalid pair of two
    runs += [run(1e3, cc="cubic", homing="dual", status=s) for s in ("invalid", "failed") for _ in range(20)]
    runs += [run(1e9, cc="lia", homing="dual", status="invalid") for _ in range(20)]
    d = write_findings_campaign(tmp_path, "seed002-standards", runs)
    v = _verdicts(findings, [d])["cubic-over-lia"][0]
    assert v.verdict == HELD and v.n == {"a": 10, "b": 10}


def test_a_run_with_one_invalid_pair_is_left_out(tmp_path, findings):
    import pyarrow.parquet as pq

    d = write_findings_campaign(tmp_path, "seed002-standards", [{**r, "pairs": 2} for r in _dual_runs()])
    t = pq.read_table(d / "runs.parquet").to_pylist()
    t[0]["status"] = "invalid"  # the first run's first pair only
    import pyarrow as pa
    pq.write_table(pa.Table.from_pylist(t, schema=pq.read_schema(d / "runs.parquet")), d / "runs.parquet")
    assert _verdicts(findings, [d])["cubic-over-lia"][0].n == {"a": 9, "b": 10}


def test_sessions_pool_and_verdicts_are_deterministic(tmp_path, findings):
    a = write_findings_campaign(tmp_path / "a", "seed002-standards", _dual_runs(3, seed=1))
    b = write_findings_campaign(tmp_path / "b", "seed002-standards", _dual_runs(3, seed=2))
    first, again = _verdicts(findings, [a, b]), _verdicts(findings, [a, b])
    v = first["cubic-over-lia"][0]
    assert v.n == {"a": 6, "b": 6} and v.verdict == HELD
    assert (v.effect, v.low, v.high) == (again["cubic-over-lia"][0].effect, again["cubic-over-lia"][0].low,
                                         again["cubic-over-lia"][0].high)


def test_trend_over_levels(tmp_path, findings):
    rng = np.random.default_rng(3)
    runs = [run(g * 1e6 * (1 + 0.05 * rng.standard_normal()), connections=c)
            for c, g in ((1, 4), (5, 6), (10, 8)) for _ in range(8)]
    d = write_findings_campaign(tmp_path, "seed002-connections", runs)
    v = _verdicts(findings, [d])["conn-trend"][0]
    assert v.verdict == HELD and v.effect > 0.8 and v.n == {"1": 8, "5": 8, "10": 8}
    falling = [run(g * 1e6, connections=c) for c, g in ((1, 8), (5, 6), (10, 4)) for _ in range(8)]
    d2 = write_findings_campaign(tmp_path / "2", "seed002-connections", falling)
    assert _verdicts(findings, [d2])["conn-trend"][0].verdict == NOT_HELD


def test_a_claim_over_a_figures_files_has_a_verdict_on_each_and_their_twins(tmp_path):
    """Fig. 5's panels are two files (802.11n 5 GHz, 802.11g): a claim naming both is checked
    against each file, evaluated on each campaign given or its -emulated twin, never pooled."""
    text = """
study: "002"
title: t
claims:
  - {id: rises, quote: q, source: s, campaigns: [seed002-connections, seed002-connections-g], metric: goodput_bps,
     for_each: [wifi_standard], test: trend, factor: connections, levels: [1, 5], expect: {direction: increasing}}
"""
    rising = [run(g * 1e6, connections=c, setup="II", wifi_standard="n5") for c, g in ((1, 4), (5, 6), (10, 8))
              for g in (g, g * 1.01, g * 0.99, g * 1.02, g * 0.98)]
    falling = [run(g * 1e6, connections=c, setup="II", wifi_standard="g") for c, g in ((1, 8), (5, 6), (10, 4))
               for g in (g, g * 1.01, g * 0.99, g * 1.02, g * 0.98)]
    n5 = write_findings_campaign(tmp_path, "seed002-connections-emulated", rising)
    g = write_findings_campaign(tmp_path, "seed002-connections-g", falling)
    v = evaluate([("t", parse_findings(text, "t.yaml"))], CampaignData.read([n5, g]))
    assert sorted((x.campaign, x.group, x.verdict) for x in v) == [
        ("seed002-connections-emulated", "wifi_standard n5", HELD), ("seed002-connections-g", "wifi_standard g", NOT_HELD)]
    assert all(x.n == {"1": 5, "5": 5} for x in v)
    with pytest.raises(InputError) as e:  # a level of one of the files only: that claim names the other wrongly
        parse_findings(text.replace("for_each: [wifi_standard]", "where: {wifi_standard: g}"), "t.yaml")
    assert e.value.field == "claims[0].where.wifi_standard" and "seed002-connections has no level 'g'" in str(e.value)


def test_every_seed002_campaign_file_has_claims():
    """Each figure's file (campaigns/seed002-*.yaml, twins aside) is named by a claim of seed002.yaml."""
    named = {name for c in load_findings(REPO / "campaigns/findings/seed002.yaml").claims for name in c.campaigns}
    files = {p.stem for p in (REPO / "campaigns").glob("seed002-*.yaml") if not p.stem.endswith("-emulated")}
    assert len(files) == 12 and files == named

def test_grid_levels_come_from_params(tmp_path):
    text = """
study: "003"
title: t
min_runs: 3
claims:
  - {id: g, quote: q, source: s, campaigns: [seed003-wifi-loss], metric: goodput_bps, where: {homing: dual},
     test: trend, factor: wifi_loss_pct, levels: [0.1, 1, 10], expect: {direction: decreasing}}
"""
    runs = [run(g, homing="dual", volume_bytes=None, duration_s=20.0, wifi_loss_pct=loss, link_rate_bps=10e6, cc="balia")
            for loss, g in ((0.1, 9e6), (1, 6e6), (10, 2e6)) for k in range(4) for g in [g * (1 + 0.01 * k)]]
    d = write_findings_campaign(tmp_path, "seed003-wifi-loss-emulated", runs)
    v = evaluate([("t", parse_findings(text, "t.yaml"))], CampaignData.read([d]))[0]
    assert v.verdict == HELD and v.n == {"0.1": 4, "1": 4, "10": 4}


def test_study_metrics_from_time_series(tmp_path):
    """seed 000's claims on the studies' fixture (long flows: LTE 1 Mbit/s alone, in odd seconds only under MPTCP)."""
    d = write_study_campaign(tmp_path, "long")
    meta = json.loads((d / "metadata.json").read_text())
    (d / "metadata.json").write_text(json.dumps({**meta, "campaign": "seed000-location-b-emulated"}))
    f = load_findings(REPO / "campaigns/findings/seed000.yaml").model_copy(update={"min_runs": 2})
    v = {x.claim.id: x for x in evaluate([("seed000", f)], CampaignData.read([d]))}
    assert v["b-cv-rises"].verdict == HELD and v["b-cv-rises"].n == {"a": 2, "b": 2}
    assert v["b-better-path-carries-more"].verdict == HELD and v["b-better-path-carries-more"].effect == pytest.approx(1.0)
    assert v["b-lte-in-mptcp"].effect == pytest.approx(0.5, rel=0.05) and v["b-lte-in-mptcp"].verdict == NOT_HELD
    assert v["b-rtt-above-wifi"].verdict == HELD
    assert v["a-cellular-rate"].verdict == NOT_EVALUATED  # location A's runs were not given


def test_every_shipped_findings_file_names_real_campaigns_metrics_and_levels():
    files = shipped()
    assert [p.stem for p in files] == ["seed000", "seed001", "seed002", "seed003", "seed004"]
    for path in files:
        findings = load_findings(path)  # checks the same again, with one line per problem
        assert path.stem == f"seed{findings.study}"
        for claim in findings.claims:
            assert claim.metric in METRICS, (path, claim.id)
            for name in claim.campaigns:
                campaign = load_campaign(REPO / "campaigns" / f"{name}.yaml")
                used = [(f, lv) for cond in conditions(claim).values() for f, lv in cond.items()]
                used += [(f, []) for f in claim.for_each] + ([(claim.factor, claim.levels)] if claim.factor else [])
                for factor, levels in used:
                    known = campaign_levels(campaign, factor)
                    assert known is not None, (path, claim.id, factor)
                    for level in levels if isinstance(levels, list) else [levels]:
                        assert any(same(parse_level(factor, level), k) for k in known), (path, claim.id, factor, level)
                assert factor in FACTORS


@pytest.mark.parametrize("text, field", [
    ("claims: []", "study"),
    ('study: "002"\ntitle: t\nclaims: [{id: x, quote: q, source: s, campaigns: [seed002-homing], metric: goodput_bps, '
     'test: mean, expect: {above: 1}, colour: red}]', "claims[0].colour"),
    ('study: "002"\ntitle: t\nclaims: [{id: x, quote: q, source: s, campaigns: [seed002-homing], metric: speed, '
     'test: mean, expect: {above: 1}}]', "claims[0].metric"),
    ('study: "002"\ntitle: t\nclaims: [{id: x, quote: q, source: s, campaigns: [seed002-homing], metric: goodput_bps, '
     'where: {cc: reno}, test: mean, expect: {above: 1}}]', "claims[0].where.cc"),
    ('study: "002"\ntitle: t\nclaims: [{id: x, quote: q, source: s, campaigns: [seed009-x], metric: goodput_bps, '
     'test: mean, expect: {above: 1}}]', "claims[0].campaigns[0]"),
    ('study: "002"\ntitle: t\nclaims: [{id: x, quote: q, source: s, campaigns: [seed002-homing], metric: goodput_bps, '
     'test: difference, a: {cc: lia}, expect: {direction: greater}}]', "claims[0]"),
])
def test_a_bad_field_is_named(text, field):
    with pytest.raises(InputError) as e:
        parse_findings(text, "bad.yaml")
    assert e.value.source == "bad.yaml" and e.value.field == field


def test_markdown_says_how_to_evaluate_and_the_command(tmp_path, findings):
    text = markdown(evaluate([("t", findings)], {}), {"002": "test"}, ["--markdown"])
    assert text.startswith("Generated by `rig findings --markdown`")
    assert "Not yet evaluated for any claim: run `rig campaign run campaigns/seed002-standards-emulated.yaml --out results`" in text
    d = write_findings_campaign(tmp_path, "seed002-standards", _dual_runs())
    v = evaluate([("t", findings)], CampaignData.read([d]))
    text = markdown(v, {"002": "test"}, [str(d), "--markdown"])
    assert "| cubic-over-lia |" in text and "**held**" in text and "Not yet evaluated for 2 of the claims (dual-over-best-single, conn-trend)" in text
    table = arrow_table(v)
    assert table.num_rows == len([x for x in v if x.verdict != NOT_EVALUATED])
    assert table.schema.field("verdict").metadata[b"description"]


def test_cli_table_and_update(tmp_path):
    d = write_findings_campaign(tmp_path, "seed004-throughput", [run(2.7e6, homing="lte", volume_bytes=None, duration_s=25.0)
                                                                 for _ in range(6)])
    env = {"PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "rig", "findings", str(d), "--findings", "campaigns/findings/seed004.yaml"],
                         cwd=REPO, capture_output=True, text=True, env=env, check=True).stdout
    assert "single-tcp-rate" in out and "held" in out
    doc = tmp_path / "doc.md"
    doc.write_text("before\n<!-- findings:begin -->\nold\n<!-- findings:end -->\nafter\n")
    subprocess.run([sys.executable, "-m", "rig", "findings", str(d), "--findings", "campaigns/findings/seed004.yaml",
                    "--update", str(doc)], cwd=REPO, capture_output=True, text=True, env=env, check=True)
    text = doc.read_text()
    assert text.startswith("before\n<!-- findings:begin -->\nGenerated by `rig findings ") and "old" not in text
    assert text.endswith("<!-- findings:end -->\nafter\n") and "| single-tcp-rate |" in text


def test_an_update_keeps_the_rows_of_campaigns_not_given(tmp_path):
    """Twins run on different days add up: each --update writes the campaigns given and keeps the
    others' rows with their directories, so the block's command, given every directory it names,
    writes the same block; a campaign given again replaces its rows."""
    claims = tmp_path / "claims.yaml"
    claims.write_text(CLAIMS)
    a = write_findings_campaign(tmp_path, "seed002-standards", _dual_runs())
    b = write_findings_campaign(tmp_path, "seed002-homing-buffer", _lia_runs())

    def update(doc, *dirs):
        doc.parent.mkdir(exist_ok=True)
        if not doc.exists():
            doc.write_text("before\n<!-- findings:begin -->\n<!-- findings:end -->\nafter\n")
        done = subprocess.run([sys.executable, "-m", "rig", "findings", *map(str, dirs), "--findings", str(claims),
                               "--update", str(doc)], cwd=REPO, capture_output=True, text=True, env={"PYTHONPATH": str(REPO)},
                              check=True)
        said.append(done.stderr)
        return doc.read_text()

    said: list[str] = []
    one_by_one = (update(tmp_path / "doc.md", a), update(tmp_path / "doc.md", b))[1]
    assert said[1] == "findings: kept as written the rows of 1 campaigns not given: seed002-standards\n"
    assert one_by_one == update(tmp_path / "docs" / "doc.md", a, b).replace("/docs/doc.md", "/doc.md")
    assert f"`rig findings {a} {b} --findings" in one_by_one and "Not yet evaluated" not in one_by_one.split("conn-trend")[1]
    import shutil

    shutil.rmtree(a)  # gone from this host: its rows stay, named by its directory
    assert update(tmp_path / "doc.md", b) == one_by_one
    again = write_findings_campaign(tmp_path, "seed002-standards", [{**r, "goodput_bps": r["goodput_bps"] * (0.5 if r["cc"] == "cubic" else 1)}
                                                                     for r in _dual_runs()], campaign_id="20261102T010000Z")
    text = update(tmp_path / "doc.md", again)
    assert f"`rig findings {b} {again} --findings" in text and str(a) not in text
    line = next(x for x in text.splitlines() if x.startswith("| cubic-over-lia |"))
    assert "**not held**" in line and text.count("| cubic-over-lia |") == 1


def test_a_kept_row_leaves_when_its_claim_reads_otherwise(tmp_path, findings):
    from rig.findings.block import kept_from

    d = write_findings_campaign(tmp_path, "seed002-standards", _dual_runs())
    first = markdown(evaluate([("t", findings)], CampaignData.read([d])), {"002": "test"}, [str(d), "--markdown"])
    reworded = parse_findings(CLAIMS.replace("id: lia-rate, quote: q", "id: lia-rate, quote: other words"), "test.yaml")
    kept = kept_from(first)
    assert kept.dirs == {"seed002-standards": [str(d)]}
    text = markdown(evaluate([("t", reworded)], {}), {"002": "test"}, [str(d), "--markdown"], kept)
    assert "| cubic-over-lia |" in text and "| lia-rate |" not in text
    assert "Not yet evaluated for 3 of the claims (dual-over-best-single, lia-rate, conn-trend)" in text


def test_the_report_and_the_export_carry_the_findings(tmp_path):
    from rig.export.bundle import export_campaign
    from rig.report.page import write_report

    d = write_findings_campaign(tmp_path, "seed004-throughput-emulated",
                                [run(2.7e6, homing=h, volume_bytes=None, duration_s=25.0) for h in ("lte", "dual") for _ in range(6)]
                                + [run(9e9, homing="lte", volume_bytes=None, duration_s=25.0, status="invalid")])
    html = write_report(d).read_text()
    assert 'id="findings-table"' in html and "single-tcp-rate" in html and "campaigns/findings/seed004.yaml" in html
    out = export_campaign(d, tmp_path / "export")
    import pyarrow.parquet as pq
    table = pq.read_table(out / "data/findings.parquet").to_pylist()
    rate = next(r for r in table if r["claim"] == "single-tcp-rate")
    assert rate["verdict"] == HELD and rate["unit"] == "Mbit/s" and rate["effect"] == pytest.approx(2.7)
    assert json.loads(rate["n"]) == {"runs": 6}
    package = json.loads((out / "datapackage.json").read_text())
    resource = next(r for r in package["resources"] if r["name"] == "findings")
    assert any(f["name"] == "verdict" and f.get("description") for f in resource["schema"]["fields"])


def test_the_report_has_no_findings_section_for_other_campaigns(tmp_path):
    from rig.report.page import write_report

    d = write_findings_campaign(tmp_path, "my-own-campaign", [run(2.7e6) for _ in range(3)])
    assert 'id="findings-table"' not in write_report(d).read_text()


def test_a_planned_level_without_valid_runs_keeps_its_row(tmp_path, findings):
    runs = [r if r["cc"] != "olia" else {**r, "status": "invalid"} for r in _dual_runs()]
    d = write_findings_campaign(tmp_path, "seed002-standards", runs)
    share = _verdicts(findings, [d])["wifi-share"]
    assert [(x.group, x.verdict) for x in share] == [("cc cubic", HELD), ("cc lia", HELD), ("cc olia", INCONCLUSIVE)]
    assert share[2].reason == "too few valid runs (0 < 5)"


def test_the_docs_tables_are_what_their_command_writes():
    """docs/studies.md's block between the findings lines is rig findings' output: written again
    with none of its directories at hand, every row kept as written (rig.findings.block), it
    comes out the same. A hand edit, or a claim changed in its findings file since its rows were
    written, shows here."""
    from rig.findings.block import BEGIN, END, kept_from

    text = (REPO / "docs/studies.md").read_text()
    block = text.split(BEGIN, 1)[1].split(END, 1)[0]
    command = block.split("`", 2)[1]
    assert command.startswith("rig findings ") and command.endswith("--update docs/studies.md")
    loaded = [(str(f), load_findings(f)) for f in shipped()]
    kept = kept_from(block)
    argv = [*kept.directories(), "--update", "docs/studies.md"]
    assert command == shlex.join(["rig", "findings", *argv])  # every directory it names holds rows
    expected = markdown(evaluate(loaded, {}), {f.study: f.title for _, f in loaded}, argv, kept)
    assert block == f"\n{expected}\n"
