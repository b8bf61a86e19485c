"""Sinks started ahead: a run starts the next run's sinks once its own have reported, and the next
run uses them only when they started with what it needs (its receive buffer, its arguments)."""

from __future__ import annotations

import pytest

from rig.campaign.model import parse_campaign
from rig.campaign.plan import expand
from rig.store import RunRecord
from test_run_validity import one_pair_rig  # noqa: F401 - the fixture: a real one-pair emulated rig

pytestmark = pytest.mark.emulated


def _runs():
    text = "name: v\nsetups: [I]\npairs: 1\nfactors: {volume: [4MB], rcvbuf: [1000KB, 2000KB]}\n"
    return sorted(expand(parse_campaign(text, "v")).runs, key=lambda r: r.rcvbuf_bytes)


def _sink_started(rec: RunRecord) -> float:
    return rec.transfers["s1"]["_rig"]["sink"]["started_at"]


def _began(rec: RunRecord) -> float:
    from datetime import datetime

    return datetime.fromisoformat(rec.started_at).timestamp()


def test_the_next_runs_sinks_start_ahead_only_with_its_setting(one_pair_rig):  # noqa: F811
    from rig.run.execute import execute_run

    _, ctx = one_pair_rig
    small, large = _runs()
    first = execute_run(ctx, small)
    assert first.status == "ok", first.reason
    assert _sink_started(first) >= _began(first)  # nothing ahead of the first run
    again = execute_run(ctx, small)
    assert again.status == "ok", again.reason
    assert _sink_started(again) < _began(again)  # started by the run before, and used
    other = execute_run(ctx, large)  # another receive buffer: the sink started ahead is not used
    assert other.status == "ok", other.reason
    assert _sink_started(other) >= _began(other)
    ctx.more_runs = False  # before a campaign's last run: nothing is left listening after it
    last = execute_run(ctx, large)
    assert last.status == "ok", last.reason
    assert _sink_started(last) < _began(last)
    assert ctx.sinks_ready is None
    assert not ctx.agents.agents["r1"].request("alive", key="transfer-sink")["alive"]
