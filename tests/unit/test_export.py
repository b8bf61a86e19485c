"""Dataset export and verification on a campaign directory in the run store's format."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rig.store.synthetic import SECRET_KI, SECRET_PSK, SECRET_TOKEN, write_campaign

from rig.core.errors import RigError
from rig.export import export_campaign, verify

RIG = str(Path(sys.executable).with_name("rig"))


def rig(*args, env=None):
    return subprocess.run([RIG, *args], capture_output=True, text=True, timeout=120, env=env)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("export")
    campaign = write_campaign(root / "results", with_secrets=True, started_at_as_timestamp=True)
    result = rig("export", str(campaign.path), "--to", str(root / "bundle"))
    assert result.returncode == 0, result.stderr
    return campaign, root / "bundle"


def all_bytes(bundle: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(bundle.rglob("*")) if p.is_file())


def test_bundle_tables_and_datapackage(exported):
    campaign, bundle = exported
    package = json.loads((bundle / "datapackage.json").read_text())
    resources = {r["name"]: r for r in package["resources"]}
    assert set(resources) == {"runs", "interfaces", "lag", "subflows"}
    expected_rows = {"runs": campaign.runs_rows, "interfaces": campaign.interface_samples,
                     "lag": campaign.lag_samples, "subflows": campaign.subflow_samples}
    for name, res in resources.items():
        table = pq.read_table(bundle / res["path"])
        assert table.num_rows == res["rows"] == expected_rows[name]
        assert [f["name"] for f in res["schema"]["fields"]] == table.column_names
        assert res["bytes"] == (bundle / res["path"]).stat().st_size
    types = {f["name"]: f["type"] for f in resources["interfaces"]["schema"]["fields"]}
    assert types == {"run_id": "string", "time": "number", "host": "string", "interface": "string",
                     "path": "string", "tx_bytes": "integer", "rx_bytes": "integer"}
    assert resources["runs"]["schema"]["primaryKey"] == ["run_id", "pair"]
    runs = pq.read_table(bundle / "data/runs.parquet")
    assert runs.schema.field("started_at").type == pa.timestamp("us", tz="UTC")
    series = pq.read_table(bundle / "data/interfaces.parquet")
    assert set(series.column("run_id").to_pylist()) == set(campaign.run_ids)


def test_readme_has_provenance(exported):
    _, bundle = exported
    readme = (bundle / "README.md").read_text()
    for needed in ("0123456789abcdef0123456789abcdef01234567", "rig version 0.1.0", "kernel 6.18.0-test",
                   "iperf3 3.12", "ns3 3.44.post0", "```yaml", "connections:", "1 failed, 1 invalid, 25 ok"):
        assert needed in readme


def test_secrets_are_stripped_and_named(exported):
    _, bundle = exported
    data = all_bytes(bundle)
    for secret in (SECRET_PSK, SECRET_KI, SECRET_KI[::-1], SECRET_TOKEN):
        assert secret.encode() not in data
    readme = (bundle / "README.md").read_text()
    assert "`radio.wifi.psk`" in readme and "`radio.lte.sims[0].ki`" in readme and "`influx.token`" in readme
    assert json.loads((bundle / "metadata.json").read_text())["influx"] == {"url": "http://127.0.0.1:8086"}


def test_verify_passes_then_fails_on_one_changed_byte(exported, tmp_path):
    _, bundle = exported
    assert verify(bundle) == []
    assert subprocess.run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=bundle).returncode == 0
    ok = rig("export", "--verify", str(bundle))
    assert ok.returncode == 0 and "ok" in ok.stdout

    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(bundle), str(copy)], check=True)
    target = copy / "data/interfaces.parquet"
    raw = bytearray(target.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    target.write_bytes(bytes(raw))
    bad = rig("export", "--verify", str(copy))
    assert bad.returncode == 1 and "data/interfaces.parquet: altered" in bad.stderr


def test_verify_names_missing_and_unlisted_files(exported, tmp_path):
    _, bundle = exported
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(bundle), str(copy)], check=True)
    (copy / "README.md").unlink()
    (copy / "data/extra.parquet").write_bytes(b"PAR1")
    problems = verify(copy)
    assert any(p.endswith("README.md: missing") for p in problems)
    assert any("data/extra.parquet: not listed" in p for p in problems)
    (copy / "SHA256SUMS").unlink()
    assert rig("export", "--verify", str(copy)).returncode == 1


def test_secret_value_outside_a_secret_key_refuses_export(tmp_path):
    campaign = write_campaign(tmp_path / "results", with_secrets=True, repetitions=1, connections=(1,))
    runs = pq.read_table(campaign.path / "runs.parquet")
    reasons = [f"hostapd rejected psk {SECRET_PSK}"] * runs.num_rows  # a secret leaked into a reason
    runs = runs.set_column(runs.column_names.index("reason"), "reason", pa.array(reasons))
    pq.write_table(runs, campaign.path / "runs.parquet")
    with pytest.raises(RigError, match="data/runs.parquet: column reason holds a secret"):
        export_campaign(campaign.path, tmp_path / "bundle")
    assert not (tmp_path / "bundle").exists() and not (tmp_path / ".bundle.partial").exists()


def test_token_from_environment_never_exported(tmp_path):
    campaign = write_campaign(tmp_path / "results", repetitions=1, connections=(1,))
    meta = json.loads((campaign.path / "metadata.json").read_text())
    meta["host"] = "controller-env-tok-42"  # the sink token happens to appear in a plain field
    (campaign.path / "metadata.json").write_text(json.dumps(meta))
    result = rig("export", str(campaign.path), "--to", str(tmp_path / "b"),
                 env={"RIG_INFLUX_TOKEN": "env-tok-42", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 1 and "holds a secret value; export refused" in result.stderr
    assert "env-tok-42" not in result.stderr + result.stdout


def test_bad_input_exits_2_and_writes_nothing(exported, tmp_path):
    campaign, bundle = exported
    not_campaign = rig("export", str(tmp_path), "--to", str(tmp_path / "out"))
    assert not_campaign.returncode == 2 and "campaign.yaml: missing" in not_campaign.stderr
    exists = rig("export", str(campaign.path), "--to", str(bundle))
    assert exists.returncode == 2 and "--to: exists" in exists.stderr
    assert rig("export", str(campaign.path)).returncode == 2
    assert not (tmp_path / "out").exists()


def test_leftovers_of_a_crash_are_not_exported(tmp_path):
    campaign = write_campaign(tmp_path / "results", repetitions=1, connections=(1,))
    recorded = campaign.path / "runs" / campaign.run_ids[0]
    partial = campaign.path / "runs" / f".partial-{campaign.run_ids[0]}x"
    subprocess.run(["cp", "-a", str(recorded), str(partial)], check=True)
    (partial / "status.json").unlink()
    bundle = export_campaign(campaign.path, tmp_path / "bundle")
    series = pq.read_table(bundle / "data/interfaces.parquet")
    assert series.num_rows == campaign.interface_samples
    assert set(series.column("run_id").to_pylist()) == set(campaign.run_ids)
