"""The studies' campaign files (docs/studies.md): each one validates and plans, and each
emulated-scale twin runs the same conditions as its lab file, only fewer or shorter runs, and
the lab files use no events the lab cannot act out."""

from __future__ import annotations

import pytest

from fixtures.cli import REPO
from rig.model.campaign import load_campaign
from rig.campaign.plan import expand
from rig.run.timeline import check_for_lab

CAMPAIGNS = REPO / "campaigns"
STUDY_FILES = sorted(p for s in ("000", "001", "003", "004") for p in CAMPAIGNS.glob(f"seed{s}-*.yaml"))
LAB_FILES = [p for p in STUDY_FILES if not p.stem.endswith("-emulated")]


def test_every_study_has_its_campaigns():
    assert {p.stem[:7] for p in LAB_FILES} == {"seed000", "seed001", "seed003", "seed004"}
    assert all(p.with_name(f"{p.stem}-emulated.yaml").is_file() for p in LAB_FILES)


@pytest.mark.parametrize("path", STUDY_FILES, ids=lambda p: p.stem)
def test_campaign_validates_and_plans(path):
    campaign = load_campaign(path)
    assert campaign.name == path.stem
    if path in LAB_FILES:
        check_for_lab(campaign.events, str(path))
    plan = expand(campaign)
    assert plan.runs and len({r.run_id for r in plan.runs}) == len(plan.runs)


@pytest.mark.parametrize("path", LAB_FILES, ids=lambda p: p.stem)
def test_emulated_twin_keeps_the_conditions(path):
    lab = load_campaign(path).model_dump()
    emulated = load_campaign(path.with_name(f"{path.stem}-emulated.yaml")).model_dump()
    for key in ("setups", "pairs", "lte_profile", "loss_aware", "tcp"):
        assert lab[key] == emulated[key], key
    # the same events; the twin may add a rate trace, which only the emulated rig's radios follow
    assert lab["events"] == [e for e in emulated["events"] if e["trace"] is None]
    for factor in ("homing", "policy", "backup", "connections"):
        assert lab["factors"][factor] == emulated["factors"][factor], factor
    # fewer levels of these; a grid factor (seed 003) the lab file varies, the twin varies too
    for factor in ("cc", "volume", "link_rate_bps", "wifi_loss_pct", "lte_loss_pct"):
        assert set(emulated["factors"][factor]) <= set(lab["factors"][factor]), factor
    for factor in ("link_rate_bps", "wifi_loss_pct", "lte_loss_pct"):
        assert bool(emulated["factors"][factor]) == bool(lab["factors"][factor]), factor
    for hop, values in lab["impairments"].items():  # the same hops; only a rate may be lower
        twin = emulated["impairments"][hop]
        assert {k: v for k, v in values.items() if k != "rate_bps"} == {k: v for k, v in twin.items() if k != "rate_bps"}
    assert len(expand(load_campaign(path.with_name(f"{path.stem}-emulated.yaml"))).runs) <= len(
        expand(load_campaign(path)).runs)


@pytest.mark.parametrize("lossy", ["wifi", "lte"])
def test_seed_003s_lab_files_hold_the_papers_grid(lossy):
    """Table I's rates on both links x the loss levels of Fig. 2 on one link, 120 s (Table II), 10
    repetitions, as factors of one file per figure group; the loss is the factor's, no event's."""
    campaign = load_campaign(CAMPAIGNS / f"seed003-{lossy}-loss.yaml")
    other = "lte" if lossy == "wifi" else "wifi"
    f = campaign.factors
    assert f.link_rate_bps == [10e6, 20e6, 30e6, 40e6, 50e6]
    assert getattr(f, f"{lossy}_loss_pct") == [0.0001, 0.001, 0.01, 0.1, 1, 10]
    assert getattr(f, f"{other}_loss_pct") == [] and campaign.events == []
    assert (f.duration, campaign.repetitions, f.cc) == ([120.0], 10, ["balia"])
    assert "link_rate_bps" in campaign.blocking  # the radios are rebuilt once per rate, not per run
