"""The Grafana dashboards the controller role provisions (grafana/dashboards/*.json): Grafana's
dashboard schema, the one data source, variables that exist, nothing secret. Their queries run
against a real campaign in tests/system/test_grafana_queries.py."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from fixtures.cli import REPO
from fixtures.grafana_queries import DASHBOARDS, DATASOURCE_UID, dashboards, queries, variables_used

CONTROLLER = REPO / "ansible" / "roles" / "controller"
NAMES = sorted(dashboards())


def test_the_overview_run_and_events_dashboards_are_there():
    assert NAMES == ["rig-events", "rig-overview", "rig-run"]
    assert sorted(d["uid"] for d in dashboards().values()) == NAMES  # the links between them use the uids


def _differences(given, parsed, path=""):
    """Where `given` has something the parsed-and-written-back dashboard has not, or another value."""
    if isinstance(given, dict):
        if not isinstance(parsed, dict):
            return [f"{path}: not an object in the schema"]
        out = []
        for key, value in given.items():
            out += ([f"{path}/{key}: not in the schema"] if key not in parsed
                    else _differences(value, parsed[key], f"{path}/{key}"))
        return out
    if isinstance(given, list):
        if not isinstance(parsed, list) or len(parsed) != len(given):
            return [f"{path}: not the same list in the schema"]
        return [d for i, (a, b) in enumerate(zip(given, parsed)) for d in _differences(a, b, f"{path}[{i}]")]
    return [] if given == parsed else [f"{path}: {given!r} read as {parsed!r}"]


@pytest.mark.parametrize("name", NAMES)
def test_each_dashboard_reads_as_grafanas_dashboard_schema(name):
    """grafana-foundation-sdk (PyPI) is Grafana's schema (Grafana 11.6) as Python models: a file
    read into them and written back keeps every key and value only if the schema has them. Left out:
    an annotation's `target`, which the schema types only for Grafana's own annotations (its
    AnnotationTarget: "this should be a regular DataQuery"); an InfluxDB annotation's query lives there."""
    from grafana_foundation_sdk.models.dashboard import Dashboard

    given = json.loads((DASHBOARDS / f"{name}.json").read_text())
    parsed = json.loads(json.dumps(Dashboard.from_json(given).to_json(),
                                   default=lambda o: o.to_json() if hasattr(o, "to_json") else str(o)))
    for ann in given["annotations"]["list"]:
        ann.pop("target", None)
    assert _differences(given, parsed) == []
    assert given["schemaVersion"] >= 39 and given["title"] and given["uid"] == name


@pytest.mark.parametrize("name", NAMES)
def test_every_query_names_the_rigs_data_source_and_defined_variables(name):
    dash = dashboards()[name]
    defined = {v["name"]: v for v in dash["templating"]["list"]}
    found = list(queries(name, dash))
    assert any(q.kind == "panel" for q in found)
    for q in found:
        for var in variables_used(q.text):
            assert var in defined, f"{q.where}: ${var} is not a variable of the dashboard"
            if defined[var].get("multi") or defined[var].get("includeAll"):  # values joined (a|b): a regex
                assert re.search(rf"=~ /\^\${var}\$/", q.text), f"{q.where}: multi-value ${var} outside a regex"
    refs = re.findall(r'"datasource": (\{[^{}]*\})', json.dumps(dash))
    assert {json.loads(r)["uid"] for r in refs} <= {DATASOURCE_UID, "-- Grafana --"}


def test_the_data_source_uid_is_the_one_the_role_provisions():
    provisioned = CONTROLLER / "templates" / "grafana-datasource.yaml.j2"
    assert f"uid: {DATASOURCE_UID}" in provisioned.read_text()
    defaults = yaml.safe_load((CONTROLLER / "defaults" / "main.yml").read_text())
    assert defaults["controller_grafana_dashboards_src_dir"].endswith("/../grafana/dashboards")


def test_nothing_secret_in_the_dashboards_or_the_provisioning_files():
    """Passwords reach Grafana only from the vault, through the role's variables."""
    texts = {p.name: p.read_text() for p in [*DASHBOARDS.glob("*.json"), *CONTROLLER.glob("templates/grafana*")]}
    for name, text in texts.items():
        assert not re.search(r"(?i)(token|apikey|api_key|basicAuthPassword)", text), name
        for line in text.splitlines():
            if re.search(r"(?i)password", line) and not line.lstrip().startswith("#"):
                assert re.search(r"\{\{ controller_grafana_\w*password( \| to_json)? \}\}", line), f"{name}: {line}"
    assert "vault_grafana_influxdb_password" in (CONTROLLER / "defaults" / "main.yml").read_text()
