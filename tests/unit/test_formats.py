"""Format versions of plan.json, status.json and the export bundle: written by the store and the
exporter, refused by every reader when newer or unknown, read as version 1 when absent."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from rig.store.synthetic import write_campaign
from fixtures.run_record import SMALL_CAMPAIGN, run_record

from analysis.load import load_runs, load_series, run_outcomes
from rig.store import formats
from rig.model.campaign import parse_campaign
from rig.campaign.plan import expand
from rig.core.errors import InputError
from rig.export import export_campaign, verify
from rig.store.writer import CampaignStore

RIG = str(Path(sys.executable).with_name("rig"))


def rig(*args):
    return subprocess.run([RIG, *args], capture_output=True, text=True, timeout=120)


def set_format(path: Path, value: str | None) -> None:
    """Rewrite a JSON file's format field (None: remove it, as files written before versions)."""
    doc = json.loads(path.read_text())
    doc.pop("format", None)
    if value is not None:
        doc["format"] = value
    path.write_text(json.dumps(doc, indent=2))


def one_error_line(result, *fragments):
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and all(f in lines[0] for f in fragments), lines[0]


@pytest.mark.parametrize("doc", [{}, {"format": "rig-plan/1"}, {"runs": [], "digest": "x"}])
def test_current_or_absent_format_is_read(doc):
    formats.check(doc, "plan.json", formats.PLAN)


@pytest.mark.parametrize("found, says", [
    ("rig-plan/2", "rig-plan/2 is newer than this rig reads (up to rig-plan/1)"),
    ("rig-run-status/1", "unknown format 'rig-run-status/1'; this rig reads rig-plan/1"),
    ("rig-plan", "unknown format 'rig-plan'"),
    ("rig-plan/1.1", "unknown format 'rig-plan/1.1'"),
    (2, "unknown format 2"),
])
def test_newer_or_unknown_format_is_refused_in_one_line(found, says):
    with pytest.raises(InputError) as e:
        formats.check({"format": found}, "results/c/plan.json", formats.PLAN)
    assert str(e.value).startswith(f"results/c/plan.json: format: {says}") and "\n" not in str(e.value)


def _campaign(tmp_path):
    plan = expand(parse_campaign(SMALL_CAMPAIGN, "t"))
    store = CampaignStore.create(tmp_path, plan, SMALL_CAMPAIGN, {})
    store.write_run(run_record(plan.runs[0]))
    return plan, store


def test_store_writes_versioned_plan_and_status(tmp_path):
    plan, store = _campaign(tmp_path)
    assert json.loads((store.root / "plan.json").read_text())["format"] == formats.PLAN
    status = json.loads((store.runs_dir / plan.runs[0].run_id / "status.json").read_text())
    assert status["format"] == formats.RUN_STATUS and status["status"] == "ok"


def test_resume_reads_files_without_format_and_refuses_newer(tmp_path):
    plan, store = _campaign(tmp_path)
    plan_file, status_file = store.root / "plan.json", store.runs_dir / plan.runs[0].run_id / "status.json"
    set_format(plan_file, None)
    set_format(status_file, None)
    found = CampaignStore.find_resumable(tmp_path, plan)  # a directory from before format versions
    assert found is not None and found.root == store.root and len(found.rows()) == 1

    set_format(status_file, "rig-run-status/2")
    with pytest.raises(InputError, match=rf"^{status_file}: format: rig-run-status/2 is newer"):
        CampaignStore.find_resumable(tmp_path, plan)
    set_format(status_file, formats.RUN_STATUS)
    set_format(plan_file, "rig-plan/2")
    with pytest.raises(InputError, match=rf"^{plan_file}: format: rig-plan/2 is newer"):
        CampaignStore.find_resumable(tmp_path, plan)
    assert sorted(p.name for p in tmp_path.iterdir()) == [store.root.name]  # nothing else written


def test_analysis_load_refuses_newer_run_status_and_bundle(tmp_path):
    campaign = write_campaign(tmp_path / "results", repetitions=1, connections=(1,))
    assert len(run_outcomes(campaign.path)) == len(campaign.run_ids)  # written without format fields
    status_file = campaign.path / "runs" / campaign.run_ids[0] / "status.json"
    set_format(status_file, "rig-run-status/9")
    with pytest.raises(InputError, match=rf"^{status_file}: format: rig-run-status/9 is newer"):
        run_outcomes(campaign.path)
    set_format(status_file, None)

    bundle = export_campaign(campaign.path, tmp_path / "bundle")
    assert len(load_runs(bundle)) == campaign.runs_rows
    set_format(bundle / "datapackage.json", "other-package/1")
    for load in (load_runs, lambda b: load_series(b, "interfaces")):
        with pytest.raises(InputError, match=r"datapackage.json: format: unknown format 'other-package/1'"):
            load(bundle)


def test_report_refuses_newer_plan_and_status_and_writes_nothing(tmp_path):
    campaign = write_campaign(tmp_path / "results", repetitions=1, connections=(1,))
    plan_file = campaign.path / "plan.json"
    set_format(plan_file, "rig-plan/2")
    one_error_line(rig("report", str(campaign.path)), str(plan_file), "rig-plan/2 is newer")
    set_format(plan_file, None)
    status_file = campaign.path / "runs" / campaign.run_ids[-1] / "status.json"
    set_format(status_file, "rig-run-status/2")
    one_error_line(rig("report", str(campaign.path)), str(status_file), "rig-run-status/2 is newer")
    assert not (campaign.path / "report").exists() and not (campaign.path / ".report.partial").exists()


def test_export_writes_its_format_and_verify_refuses_newer(tmp_path):
    campaign = write_campaign(tmp_path / "results", repetitions=1, connections=(1,))
    set_format(campaign.path / "plan.json", "rig-plan/3")
    one_error_line(rig("export", str(campaign.path), "--to", str(tmp_path / "refused")), "plan.json", "rig-plan/3")
    assert not (tmp_path / "refused").exists() and not (tmp_path / ".refused.partial").exists()
    set_format(campaign.path / "plan.json", None)

    bundle = export_campaign(campaign.path, tmp_path / "bundle")
    descriptor = bundle / "datapackage.json"
    assert json.loads(descriptor.read_text())["format"] == formats.EXPORT
    assert rig("export", "--verify", str(bundle)).returncode == 0

    set_format(descriptor, "rig-export/2")
    one_error_line(rig("export", "--verify", str(bundle)), str(descriptor),
                   "rig-export/2 is newer than this rig reads (up to rig-export/1)")

    set_format(descriptor, None)  # a bundle from before format versions, its checksum made to match
    sums = bundle / "SHA256SUMS"
    digest = hashlib.sha256(descriptor.read_bytes()).hexdigest()
    sums.write_text("".join(f"{digest}  datapackage.json\n" if line.endswith("  datapackage.json") else line + "\n"
                            for line in sums.read_text().splitlines()))
    assert verify(bundle) == []
