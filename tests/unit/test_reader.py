"""The one reader of a campaign directory (rig.store.reader): every file versioned, older versions
migrated, newer ones refused; the runs table's columns defined once (rig.store.columns); the
InfluxDB sink's live write from memory the same as `rig sync`'s from disk."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rig.store.synthetic import write_campaign
from fixtures.run_record import SMALL_CAMPAIGN, run_record

from rig.campaign.plan import expand
from rig.core.errors import InputError
from rig.export.datapackage import DESCRIPTIONS
from rig.influx.config import InfluxConfig
from rig.influx.sink import Sink
from rig.model.campaign import parse_campaign
from rig.store import columns, formats
from rig.store.reader import CampaignDir
from rig.store.writer import RUNS_SCHEMA, CampaignStore


def _store(tmp_path, runs: int = 2):
    plan = expand(parse_campaign(SMALL_CAMPAIGN, "t"))
    store = CampaignStore.create(tmp_path, plan, SMALL_CAMPAIGN, {"rig": "emulated"})
    records = [run_record(run) for run in plan.runs[:runs]]
    for rec in records:
        store.write_run(rec)
    store.write_runs_table()
    return store, records


def test_every_file_the_store_writes_carries_its_format(tmp_path):
    store, records = _store(tmp_path)
    run = store.runs_dir / records[0].run.run_id
    assert json.loads((run / "params.json").read_text())["format"] == formats.RUN_PARAMS
    assert all(p["format"] == formats.RUN_PAIRS for p in json.loads((run / "pairs.json").read_text()))
    assert pq.read_schema(run / "timeseries" / "interfaces.parquet").metadata[b"format"].decode() == formats.SERIES
    assert pq.read_schema(store.root / "runs.parquet").metadata[b"format"].decode() == formats.RUNS
    # what the reader gives carries no format field: it is always the current version
    reader = CampaignDir(store.root)
    assert "format" not in reader.run(records[0].run.run_id).params()
    assert all("format" not in p for p in reader.run(records[0].run.run_id).pairs())
    assert not (reader.runs_table().schema.metadata or {}).get(b"format")


def test_rows_from_memory_are_the_rows_read_back(tmp_path):
    store, records = _store(tmp_path)
    again = CampaignStore(store.root)  # a new process: reads every run's files
    assert again.rows() == [row for rec in records for row in store.record_rows(rec)]
    assert CampaignDir(store.root).runs_rows() == again.rows()


def test_the_runs_table_is_defined_once():
    assert [f.name for f in RUNS_SCHEMA] == [c.name for c in columns.RUNS]
    assert all(DESCRIPTIONS[c.name] == c.description for c in columns.RUNS if c.description)
    assert {"retrans_segs": "TcpRetransSegs", "add_addr_rx": "MPTcpExtAddAddr"}.items() <= columns.MIB_COUNTERS.items()
    assert all(c.source == "pair" for c in columns.RUNS if c.mib)


def test_old_runs_table_is_migrated_and_newer_files_refused(tmp_path):
    campaign = write_campaign(tmp_path, repetitions=1, connections=(1,))  # unversioned, started_at ISO strings
    reader = CampaignDir(campaign.path)
    table = reader.runs_table()
    assert table.schema.field("started_at").type == pa.timestamp("us", tz="UTC")
    raw = pq.read_table(campaign.path / "runs.parquet").column("started_at").to_pylist()
    assert [t and t.isoformat() for t in table.column("started_at").to_pylist()] == \
        [t and formats.utc_time(t).isoformat() for t in raw]

    newer = table.replace_schema_metadata({"format": "rig-runs/9"})
    pq.write_table(newer, campaign.path / "runs.parquet")
    with pytest.raises(InputError, match="rig-runs/9 is newer"):
        reader.runs_table()
    run = reader.run(campaign.run_ids[0])
    params = run.path / "params.json"
    params.write_text(json.dumps({**json.loads(params.read_text()), "format": "rig-run-params/2"}))
    with pytest.raises(InputError, match="rig-run-params/2 is newer"):
        run.params()
    series = run.path / "timeseries" / "lag.parquet"
    pq.write_table(pq.read_table(series).replace_schema_metadata({"format": "rig-series/2"}), series)
    with pytest.raises(InputError, match="rig-series/2 is newer"):
        reader.series("lag")


def test_the_sinks_live_write_from_memory_equals_syncs_from_disk(tmp_path):
    store, records = _store(tmp_path)
    sink = Sink(InfluxConfig(url="http://127.0.0.1:9", db="t"))
    for rec in records:
        live = sink.encode_record(store, rec)
        synced = sink.encode_run(store.runs_dir / rec.run.run_id)
        assert live == synced and live.summary_rows == 1 and live.recorded
