"""Expansion: full matrix x repetitions, blocks grouped, shuffled inside blocks, deterministic ids."""

from __future__ import annotations

from fixtures.cli import run_rig
from rig.campaign.model import parse_campaign
from rig.campaign.plan import expand

TEXT = """
name: t
setups: [I, II, III]
repetitions: 3
seed: 11
blocking: [setup]
factors:
  cc: [cubic, reno]
  connections: [1, 5]
  homing: [dual, wifi]
"""


def test_full_matrix_and_unique_ids():
    plan = expand(parse_campaign(TEXT, "t"))
    assert len(plan.runs) == 3 * 2 * 2 * 2 * 3
    assert len({r.run_id for r in plan.runs}) == len(plan.runs)
    assert [r.index for r in plan.runs] == list(range(len(plan.runs)))


def test_blocks_are_contiguous_and_in_listed_order():
    plan = expand(parse_campaign(TEXT, "t"))
    setups = [r.setup for r in plan.runs]
    assert setups == sorted(setups, key=["I", "II", "III"].index)
    assert {r.block for r in plan.runs} == {"I", "II", "III"}


def test_deterministic_and_shuffled_within_blocks():
    a = expand(parse_campaign(TEXT, "t"))
    b = expand(parse_campaign(TEXT, "t"))
    assert [r.run_id for r in a.runs] == [r.run_id for r in b.runs] and a.digest == b.digest
    block = [r for r in a.runs if r.setup == "I"]
    assert [(r.cc, r.connections, r.homing, r.repetition) for r in block] != sorted(
        (r.cc, r.connections, r.homing, r.repetition) for r in block)
    other_seed = expand(parse_campaign(TEXT.replace("seed: 11", "seed: 12"), "t"))
    assert [r.run_id for r in other_seed.runs] != [r.run_id for r in a.runs]
    assert {r.run_id for r in other_seed.runs} == {r.run_id for r in a.runs}


def test_plan_cli_prints_runs_and_estimate(tmp_path):
    f = tmp_path / "t.yaml"
    f.write_text(TEXT)
    p = run_rig("campaign", "plan", str(f), check=True)
    assert "72 runs" in p.stdout and "estimated duration" in p.stdout
    assert p.stdout.count("-cubic-") + p.stdout.count("-reno-") == 72


def test_runs_are_ordinary_runs_and_the_estimate_is_per_run():
    from dataclasses import asdict

    from rig.campaign.estimate import plan_seconds, run_estimates, run_seconds
    from rig.campaign.plan import Run

    plan = expand(parse_campaign(TEXT, "t"))
    for r in plan.runs:
        # the optional fields at their defaults are left out, so earlier plans keep their digests
        assert r.to_dict() == {k: v for k, v in asdict(r).items() if k not in ("duration_s", "backup", "policy")}
        assert Run(**r.to_dict()) == r and hash(Run(**r.to_dict())) == hash(r)
    lte = plan.campaign.lte_profile
    assert run_estimates(plan) == [run_seconds(r, lte) for r in plan.runs]
    assert plan_seconds(plan) == plan_seconds(plan, run_estimates(plan)) > 0


def test_a_profile_is_parsed_once_and_again_after_an_edit(tmp_path):
    import os
    import shutil

    from rig.profiles import RADIO_CONFIGS, wifi_profile

    shutil.copytree(RADIO_CONFIGS / "wifi", tmp_path / "wifi")
    first = wifi_profile("n5", root=tmp_path)
    assert wifi_profile("n5", root=tmp_path) is first  # cached
    path = tmp_path / "wifi" / "n5.yaml"
    path.write_text(path.read_text().replace(f"channel: {first.channel}", "channel: 40", 1))
    os.utime(path, ns=(0, path.stat().st_mtime_ns + 1_000_000_000))
    assert wifi_profile("n5", root=tmp_path).channel == 40


def test_time_based_runs_and_path_policies_are_factors():
    text = """
name: timed
setups: [II]
factors:
  duration: [20s, 2min]
  backup: [none, lte]
  policy: [none, loss-aware]
"""
    plan = expand(parse_campaign(text, "t"))
    assert len(plan.runs) == 8 and all(r.volume_bytes is None and r.time_based for r in plan.runs)
    assert {r.duration_s for r in plan.runs} == {20.0, 120.0}
    ids = {r.run_id for r in plan.runs}
    assert "II-dual-cubic-c1-2min-b1MB-n5-bklte-loss-aware-01" not in ids  # durations are spelled in seconds
    assert "II-dual-cubic-c1-120s-b1MB-n5-bklte-loss-aware-01" in ids and "II-dual-cubic-c1-20s-b1MB-n5-01" in ids
    assert {(r.backup, r.policy) for r in plan.runs} == {("none", "none"), ("lte", "none"), ("none", "loss-aware"),
                                                          ("lte", "loss-aware")}
    from rig.campaign.estimate import run_seconds

    assert run_seconds(plan.runs[0], plan.campaign.lte_profile) > plan.runs[0].duration_s
