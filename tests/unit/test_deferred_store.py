"""The runner stores each finished run while the next one transfers (rig.campaign.runner._Recorder):
held in memory until then, written by the next hold or the final flush, never lost to a failed
write, and a failed write is not the next run's failure."""

from __future__ import annotations

import time

import pytest

from rig.model.campaign import parse_campaign
from rig.campaign.plan import expand
from rig.campaign.runner import _Recorder
from rig.store.writer import CampaignStore, RunRecord

TEXT = "name: held\nsetups: [I]\nrepetitions: 2\nfactors: {homing: [dual, lte]}\n"


def _record(run) -> RunRecord:
    pairs = [{"pair": 1, "sender": "s1", "receiver": "r1", "status": "ok", "reason": None}]
    return RunRecord(run=run, status="ok", reason=None, started_at="x", finished_at="y", pairs=pairs)


def test_a_finished_run_is_held_until_the_next_is_under_way_and_written_before_the_end(tmp_path):
    plan = expand(parse_campaign(TEXT, "t"))
    store = CampaignStore.create(tmp_path, plan, TEXT, {})
    recorder = _Recorder(store, None)
    first, second, third = plan.runs[:3]
    recorder.hold(_record(first))
    assert store.finished_ids() == set()
    recorder.flush_after(time.time() - 1)  # what the next run calls once its sources have started
    assert store.finished_ids() == {first.run_id}
    recorder.hold(_record(second))
    recorder.hold(_record(third))  # the next run failed before its launch: the held one is written now
    assert store.finished_ids() == {first.run_id, second.run_id}
    (store.runs_dir / third.run_id).mkdir()  # a write that cannot succeed
    recorder.flush_after(time.time() - 1)
    assert recorder.held is not None
    with pytest.raises(FileExistsError):
        recorder.flush()
