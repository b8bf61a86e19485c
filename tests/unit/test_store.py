"""The run store: atomic runs, crash leftovers discarded, resumable campaigns found by plan."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from fixtures.run_record import SMALL_CAMPAIGN, run_record
from rig.core.errors import InputError
from rig.model.campaign import parse_campaign
from rig.campaign.plan import expand
from rig.store.writer import RUNS_SCHEMA, CampaignStore


def test_runs_are_written_whole_and_table_follows(tmp_path):
    plan = expand(parse_campaign(SMALL_CAMPAIGN, "t"))
    store = CampaignStore.create(tmp_path, plan, SMALL_CAMPAIGN, {"rig": "emulated"})
    assert (store.root / "campaign.yaml").read_text() == SMALL_CAMPAIGN
    assert json.loads((store.root / "plan.json").read_text())["digest"] == plan.digest
    for run in plan.runs[:2]:
        d = store.write_run(run_record(run))
        assert {p.name for p in d.iterdir()} >= {"params.json", "status.json", "transfers", "timeseries", "logs"}
    store.write_runs_table()
    table = pq.read_table(store.root / "runs.parquet")
    assert table.schema.equals(RUNS_SCHEMA) and table.num_rows == 2
    assert not list(store.root.rglob(".*tmp*"))


def test_partial_runs_are_discarded_and_resume_finds_unfinished(tmp_path):
    plan = expand(parse_campaign(SMALL_CAMPAIGN, "t"))
    store = CampaignStore.create(tmp_path, plan, SMALL_CAMPAIGN, {})
    store.write_run(run_record(plan.runs[0]))
    crashed = store.runs_dir / f".partial-{plan.runs[1].run_id}"
    crashed.mkdir()
    (crashed / "params.json").write_text("{}")
    assert store.finished_ids() == {plan.runs[0].run_id}
    assert store.discard_partial() == [plan.runs[1].run_id] and not crashed.exists()
    found = CampaignStore.find_resumable(tmp_path, plan)
    assert found is not None and found.root == store.root
    other = expand(parse_campaign(SMALL_CAMPAIGN.replace("repetitions: 3", "repetitions: 4"), "t"))
    assert CampaignStore.find_resumable(tmp_path, other) is None
    for run in plan.runs[1:]:
        store.write_run(run_record(run))
    assert CampaignStore.find_resumable(tmp_path, plan) is None  # finished: nothing to resume


def test_resume_refuses_a_directory_whose_campaign_settings_changed(tmp_path):
    """The digest covers the runs only: a file edited in a setting its run ids do not show
    (here its impairments) must not resume into the directory of the one before."""
    plan = expand(parse_campaign(SMALL_CAMPAIGN, "t"))
    store = CampaignStore.create(tmp_path, plan, SMALL_CAMPAIGN, {})
    store.write_run(run_record(plan.runs[0]))
    described = expand(parse_campaign(SMALL_CAMPAIGN + "description: the same runs\n# a comment\n", "t"))
    assert CampaignStore.find_resumable(tmp_path, described).root == store.root
    edited = expand(parse_campaign(SMALL_CAMPAIGN + "impairments: {wifi: {delay_ms: 5}}\n", "t"))
    assert edited.digest == plan.digest
    with pytest.raises(InputError) as e:
        CampaignStore.find_resumable(tmp_path, edited)
    assert e.value.field == "impairments" and str(store.root / "campaign.yaml") in str(e.value)
