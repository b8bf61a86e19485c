"""Expansion: full matrix x repetitions, blocks grouped, shuffled inside blocks, deterministic ids."""

from __future__ import annotations

import pytest
from fixtures.cli import REPO, run_rig
from rig.model.campaign import parse_campaign
from rig.campaign.plan import expand
from rig.core.errors import InputError

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
        assert r.to_dict() == {k: v for k, v in asdict(r).items() if k not in ("duration_s", "backup", "policy",
                                                                            "link_rate_bps", "wifi_loss_pct", "lte_loss_pct")}
        assert Run(**r.to_dict()) == r and hash(Run(**r.to_dict())) == hash(r)
    assert run_estimates(plan) == [run_seconds(r, plan.campaign) for r in plan.runs]
    assert plan_seconds(plan) == plan_seconds(plan, run_estimates(plan)) > 0


def test_a_profile_is_parsed_once_and_again_after_an_edit(tmp_path):
    import os
    import shutil

    from rig.model.profiles import RADIO_CONFIGS, wifi_profile

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

    assert run_seconds(plan.runs[0], plan.campaign) > plan.runs[0].duration_s


GRID = """
name: grid
setups: [I]
pairs: 1
blocking: [setup, wifi_standard, link_rate_bps]
factors:
  duration: [20s]
  homing: [wifi, dual]
  link_rate_bps: [20.0e6, 10.0e6]
  wifi_loss_pct: [0, 0.00001, 10]
"""


def test_seed_003s_grid_is_factors_of_one_campaign():
    from rig.campaign.estimate import RADIO_REBUILD_S, plan_seconds, run_estimates
    from rig.campaign.plan import Run

    plan = expand(parse_campaign(GRID, "t"))
    assert len(plan.runs) == 2 * 2 * 3
    ids = {r.run_id for r in plan.runs}
    assert {"I-dual-cubic-c1-20s-b1MB-n5-r10Mbps-wifiloss0.00001-01", "I-wifi-cubic-c1-20s-b1MB-n5-r20Mbps-wifiloss0-01",
            "I-dual-cubic-c1-20s-b1MB-n5-r20Mbps-wifiloss10-01"} <= ids
    assert {(r.link_rate_bps, r.wifi_loss_pct, r.lte_loss_pct) for r in plan.runs} == {
        (rate, loss, None) for rate in (10e6, 20e6) for loss in (0, 1e-5, 10)}
    # blocked by rate, in the listed order: the radios are built once per rate
    assert [r.link_rate_bps for r in plan.runs] == [20e6] * 6 + [10e6] * 6
    assert plan_seconds(plan) == pytest.approx(sum(run_estimates(plan)) + 2 * RADIO_REBUILD_S)
    for r in plan.runs:
        given = r.to_dict()  # the levels given; the factor not given is left out, as before
        assert Run(**given) == r and "lte_loss_pct" not in given
        assert (given["link_rate_bps"], given["wifi_loss_pct"]) == (r.link_rate_bps, r.wifi_loss_pct)


def test_a_rate_level_caps_a_volume_runs_estimate():
    from rig.campaign.estimate import MSS_BYTES, TCP_EFFICIENCY, _path, run_seconds

    text = "name: v\nsetups: [I]\npairs: 1\nfactors:\n  volume: [10MB]\n  link_rate_bps: [1.0e6, 1.0e9]\n"
    plan = expand(parse_campaign(text, "t"))
    slow, fast = sorted(plan.runs, key=lambda r: r.link_rate_bps)
    # dual-homed: both paths capped at 1 Mbit/s, the volume split between them
    assert [_path(slow, p, plan.campaign)[0] for p in ("wifi", "lte")] == [1e6 * TCP_EFFICIENCY] * 2
    assert run_seconds(slow, plan.campaign) > 10e6 * 8 / (2e6 * TCP_EFFICIENCY)
    unset = expand(parse_campaign(text.replace("  link_rate_bps: [1.0e6, 1.0e9]\n", ""), "t"))
    assert run_seconds(fast, plan.campaign) == run_seconds(unset.runs[0], unset.campaign)  # above the profile's rate
    assert MSS_BYTES == 1448


def test_the_estimate_follows_round_trips_loss_and_a_fixed_ssthresh():
    """Short flows cost round trips, lossy paths run at TCP's loss-limited rate, and a fixed
    initial ssthresh makes the window grow a packet a round: each lengthens the estimate."""
    from rig.campaign.estimate import run_seconds

    def seconds(extra: str, volume: str = "8KB", homing: str = "lte") -> float:
        text = f"name: v\nsetups: [I]\npairs: 1\nfactors:\n  cc: [lia]\n  volume: [{volume}]\n  homing: [{homing}]\n{extra}"
        plan = expand(parse_campaign(text, "t"))
        return run_seconds(plan.runs[0], plan.campaign)

    far = "impairments:\n  lte: {delay_ms: 100, direction: both}\n"
    assert seconds(far) > seconds("") + 0.3  # 8 KB: a few round trips of 200 ms more
    lossy = "impairments:\n  wifi: {loss_pct: 5, direction: both}\n"
    assert seconds(lossy, "4MB", "wifi") > 1.5 * seconds("", "4MB", "wifi")
    fixed = "tcp:\n  initial_ssthresh: 10\n"
    assert seconds(fixed, "4MB") > seconds("", "4MB")
    # a dual-homed short flow ends on its first path, before the second helps
    assert seconds("", "8KB", "dual") == seconds("", "8KB", "wifi")


def test_a_loss_level_is_the_runs_loss_event_from_t0():
    """Exactly the event a campaign writes by hand, after the campaign's own: one way a loss is
    applied, recorded and restored."""
    from rig.run.timeline import run_events
    from rig.model.spec import Event

    plan = expand(parse_campaign(GRID, "t"))
    run = next(r for r in plan.runs if r.wifi_loss_pct == 10)
    by_hand = parse_campaign("name: h\nevents:\n  - {at_s: 0, path: wifi, loss_pct: 10, direction: up}\n", "h").events
    cut = Event(at_s=5, path="lte", state="down")
    assert run_events([cut], run) == [cut, *by_hand]
    none = expand(parse_campaign("name: n\n", "n")).runs[0]
    assert run_events([cut], none) == [cut] and run_events([], none) == []


def test_a_rate_level_sets_both_sender_links():
    from rig.rigs.emulated.impairments import station_pipes
    from rig.model.block import with_link_rate
    from rig.rigs.emulated.radiospec import Pipe

    hops = {"wifi": {"delay_ms": 5, "rate_bps": 30e6, "direction": "up"}, "receiver_a": {"delay_ms": 1}}
    assert with_link_rate(hops, None) is hops
    out = with_link_rate(hops, 10e6)
    assert out == {"wifi": {"delay_ms": 5, "rate_bps": 10e6, "direction": "up"}, "receiver_a": {"delay_ms": 1},
                   "lte": {"rate_bps": 10e6, "direction": "both"}}
    assert hops["wifi"]["rate_bps"] == 30e6  # the campaign's own stay as they are
    up, down = station_pipes(Pipe(rate_bps=100e6, delay_s=0.001), "lte", out)
    assert up.rate_bps == down.rate_bps == 10e6


@pytest.mark.parametrize("text, field, words", [
    ("factors: {wifi_loss_pct: [1], lte_loss_pct: [1]}", "factors", "not both"),
    ("factors: {lte_loss_pct: [1]}\nevents: [{at_s: 0, path: lte, loss_pct: 2, direction: up}]",
     "events[0].loss_pct", "factors.lte_loss_pct"),
])
def test_a_paths_loss_from_t0_is_given_once(text, field, words):
    with pytest.raises(InputError) as e:
        parse_campaign(f"name: bad\n{text}\n", "bad.yaml")
    assert e.value.field == field and words in str(e.value)


# The campaign files' plans before the grid factors existed: their texts then are kept in
# tests/golden/plans-before-grid-factors/, with each one's plan digest then. Their plans, run ids
# included, must stay what they were (a campaign resumes by its plan's digest).
BEFORE_GRID_FACTORS = {
    "bench-overhead.yaml": "93d75bd1764decc5",
    "default.yaml": "c3f08523411ae542",
    "seed000-location-a-emulated.yaml": "49bbf838ddfe41aa",
    "seed000-location-a.yaml": "7bbf8971d3038082",
    "seed000-location-b-emulated.yaml": "49bbf838ddfe41aa",
    "seed000-location-b.yaml": "7bbf8971d3038082",
    "seed001-flow-size-emulated.yaml": "6afc153f3f98c9ef",
    "seed001-flow-size.yaml": "745dbd91232a36ff",
    "seed002-buffer.yaml": "8ef505426d721e7b",
    "seed002-connections.yaml": "5e7ac28b4553c821",
    "seed002-homing.yaml": "e1ab11a587c7ea78",
    "seed002-volume.yaml": "8f2fabab045ab8bc",
    "seed004-cut-emulated.yaml": "c7d1071b03b88d50",
    "seed004-cut.yaml": "31e961fece905099",
    "seed004-throughput-emulated.yaml": "5d5d4a02feead43a",
    "seed004-throughput.yaml": "51ac9d871c9a5068",
    "simulated.yaml": "17bbc20e18febe36",
}


def test_campaigns_without_the_grid_factors_plan_as_before():
    from rig.model.campaign import load_campaign

    kept = REPO / "tests" / "golden" / "plans-before-grid-factors"
    assert sorted(p.name for p in kept.glob("*.yaml")) == sorted(BEFORE_GRID_FACTORS)
    for name, digest in BEFORE_GRID_FACTORS.items():
        assert expand(load_campaign(kept / name), name).digest == digest, name


def test_setup_ii_delivers_lte_over_the_receivers_bss():
    """Past the core, Setup II's LTE data crosses AP3's BSS, which its receivers share: on
    802.11g that BSS, not the cell, sets the LTE path's rate."""
    from rig.campaign.estimate import DCF_SATURATION_BPS, TCP_EFFICIENCY, _path

    text = "name: v\nsetups: [I, II]\npairs: 5\nradios: models\nlte_profile: band7-20mhz\nfactors:\n  wifi_standard: [g]\n  volume: [15MB]\n"
    plan = expand(parse_campaign(text, "t"))
    one, two = (next(r for r in plan.runs if r.setup == s) for s in ("I", "II"))
    assert _path(two, "lte", plan.campaign)[0] == DCF_SATURATION_BPS["g"] / 5 * TCP_EFFICIENCY
    assert _path(one, "lte", plan.campaign)[0] > _path(two, "lte", plan.campaign)[0]


def test_single_homed_cells_are_planned_once_without_path_policies():
    # a path policy decides among a sender's paths: a single-homed sender has one to use
    text = """
name: policies
setups: [I]
repetitions: 2
factors:
  homing: [wifi, lte, dual]
  backup: [none, lte]
  policy: [none, loss-aware]
"""
    plan = expand(parse_campaign(text, "t"))
    by_homing = {h: sorted((r.backup, r.policy, r.repetition) for r in plan.runs if r.homing == h) for h in ("wifi", "lte", "dual")}
    assert by_homing["wifi"] == by_homing["lte"] == [("none", "none", 1), ("none", "none", 2)]
    assert len(by_homing["dual"]) == 8 and len(plan.runs) == 12
    assert {r.run_id for r in plan.runs if r.homing == "wifi"} == {"I-wifi-cubic-c1-15MB-b1MB-n5-01", "I-wifi-cubic-c1-15MB-b1MB-n5-02"}


def test_without_a_shared_medium_the_estimate_is_the_links_rate():
    """On `links` radios in Setup I the LTE data crosses the cell's medium twice, which halves it;
    without the medium (shared_medium: false) the path runs at its hops' rate."""
    from rig.campaign.estimate import TCP_EFFICIENCY, _path

    text = ("name: v\nsetups: [I]\npairs: 1\nradios: links\nlte_profile: band7-20mhz\n"
            "factors:\n  duration: [20s]\n  link_rate_bps: [30.0e6]\n")
    shared = expand(parse_campaign(text, "t"))
    alone = expand(parse_campaign(text + "shared_medium: false\n", "t"))
    assert _path(shared.runs[0], "lte", shared.campaign)[0] == 45e6 / 2 * TCP_EFFICIENCY
    assert [_path(alone.runs[0], p, alone.campaign)[0] for p in ("wifi", "lte")] == [30e6 * TCP_EFFICIENCY] * 2
