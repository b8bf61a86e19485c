"""The run store: atomic runs, crash leftovers discarded, resumable campaigns found by plan."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from rig.campaign.model import parse_campaign
from rig.campaign.plan import expand
from rig.store import RUNS_SCHEMA, CampaignStore, RunRecord

TEXT = "name: st\nsetups: [I]\nrepetitions: 3\nfactors: {homing: [dual, lte]}\n"


def _record(run, status="ok"):
    pairs = [{"pair": 1, "sender": "s1", "receiver": "r1", "started_at": "2026-11-21T10:00:00.000+00:00",
              "duration_s": 1.5, "goodput_bps": 16e6, "bytes_lte": 1000, "bytes_wifi": 2000, "status": status, "reason": None}]
    ts = pa.table({"time": [1.0, 2.0], "host": ["s1", "s1"], "interface": ["wlan0", "wlan0"], "path": ["wifi", "wifi"],
                   "tx_bytes": [0, 2000], "rx_bytes": [0, 10]})
    return RunRecord(run=run, status=status, reason=None, started_at="x", finished_at="y", pairs=pairs,
                     transfers={"s1": {"source": {}, "sink": {}}}, timeseries={"interfaces": ts}, logs={"s1.stderr": ""})


def test_runs_are_written_whole_and_table_follows(tmp_path):
    plan = expand(parse_campaign(TEXT, "t"))
    store = CampaignStore.create(tmp_path, plan, TEXT, {"rig": "emulated"})
    assert (store.root / "campaign.yaml").read_text() == TEXT
    assert json.loads((store.root / "plan.json").read_text())["digest"] == plan.digest
    for run in plan.runs[:2]:
        d = store.write_run(_record(run))
        assert {p.name for p in d.iterdir()} >= {"params.json", "status.json", "transfers", "timeseries", "logs"}
    store.write_runs_table()
    table = pq.read_table(store.root / "runs.parquet")
    assert table.schema.equals(RUNS_SCHEMA) and table.num_rows == 2
    assert not list(store.root.rglob(".*tmp*"))


def test_partial_runs_are_discarded_and_resume_finds_unfinished(tmp_path):
    plan = expand(parse_campaign(TEXT, "t"))
    store = CampaignStore.create(tmp_path, plan, TEXT, {})
    store.write_run(_record(plan.runs[0]))
    crashed = store.runs_dir / f".partial-{plan.runs[1].run_id}"
    crashed.mkdir()
    (crashed / "params.json").write_text("{}")
    assert store.finished_ids() == {plan.runs[0].run_id}
    assert store.discard_partial() == [plan.runs[1].run_id] and not crashed.exists()
    found = CampaignStore.find_resumable(tmp_path, plan)
    assert found is not None and found.root == store.root
    other = expand(parse_campaign(TEXT.replace("repetitions: 3", "repetitions: 4"), "t"))
    assert CampaignStore.find_resumable(tmp_path, other) is None
    for run in plan.runs[1:]:
        store.write_run(_record(run))
    assert CampaignStore.find_resumable(tmp_path, plan) is None  # finished: nothing to resume
