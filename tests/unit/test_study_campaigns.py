"""The studies' campaign files (docs/studies.md): each one validates and plans, and each
emulated-scale twin runs the same conditions as its lab file, only fewer or shorter runs, and
the lab files use no events the lab cannot act out. Seed 002's lab files hold its figures'
conditions as the paper gives them, and its twins differ from them only in repetitions and
run timeout."""

from __future__ import annotations

import pytest

from fixtures.cli import REPO
from rig.model.campaign import load_campaign
from rig.campaign.estimate import plan_seconds
from rig.campaign.plan import expand
from rig.run.timeline import check_for_lab

CAMPAIGNS = REPO / "campaigns"
STUDY_FILES = sorted(p for s in ("000", "001", "002", "003", "004") for p in CAMPAIGNS.glob(f"seed{s}-*.yaml"))
LAB_FILES = [p for p in STUDY_FILES if not p.stem.endswith("-emulated")]


def test_every_study_has_its_campaigns():
    assert {p.stem[:7] for p in LAB_FILES} == {"seed000", "seed001", "seed002", "seed003", "seed004"}
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
    for key in ("setups", "pairs", "lte_profile", "radios", "loss_aware", "tcp", "blocking", "seed"):
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
    # Table I's delays are the paths' RTTs (WiFi 10 ms, LTE 75 ms), all on the senders' links:
    # the paper's server is wired, so the receivers' links add nothing
    imp = campaign.impairments
    assert {p: 2 * imp[p].delay_ms for p in ("wifi", "lte")} == {"wifi": 10, "lte": 75}
    assert all(imp[p].direction == "both" for p in imp)
    assert all((imp[r].delay_ms, imp[r].jitter_ms) == (0, 0) for r in ("receiver_a", "receiver_b"))


# Seed 002 (docs/studies.md, "Seed 002"): each lab file's conditions, figure by figure, as the
# paper gives them (Secs. V-VI) and, where it does not, as the file's comment says they were taken.
# stem -> (setups, wifi standards, ccs, connections, volumes MB, receiver buffers KB, homings)
ALL_CCS = ["cubic", "lia", "olia"]
BUFFERS, VOLUMES, HOMINGS = [640, 800, 1000, 1200], [5, 10, 15, 20], ["wifi", "lte", "dual"]
SEED_002 = {
    # Fig. 5(a)-(b), 5(c): parallel connections
    "seed002-connections": (["I", "II"], ["n5"], ALL_CCS, [1, 5, 10], [15], [1000], ["dual"]),
    "seed002-connections-g": (["II"], ["g"], ALL_CCS, [1, 5, 10], [15], [1000], ["dual"]),
    # Fig. 6(a), 6(b)-(c): data volume
    "seed002-volume": (["I"], ["n5"], ALL_CCS, [5], VOLUMES, [1000], ["dual"]),
    "seed002-volume-ii": (["II"], ["n5", "g"], ALL_CCS, [10], VOLUMES, [1000], ["dual"]),
    # Fig. 7(a), (b), (d), 7(c): receiver buffer
    "seed002-buffer": (["I", "II", "III"], ["n5"], ALL_CCS, [10], [15], BUFFERS, ["dual"]),
    "seed002-buffer-a": (["II"], ["a"], ALL_CCS, [10], [15], BUFFERS, ["dual"]),
    # Figs. 8, 9: WiFi standards
    "seed002-standards": (["I"], ["a", "n24", "n5"], ALL_CCS, [5], [15], [800], ["dual"]),
    "seed002-standards-ii-iii": (["II", "III"], ["g", "a", "n24", "n5"], ALL_CCS, [5], [15], [800], ["dual"]),
    # Fig. 10: single-homed; Fig. 11(a), (b), (c): lia single- and dual-homed
    "seed002-homing": (["I"], ["n5"], ALL_CCS, [5], [15], [1000], ["lte", "wifi"]),
    "seed002-homing-buffer": (["I"], ["n5"], ["lia"], [5], [15], BUFFERS, HOMINGS),
    "seed002-homing-connections": (["I"], ["n5"], ["lia"], [1, 5, 10], [15], [1000], HOMINGS),
    "seed002-homing-volume": (["I"], ["n5"], ["lia"], [5], VOLUMES, [1000], HOMINGS),
}


@pytest.mark.parametrize("stem", sorted(SEED_002))
def test_seed_002s_lab_files_hold_the_papers_figures(stem):
    """5 pairs, 50 repetitions (Sec. V-A), the 20 MHz band 7 cell, each figure's conditions; the
    comment names the section and figure."""
    path = CAMPAIGNS / f"{stem}.yaml"
    campaign = load_campaign(path)
    f = campaign.factors
    setups, standards, ccs, connections, volumes, rcvbufs, homings = SEED_002[stem]
    assert (campaign.setups, f.wifi_standard, f.cc, f.connections, f.homing) == (
        setups, standards, ccs, connections, homings)
    assert (f.volume, f.rcvbuf) == ([v * 1_000_000 for v in volumes], [b * 1000 for b in rcvbufs])
    assert (campaign.pairs, campaign.repetitions, campaign.lte_profile) == (5, 50, "band7-20mhz")
    assert f.duration == [] and campaign.impairments == {} and campaign.events == []
    comment = path.read_text().split("\nname:")[0]
    assert "Sec. VI-" in comment and "Fig. " in comment


def test_seed_002s_lab_files_are_its_figures():
    assert {p.stem for p in LAB_FILES if p.stem.startswith("seed002-")} == set(SEED_002)


@pytest.mark.parametrize("stem", sorted(SEED_002))
def test_seed_002s_twins_differ_only_in_repetitions_and_timeout(stem):
    """The twin runs every condition of its lab file on the radio models at 5 pairs; only its
    repetitions (20) and run timeout are its own, and its comment says how they were chosen."""
    lab = load_campaign(CAMPAIGNS / f"{stem}.yaml").model_dump()
    twin_path = CAMPAIGNS / f"{stem}-emulated.yaml"
    twin_campaign = load_campaign(twin_path)
    # runnable in a night on one 2-core host, with room for the attempts run again for emulator lag
    assert plan_seconds(expand(twin_campaign)) < 4 * 3600
    twin = twin_campaign.model_dump()
    assert (twin["name"], twin["repetitions"], twin["radios"], twin["pairs"]) == (
        f"{stem}-emulated", 20, "models", 5)
    assert twin["limits"]["run_timeout_s"] < lab["limits"]["run_timeout_s"]
    for campaign in (lab, twin):
        del campaign["name"], campaign["repetitions"], campaign["limits"]["run_timeout_s"]
    assert twin == lab
    comment = twin_path.read_text().split("\nname:")[0]
    assert "20 repetitions" in comment and "bootstrap" in comment and "rig campaign plan" in comment


def test_every_twin_runs_what_its_findings_need():
    """A twin plans at least the valid runs per condition that its study's claims need, so
    `rig findings` over a whole twin can give every claim a verdict."""
    from rig.findings.model import load_findings

    for path in sorted((CAMPAIGNS / "findings").glob("seed*.yaml")):
        findings = load_findings(path)
        for claim in findings.claims:
            for name in claim.campaigns:
                twin = load_campaign(CAMPAIGNS / f"{name}-emulated.yaml")
                assert twin.repetitions >= (claim.min_runs or findings.min_runs), (path.name, claim.id, name)
