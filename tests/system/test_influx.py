"""InfluxDB sink against a real influxd (Debian's 1.x) started by the tests on loopback."""

from __future__ import annotations

import logging
import math
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from rig.store.synthetic import write_campaign

from rig.core.errors import InputError
from rig.influx import Sink, sync
from rig.influx import server
from rig.influx.config import InfluxConfig, load_config
from rig.influx.lineproto import line, seconds_to_ns
from rig.influx.server import free_port
from rig.influx.sink import read_marker

RIG = str(Path(sys.executable).with_name("rig"))


@pytest.fixture(scope="module")
def influxd(tmp_path_factory):
    with server.running(tmp_path_factory.mktemp("influxd")) as srv:
        yield srv


def fresh_sink(srv: server.Server, db: str) -> Sink:
    server.create_database(srv.url, db)
    return Sink(InfluxConfig(url=srv.url, db=db))


def series_values(sink: Sink, q: str) -> list[dict]:
    result = sink.query(q)["results"][0]
    out = []
    for s in result.get("series", []):
        out += [dict(zip(s["columns"], v)) for v in s["values"]]
    return out


def count(sink: Sink, measurement: str, field: str) -> int:
    rows = series_values(sink, f'SELECT count("{field}") FROM "{measurement}"')
    return rows[0]["count"] if rows else 0


def test_line_protocol_escapes_and_types():
    got = line("my meas", {"host": "s 1", "b": "x,y=z", "empty": None},
               {"n": 3, "f": 0.5, "s": 'a"b\\c', "nan": math.nan, "none": None, "ok": True}, 17)
    assert got == r'my\ meas,b=x\,y\=z,host=s\ 1 n=3i,f=0.5,s="a\"b\\c",ok=true 17'
    assert line("m", {}, {"x": None}, 1) is None
    assert seconds_to_ns(1714525200.25) == 1714525200_250_000_000


def test_config_from_env_and_file_never_shows_secrets(tmp_path, monkeypatch):
    for key in list(os.environ):
        if key.startswith("RIG_INFLUX_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("RIG_INFLUX_CONFIG", str(tmp_path / "absent.toml"))
    with pytest.raises(InputError, match="absent.toml"):
        load_config()
    toml = tmp_path / "influx.toml"
    toml.write_text('[influx]\nurl = "http://127.0.0.1:1"\ndb = "lab"\ntoken = "s3cr3t-token"\n')
    monkeypatch.setenv("RIG_INFLUX_CONFIG", str(toml))
    config = load_config()
    assert (config.url, config.db, config.token.get_secret_value()) == ("http://127.0.0.1:1", "lab", "s3cr3t-token")
    assert "s3cr3t" not in repr(config) and "s3cr3t" not in str(config.model_dump())
    monkeypatch.setenv("RIG_INFLUX_DB", "override")  # the environment wins over the file
    assert load_config().db == "override"
    toml.write_text('[influx]\nurl = "ftp://user:pw@host"\n')
    with pytest.raises(InputError, match=r"influx.toml: url: .*http") as e:
        load_config()
    assert "pw" not in str(e.value)
    monkeypatch.setenv("RIG_INFLUX_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    assert load_config() is None


def test_unreachable_server_returns_false_and_logs_no_secret(tmp_path, caplog):
    campaign = write_campaign(tmp_path, samples_per_series=4, connections=(1,), ccs=("lia",), repetitions=1)
    sink = Sink(InfluxConfig(url=f"http://127.0.0.1:{free_port()}", token="tok-abc-123", timeout_s=2))
    run_dir = campaign.path / "runs" / campaign.run_ids[0]
    with caplog.at_level(logging.WARNING):
        assert sink.write_run(run_dir) is False
    assert "unreachable" in caplog.text and "tok-abc-123" not in caplog.text
    assert not (run_dir / "influx.json").exists()
    result = sync(campaign.path, sink)
    assert result.error and "tok-abc-123" not in result.error and result.written == []


def test_points_match_run_store_row_for_row(influxd, tmp_path):
    campaign = write_campaign(tmp_path, started_at_as_timestamp=True)
    sink = fresh_sink(influxd, "rowforrow")
    result = sync(campaign.path, sink)
    assert result.ok and len(result.written) == len(campaign.run_ids)

    rows = pq.read_table(campaign.path / "runs.parquet").to_pylist()
    points = series_values(sink, "SELECT * FROM run")
    assert len(points) == len(rows)
    by_key = {(p["run_id"], p["pair"]): p for p in points}
    for row in rows:
        p = by_key[(row["run_id"], row["pair"])]
        for col in ("setup", "homing", "cc", "sender", "receiver", "status", "reason",
                    "goodput_bps", "bytes_lte", "bytes_wifi", "duration_s", "repetition"):
            assert p[col] == row[col], (row["run_id"], col)
        assert p["connections"] == str(row["connections"])  # a tag: strings in InfluxDB
        assert p["campaign_id"] == "20240501T010000Z"
        assert p["campaign"] == "fixture"  # the name, not the directory: one series set per campaign

    statuses = {p["run_id"]: p for p in series_values(sink, "SELECT * FROM run_status")}
    assert statuses.keys() == set(campaign.run_ids)
    for run_id in campaign.run_ids:
        status, reason = campaign.bad_runs.get(run_id, ("ok", None))
        assert (statuses[run_id]["status"], statuses[run_id]["reason"]) == (status, reason), run_id
    assert {p["planned_runs"] for p in statuses.values()} == {len(campaign.run_ids)}

    assert count(sink, "iface", "tx_bytes") == campaign.interface_samples
    assert count(sink, "lag", "p99_ms") == campaign.lag_samples
    assert count(sink, "subflows", "cwnd") == campaign.subflow_samples
    # rates come from consecutive counter samples of one interface
    rate = series_values(sink, "SELECT mean(tx_rate_bps) FROM iface WHERE path='lte' AND host='s1'")
    assert 1e6 < rate[0]["mean"] < 2e7
    # ids are fields, not tags: the series count does not grow with runs
    tag_keys = series_values(sink, "SHOW TAG KEYS FROM iface")
    assert {t["tagKey"] for t in tag_keys} == {"campaign", "cc", "homing", "host", "interface", "path",
                                               "setup", "wifi_standard"}


def test_outage_mid_campaign_then_sync_writes_each_point_once(tmp_path):
    campaign = write_campaign(tmp_path / "results")
    run_dirs = [campaign.path / "runs" / r for r in campaign.run_ids]
    half = len(run_dirs) // 2
    srv = server.Server(tmp_path / "influxd", free_port())
    try:
        server.start(srv, "outage")
        sink = Sink(InfluxConfig(url=srv.url, db="outage", timeout_s=2))
        assert all(sink.write_run(d) for d in run_dirs[:half])  # the campaign's live writes
        server.stop(srv)
        assert not any(sink.write_run(d) for d in run_dirs[half:])  # down: the campaign goes on
        assert all(read_marker(d) == {} for d in run_dirs[half:])
        server.start(srv, "outage")  # same data directory: the first half is still there
        result = sync(campaign.path, sink)
        assert sorted(result.written) == sorted(campaign.run_ids[half:])
        assert len(result.already) == half
        # a run written twice (marker lost) overwrites its own points
        (run_dirs[0] / "influx.json").unlink()
        assert sync(campaign.path, sink).written == [campaign.run_ids[0]]
        assert count(sink, "iface", "tx_bytes") == campaign.interface_samples
        assert count(sink, "run", "status") == campaign.runs_rows
        assert count(sink, "lag", "samples") == campaign.lag_samples
        assert sync(campaign.path, sink).written == []
    finally:
        server.stop(srv)


def test_cli_influx_start_status_stop_and_sync(tmp_path):
    campaign = write_campaign(tmp_path, samples_per_series=4, repetitions=1)
    port = str(free_port())
    state = str(tmp_path / "state")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RIG_INFLUX_")}
    env |= {"RIG_INFLUX_URL": f"http://127.0.0.1:{port}", "RIG_INFLUX_DB": "cli",
            "RIG_INFLUX_CONFIG": str(tmp_path / "no-file.toml")}
    (tmp_path / "no-file.toml").write_text("")

    def rig(*args):
        return subprocess.run([RIG, *args], capture_output=True, text=True, env=env, timeout=60)

    try:
        down = rig("sync", str(campaign.path))
        assert down.returncode == 1 and "unreachable" in down.stderr
        started = rig("influx", "start", "--state-dir", state, "--port", port, "--db", "cli")
        assert started.returncode == 0, started.stderr
        assert rig("influx", "status", "--state-dir", state, "--port", port).returncode == 0
        synced = rig("sync", str(campaign.path))
        assert synced.returncode == 0 and f"written {len(campaign.run_ids)} runs" in synced.stdout
        assert "written 0 runs" in rig("sync", str(campaign.path)).stdout
        assert rig("sync", str(tmp_path)).returncode == 2  # not a campaign directory
    finally:
        stopped = rig("influx", "stop", "--state-dir", state, "--port", port)
    assert "stopped" in stopped.stdout
    assert rig("influx", "status", "--state-dir", state, "--port", port).returncode == 1


def test_a_database_that_does_not_exist_yet_is_created_by_the_first_write(influxd, tmp_path, caplog):
    campaign = write_campaign(tmp_path, samples_per_series=4, repetitions=1)
    sink = Sink(InfluxConfig(url=influxd.url, db="notyet"))  # never created
    with caplog.at_level(logging.WARNING):
        result = sync(campaign.path, sink)
    assert result.ok and sorted(result.written) == sorted(campaign.run_ids), result.error
    assert "'notyet' did not exist" in caplog.text and "created it" in caplog.text
    assert {"name": "notyet"} in series_values(sink, "SHOW DATABASES")
    assert count(sink, "iface", "tx_bytes") == campaign.interface_samples
    assert count(sink, "run", "status") == campaign.runs_rows


def test_a_database_that_cannot_be_created_gets_an_error_that_says_how(influxd, tmp_path):
    campaign = write_campaign(tmp_path, samples_per_series=4, repetitions=1)
    sink = Sink(InfluxConfig(url=influxd.url, db="lab/night", token="tok-xyz-987"))  # influxd refuses the name
    result = sync(campaign.path, sink)
    assert result.written == [] and result.error
    assert "database 'lab/night' does not exist and could not be created (invalid name" in result.error
    assert "CREATE DATABASE" in result.error and "influx v1 dbrp create" in result.error
    assert "\n" not in result.error and "tok-xyz-987" not in result.error


def test_columns_write_what_line_writes_row_by_row():
    """The column-wise encoder against lineproto.line, one row at a time: escapes, nulls, NaN and
    inf left out, float32, dictionary strings, the `sub` tag of id-like columns, empty rows dropped."""
    import pyarrow as pa

    from rig.influx.lineproto import field_set
    from rig.influx.schema import generic_blocks

    table = pa.table({
        "time": [1.25, 2.5, 3.75, 5.000000001, 6.5],
        "network": ["ap 1", "a,b=c", None, "", "cell"],
        "local": ["10.0.0.1:5", None, "10.0.0.1:5", 'q"x\\y\nz', "10.0.0.2:6"],
        "kind": pa.array(["x", "y", "x", "y", "x"]).dictionary_encode(),
        "count": pa.array([1, None, -3, None, 7], pa.int64()),
        "ratio": [0.5, math.nan, math.inf, None, 12.75],
        "f32": pa.array([0.1, None, None, None, 2.5], pa.float32()),
        "flag": pa.array([True, None, False, None, None], pa.bool_()),
    })
    tags = {"campaign": "c 1", "setup": "I", "homing": "dual", "cc": None, "wifi_standard": "n5"}
    ids = {"run_id": "r-1", "campaign_id": "20240501T010000Z"}
    rows = table.to_pylist()
    subs: dict = {}
    expected = []
    for row in rows:
        sub = subs.setdefault(row["local"], len(subs))
        values = {k: row[k] for k in ("local", "count", "ratio", "f32", "flag")}
        if not field_set(values):
            continue
        expected.append(line("m,x", {**tags, "network": row["network"], "kind": row["kind"], "sub": sub},
                             {**values, **ids}, seconds_to_ns(row["time"])))
    for rows_per_block in (2, 50_000):
        blocks = list(generic_blocks("m,x", table, tags, ids, rows_per_block))
        got = b"".join(b.data for b in blocks).decode()
        assert got.splitlines() == expected and got.endswith("\n")
        assert sum(b.points for b in blocks) == len(expected) == 4


def test_gzip_and_small_batches_write_the_same_points_once(influxd, tmp_path, monkeypatch):
    from rig.influx import sink as sink_module

    monkeypatch.setattr(sink_module, "MAX_BODY_BYTES", 3000)  # blocks are cut at line ends too
    campaign = write_campaign(tmp_path, samples_per_series=6, repetitions=1)
    server.create_database(influxd.url, "gz")
    sink = Sink(InfluxConfig(url=influxd.url, db="gz", gzip=True, batch_lines=20))
    result = sync(campaign.path, sink)
    assert result.ok and sorted(result.written) == sorted(campaign.run_ids), result.error
    assert result.points == (campaign.interface_samples + campaign.lag_samples + campaign.subflow_samples
                             + campaign.runs_rows + len(campaign.run_ids))  # and one run_status point a run
    assert count(sink, "iface", "tx_bytes") == campaign.interface_samples
    assert count(sink, "subflows", "cwnd") == campaign.subflow_samples
    assert count(sink, "run", "status") == campaign.runs_rows
    assert sync(campaign.path, sink).written == []


def test_a_refused_post_in_a_batch_of_several_runs_marks_only_runs_all_in(influxd, tmp_path):
    """POSTs carry several runs' lines and two are in flight: when influxd refuses one (a field
    type conflict in one run's file), no run with points in it is marked, every marked run has
    all its points in, and the next sync writes the rest, each point once."""
    import pyarrow as pa

    campaign = write_campaign(tmp_path, samples_per_series=10, repetitions=2)
    server.create_database(influxd.url, "refused")
    sink = Sink(InfluxConfig(url=influxd.url, db="refused", batch_lines=700, writers=2))
    bad = campaign.path / "runs" / campaign.run_ids[9] / "timeseries" / "lag.parquet"
    good = pq.read_table(bad)
    pq.write_table(good.set_column(good.schema.get_field_index("samples"), "samples",
                                   pa.array([1.5] * good.num_rows)), bad)  # samples are integers in the others
    first = sync(campaign.path, sink)
    assert not first.ok and "HTTP 400" in first.error and "conflict" in first.error
    marked = {r for r in campaign.run_ids if read_marker(campaign.path / "runs" / r)}
    assert set(first.written) == marked and campaign.run_ids[9] not in marked and marked
    for run_id in marked:
        rows = series_values(sink, f"SELECT count(tx_bytes) FROM iface WHERE run_id='{run_id}'")
        assert rows[0]["count"] == campaign.interface_samples // len(campaign.run_ids), run_id

    pq.write_table(good, bad)  # the data fixed: the next sync writes what is not marked
    second = sync(campaign.path, sink)
    assert second.ok and sorted(second.written) == sorted(set(campaign.run_ids) - marked)
    assert count(sink, "iface", "tx_bytes") == campaign.interface_samples
    assert count(sink, "lag", "samples") == campaign.lag_samples
    assert count(sink, "subflows", "cwnd") == campaign.subflow_samples
    assert count(sink, "run", "status") == campaign.runs_rows
    assert sync(campaign.path, sink).written == []


def test_interface_rates_come_from_the_previous_sample_of_the_same_interface():
    import pyarrow as pa

    from rig.influx.schema import interface_blocks

    table = pa.table({  # unsorted; s1 lte0's counter goes back once (a reset: no rate there)
        "time": [2.0, 1.0, 1.0, 3.0, 2.5, 4.0],
        "host": ["s1", "s1", "s2", "s1", "s2", "s1"],
        "interface": ["lte0", "lte0", "lte0", "lte0", "lte0", "lte0"],
        "path": ["lte"] * 6,
        "tx_bytes": pa.array([3000, 1000, 10, 500, None, 900], pa.int64()),
        "rx_bytes": pa.array([30, 10, 1, 40, 5, 50], pa.int64()),
    })
    ids = {"run_id": "r"}
    got = b"".join(b.data for b in interface_blocks(table, {"campaign": "c", "cc": None}, ids)).decode().splitlines()
    s1, s2 = "iface,campaign=c,host=s1,interface=lte0,path=lte", "iface,campaign=c,host=s2,interface=lte0,path=lte"
    assert got == [
        f'{s1} tx_bytes=1000i,rx_bytes=10i,run_id="r" 1000000000',
        f'{s1} tx_bytes=3000i,rx_bytes=30i,tx_rate_bps=16000,rx_rate_bps=160,run_id="r" 2000000000',
        f'{s1} tx_bytes=500i,rx_bytes=40i,rx_rate_bps=80,run_id="r" 3000000000',
        f'{s1} tx_bytes=900i,rx_bytes=50i,tx_rate_bps=3200,rx_rate_bps=80,run_id="r" 4000000000',
        f'{s2} tx_bytes=10i,rx_bytes=1i,run_id="r" 1000000000',
        f'{s2} rx_bytes=5i,rx_rate_bps=21.333333333333332,run_id="r" 2500000000',
    ]


def test_a_run_written_in_an_older_schema_is_written_again_once(influxd, tmp_path):
    """A schema change adds points (run_status, events): `rig sync` writes a run marked with an
    older schema again, and what it had is overwritten, not doubled."""
    import json

    from rig.influx.schema import SCHEMA_VERSION

    campaign = write_campaign(tmp_path, samples_per_series=4, repetitions=1)
    sink = fresh_sink(influxd, "older")
    assert sorted(sync(campaign.path, sink).written) == sorted(campaign.run_ids)
    run_dir = campaign.path / "runs" / campaign.run_ids[0]
    marker = read_marker(run_dir)
    marker[sink.config.destination]["schema"] = SCHEMA_VERSION - 1
    (run_dir / "influx.json").write_text(json.dumps(marker))
    assert sync(campaign.path, sink).written == [campaign.run_ids[0]]
    assert count(sink, "run", "status") == campaign.runs_rows
    assert count(sink, "run_status", "run_id") == len(campaign.run_ids)
    assert sync(campaign.path, sink).written == []
