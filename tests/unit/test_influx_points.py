"""What a run's events and its status become in InfluxDB (the dashboards read them): the events at
the times they acted, a run_status point per run."""

from __future__ import annotations

import json

import pyarrow as pa

from rig.influx.schema import series_blocks, status_line
from rig.run import timeline

TAGS = {"campaign": "c", "setup": "I", "homing": "dual", "cc": "lia", "wifi_standard": "n5"}
IDS = {"run_id": "r-1", "campaign_id": "20261127T010000Z"}


def test_events_are_points_at_their_applied_time_or_planned_when_they_did_not_act():
    rows = [
        {"planned": 100.0, "actual": 100.25, "lateness_ms": 250.0, "at_s": 1.5, "event": 0, "path": "lte", "pair": 1,
         "host": "s1", "interface": "lte0", "what": "state", "values": json.dumps({"state": "down"}), "where": "node",
         "error": None},
        {"planned": 103.0, "actual": None, "lateness_ms": None, "at_s": 4.5, "event": 1, "path": "lte", "pair": 1,
         "host": "s1", "interface": "lte0", "what": "state", "values": json.dumps({"state": "up"}), "where": "node",
         "error": "agent lost"},
    ]
    got = b"".join(b.data for b in series_blocks([("events", timeline.table(rows))], TAGS, IDS)).decode().splitlines()
    assert len(got) == 2
    acted, missed = got
    # the event's free text (its values, an error) are fields: a tag per distinct text would be a series each
    assert acted.startswith("events,campaign=c,cc=lia,homing=dual,host=s1,interface=lte0,path=lte,setup=I,")
    assert "what=state,where=node,wifi_standard=n5 " in acted
    assert 'values="{\\"state\\": \\"down\\"}"' in acted and "applied=true" in acted
    assert acted.endswith(" 100250000000")
    assert "applied=false" in missed and 'error="agent lost"' in missed and missed.endswith(" 103000000000")


def test_a_table_with_its_own_time_is_written_as_it_is():
    table = pa.table({"time": [5.0], "host": ["s1"], "loss": [0.1]})
    got = b"".join(b.data for b in series_blocks([("events", table)], TAGS, IDS)).decode()
    assert got.startswith("events,") and "applied" not in got and got.rstrip().endswith(" 5000000000")


def test_run_status_point_has_the_status_as_tag_and_the_runs_times():
    status = {"status": "invalid", "reason": "emulator lagged 3 ms", "started_at": "2026-11-27T01:00:00+00:00",
              "finished_at": "2026-11-27T01:00:07.5+00:00", "transfer_s": 7, "lag_retries": 2, "lagged": True}
    point = status_line(status, TAGS, IDS, planned_runs=18)
    head, rest = point.split(" ", 1)
    fields, ts = rest.rsplit(" ", 1)
    assert head == "run_status,campaign=c,cc=lia,homing=dual,setup=I,status=invalid,wifi_standard=n5"
    assert ts == str(1795741200 * 10**9)
    values = dict(f.split("=", 1) for f in fields.split(","))
    # transfer_s is a float even when the JSON held an integer: a field keeps one type in InfluxDB
    assert values["wall_s"] == "7.5" and values["transfer_s"] == "7.0" and values["overhead_s"] == "0.5"
    assert values["planned_runs"] == "18i" and values["lag_retries"] == "2i" and values["lagged"] == "true"
    assert values["finished_ms"] == f"{1795741207500}i" and values["run_id"] == '"r-1"'
    assert values["reason"] == '"emulator lagged 3 ms"'
    assert status_line({"status": "ok"}, TAGS, IDS, 1) is None  # not recorded yet: no start
