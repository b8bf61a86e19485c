"""Every query of the provisioned Grafana dashboards, run against a real influxd holding a real
campaign of the emulated rig (`rig campaign run`, then `rig sync`): the template variables list
the campaign, every panel returns the campaign's data with the series and tags it expects, and the
annotations are the run's events and backup switches at the times they acted.

Grafana itself cannot be installed here; its InfluxDB data source is played by
tests/fixtures/grafana_queries.py (substitution of variables as the data source does it) and the
HTTP query API of influxd 1.x, which is what the data source calls."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from fixtures.cli import run_rig
from fixtures.grafana_queries import (alias_tags, dashboards, interpolate, queries, variable_values)
from rig.influx import server
from rig.influx.config import InfluxConfig
from rig.influx.sink import Sink
from rig.store.reader import CampaignDir

pytestmark = pytest.mark.emulated

# Two short runs of two pairs: a loss step on WiFi, LTE cut and restored; the second run with the
# loss-aware policy, whose backup switches are annotations too.
CAMPAIGN = """
name: grafana
setups: [I]
pairs: 2
repetitions: 1
seed: 5
factors:
  duration: [5s]
  policy: [none, loss-aware]
events:
  - {at_s: 1.5, path: wifi, loss_pct: 30, direction: up}
  - {at_s: 2.5, path: lte, state: down}
  - {at_s: 3.5, path: lte, state: up}
limits:
  run_timeout_s: 60
  max_lag_p99_ms: 200
"""
SENDERS = ["s1", "s2"]


@pytest.fixture(scope="module")
def synced(tmp_path_factory, emulator, module_rig_prefix):
    """(campaign directory, sink): the campaign run and synced to a fresh influxd."""
    tmp = tmp_path_factory.mktemp("grafana")
    (tmp / "c.yaml").write_text(CAMPAIGN)
    run_rig("campaign", "run", str(tmp / "c.yaml"), "--out", str(tmp / "results"), "--prefix", module_rig_prefix,
            check=True)
    campaign_dir = next(d for d in (tmp / "results").iterdir() if not d.name.startswith("."))
    (tmp / "none.toml").write_text("")
    with server.running(tmp / "influxd", db="rig") as srv, pytest.MonkeyPatch.context() as env:
        for key in [k for k in os.environ if k.startswith("RIG_INFLUX_")]:
            env.delenv(key)
        env.setenv("RIG_INFLUX_URL", srv.url)
        env.setenv("RIG_INFLUX_DB", "rig")
        env.setenv("RIG_INFLUX_CONFIG", str(tmp / "none.toml"))
        synced = run_rig("sync", str(campaign_dir), check=True)
        assert "written 2 runs" in synced.stdout, synced.stdout
        yield CampaignDir(campaign_dir), Sink(InfluxConfig(url=srv.url, db="rig"))


def _ms(iso: str) -> int:
    return round(datetime.fromisoformat(iso).timestamp() * 1000)


def selections(campaign: CampaignDir) -> list[dict]:
    """The variable values a user picks: each run of the campaign, with all pairs and with each
    one, and the time range the overview's link opens the run with (its start to its end)."""
    name, cid = campaign.names()
    out = []
    for run in campaign.recorded():
        status = run.status()
        for pair in (SENDERS, *([s] for s in SENDERS)):
            out.append({"campaign": name, "campaign_id": cid, "run": run.run_id, "pair": pair,
                        "range": (_ms(status["started_at"]), _ms(status["finished_at"]))})
    return out


def ask(sink: Sink, text: str) -> dict:
    answer = sink.query(text)
    errors = [r["error"] for r in answer.get("results", []) if "error" in r]
    assert not errors, f"{text}: {errors}"
    return answer


def rows(answer: dict) -> list[dict]:
    """Every row of every series, with the series' tags."""
    out = []
    for result in answer["results"]:
        for s in result.get("series", []):
            out += [{**s.get("tags", {}), **dict(zip(s["columns"], v))} for v in s["values"]]
    return out


def test_the_variables_list_the_campaign_its_runs_and_pairs(synced):
    campaign, sink = synced
    name, cid = campaign.names()
    values = {"campaign": name, "campaign_id": cid}
    expected = {"campaign": [name], "campaign_id": [cid], "run": sorted(campaign.recorded_ids()), "pair": SENDERS}
    seen = set()
    for dash_name, dash in dashboards().items():
        for q in queries(dash_name, dash):
            if q.kind != "variable":
                continue
            got = variable_values(ask(sink, interpolate(q.text, values, 0, 0)))
            assert sorted(got) == expected[q.title], (q.where, got)
            seen.add(q.title)
    assert seen == set(expected)


def test_every_panel_query_returns_the_campaign_data_with_its_series_tags(synced):
    campaign, sink = synced
    answered: dict[str, int] = {}  # query -> selections it returned data for
    for sel in selections(campaign):
        start, end = sel["range"]
        for dash_name, dash in dashboards().items():
            for q in queries(dash_name, dash):
                if q.kind != "panel":
                    continue
                answer = ask(sink, interpolate(q.text, sel, start - 1000, end + 1000))
                series = [s for r in answer["results"] for s in r.get("series", [])]
                key = f"{dash_name}: {q.where}"
                answered.setdefault(key, 0)
                if not series:
                    continue
                answered[key] += 1
                for s in series:
                    # the tags the legend names are the series' own, set
                    assert alias_tags(q.alias) <= {k for k, v in s.get("tags", {}).items() if v}, (key, s.get("tags"))
                    assert any(v is not None for row in s["values"] for v in row[1:]), (key, s)
                    if "host" in s.get("tags", {}):
                        assert s["tags"]["host"] in sel["pair"], (key, s["tags"], sel["pair"])
    missing = [k for k, n in answered.items() if n == 0]
    assert not missing, f"queries that returned nothing for any run: {missing}"


def test_the_overview_counts_the_campaign_as_the_run_store_has_it(synced):
    campaign, sink = synced
    name, cid = campaign.names()
    sel = {"campaign": name, "campaign_id": cid}
    outcomes = [r.status() for r in campaign.recorded()]
    start = min(_ms(s["started_at"]) for s in outcomes)
    end = max(_ms(s["finished_at"]) for s in outcomes)
    panels = {q.title: q for q in queries("rig-overview", dashboards()["rig-overview"]) if q.kind == "panel"}

    def values(title: str) -> list[dict]:
        return rows(ask(sink, interpolate(panels[title].text, sel, start - 1000, end + 1000)))

    assert [r["done"] for r in values("Runs done")] == [len(outcomes)]
    assert [r["left"] for r in values("Runs left")] == [len(campaign.plan_runs()) - len(outcomes)]
    by_status = {r["status"]: r["runs"] for r in values("Runs by status")}
    assert by_status == {s: sum(o["status"] == s for o in outcomes) for s in {o["status"] for o in outcomes}}
    wall = sum((_ms(o["finished_at"]) - _ms(o["started_at"])) / 1000 for o in outcomes)
    transfer = sum(o["transfer_s"] for o in outcomes)
    [overhead] = values("Orchestration overhead")
    assert overhead["overhead"] == pytest.approx(100 * (wall - transfer) / wall, abs=0.01)
    table = values("Runs: status and reason")
    assert sorted((r["run_id"], r["status"], r["reason"]) for r in table) == sorted(
        (r.run_id, r.status()["status"], r.status()["reason"]) for r in campaign.recorded())
    lag = values("Emulator lag (p99 and max per radio network)")
    store_lag = [row for _, t in campaign.series_by_run("lag") for row in t.to_pylist()]
    assert {r["network"] for r in lag} == {r["network"] for r in store_lag}
    assert max(r["max"] for r in lag) == pytest.approx(max(r["max_ms"] for r in store_lag))


def test_the_run_views_tables_are_the_run_stores_rows(synced):
    campaign, sink = synced
    for sel in selections(campaign):
        run = campaign.run(sel["run"])
        events = pq.read_table(run.series_paths()["events"]).to_pylist()
        events = [e for e in events if e["host"] in sel["pair"]]
        switches_path = run.series_paths().get("switches")
        switches = [s for s in (pq.read_table(switches_path).to_pylist() if switches_path else [])
                    if s["host"] in sel["pair"]]
        tables = {q.title: q for q in queries("rig-events", dashboards()["rig-events"]) if q.kind == "panel"}
        got = rows(ask(sink, interpolate(tables["Events"].text, sel, *sel["range"])))
        assert sorted((r["host"], r["where"], r["what"], r["values"], r["lateness_ms"]) for r in got) == sorted(
            (e["host"], e["where"], e["what"], e["values"], e["lateness_ms"]) for e in events)
        got = rows(ask(sink, interpolate(tables["Backup switches"].text, sel, *sel["range"])))
        assert sorted((r["host"], r["action"], r["path"]) for r in got) == sorted(
            (s["host"], s["action"], s["path"]) for s in switches)
        pairs = {q.title: q for q in queries("rig-run", dashboards()["rig-run"]) if q.kind == "panel"}["Pairs of the run"]
        got = rows(ask(sink, interpolate(pairs.text, sel, *sel["range"])))
        store = [r for r in campaign.runs_rows() if r["run_id"] == sel["run"] and r["sender"] in sel["pair"]]
        assert sorted((r["sender"], r["status"], r["goodput_bps"]) for r in got) == sorted(
            (r["sender"], r["status"], r["goodput_bps"]) for r in store)
    assert any(run.series_paths().get("switches") for run in campaign.recorded()), "no backup switch to show"


def test_the_annotations_are_the_runs_events_and_switches_at_their_applied_times(synced):
    campaign, sink = synced
    for dash_name in ("rig-run", "rig-events"):
        annotations = {q.title: q for q in queries(dash_name, dashboards()[dash_name]) if q.kind == "annotation"}
        assert set(annotations) == {"Events", "Backup switches"}
        for sel in selections(campaign):
            run = campaign.run(sel["run"])
            start, end = sel["range"]
            events = [e for e in pq.read_table(run.series_paths()["events"]).to_pylist()
                      if e["host"] in sel["pair"] and e["actual"] is not None]
            q = annotations["Events"]
            got = rows(ask(sink, interpolate(q.text, sel, start - 1000, end + 1000)))
            assert len(got) == len(events) > 0, (dash_name, sel["run"], sel["pair"])
            t = q.target
            for row, event in zip(sorted(got, key=lambda r: (r["time"], r["host"], r["where"])),
                                  sorted(events, key=lambda e: (e["actual"], e["host"], e["where"]))):
                applied = datetime.fromisoformat(row["time"].replace("Z", "+00:00")).timestamp()
                assert abs(applied - event["actual"]) < 1.0
                assert row[t["textColumn"]] == event["values"] and row[t["titleColumn"]] == event["what"]
                assert all(row[c] for c in t["tagsColumn"].split(","))
                assert json.loads(row["values"])  # the event's values, as the campaign gave them
            switches_path = run.series_paths().get("switches")
            switches = [s for s in (pq.read_table(switches_path).to_pylist() if switches_path else [])
                        if s["host"] in sel["pair"]]
            q = annotations["Backup switches"]
            got = rows(ask(sink, interpolate(q.text, sel, start - 1000, end + 1000)))
            assert sorted((r["time"], r["action"]) for r in got) == sorted(
                (_iso_z(s["time"]), s["action"]) for s in switches)


def _iso_z(t: float) -> str:
    """influxd's RFC 3339 spelling of a time in seconds (nanoseconds, trailing zeros cut)."""
    from rig.influx.lineproto import seconds_to_ns

    ns = seconds_to_ns(t)
    stamp = datetime.fromtimestamp(ns // 1_000_000_000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    frac = f"{ns % 1_000_000_000:09d}".rstrip("0")
    return stamp + (f".{frac}" if frac else "") + "Z"
