"""`rig campaign merge`: shards of one plan joined into one campaign directory, every planned run
exactly once, which the other verbs read like any other; what cannot be merged is refused with one
line (exit 2) and nothing is written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fixtures.cli import run_rig
from rig.campaign.plan import expand
from rig.campaign.shards import Shard, shard_runs
from rig.model.campaign import parse_campaign
from rig.store.columns import runs_table
from rig.store.reader import CampaignDir
from rig.store.synthetic import synthetic_record, write_shard
from rig.store.writer import CampaignStore

TEXT = "name: mg\nsetups: [I, III]\npairs: 2\nrepetitions: 4\nseed: 3\nfactors: {homing: [dual, lte], cc: [cubic, reno]}\n"


def shards(root: Path, text: str = TEXT, count: int = 3) -> list[Path]:
    plan = expand(parse_campaign(text, "t"))
    return [write_shard(root / f"host{k}", plan, shard_runs(plan, Shard(k, count)), text, f"{k}/{count}", f"emu{k}").root
            for k in range(1, count + 1)]


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def refused(root: Path, *args: str) -> str:
    """The merge's one error line (exit 2); nothing under `root` changed."""
    before = tree(root)
    p = run_rig("campaign", "merge", *args)
    lines = p.stderr.splitlines()
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), (p.returncode, p.stderr)
    assert tree(root) == before
    return lines[0]


def test_shards_merge_into_one_campaign_directory_with_every_run_once(tmp_path):
    dirs = shards(tmp_path)
    plan = expand(parse_campaign(TEXT, "t"))
    out = tmp_path / "merged" / "mg-night"
    p = run_rig("campaign", "merge", *map(str, dirs), "--to", str(out), check=True)
    assert f"{out}: 32 of 32 planned runs from 3 directories" in p.stdout
    merged = CampaignDir(out)
    assert sorted(merged.recorded_ids()) == sorted(r.run_id for r in plan.runs)
    assert merged.plan()["digest"] == plan.digest and merged.names() == ("mg", "night")
    # runs.parquet: the shards' tables joined is what the writer builds from the merged runs/
    assert merged.runs_table().equals(runs_table(CampaignStore(out).rows()))
    assert merged.runs_table().num_rows == 64 and set(merged.runs_table().column("campaign_id").to_pylist()) == {"night"}
    meta = merged.metadata()
    assert meta["host"] == "emu1, emu2, emu3" and [s["shard"] for s in meta["shards"]] == ["1/3", "2/3", "3/3"]
    by_host = {s["host"]: set(s["runs"]) for s in meta["shards"]}
    for k, d in enumerate(dirs, start=1):
        assert by_host[f"emu{k}"] == set(CampaignDir(d).recorded_ids())
    # the shards are left as they were; the merge's files are theirs (hard links), not copies
    assert (out / "runs" / meta["shards"][0]["runs"][0] / "status.json").stat().st_nlink == 2
    assert CampaignStore.find_resumable(out.parent, plan) is None  # finished


def test_export_report_and_findings_read_a_merge_like_any_campaign_directory(tmp_path):
    out = tmp_path / "seed004-throughput-merged"  # a study's name: its claims are evaluated on the merge
    dirs = shards(tmp_path, TEXT.replace("name: mg", "name: seed004-throughput"))
    run_rig("campaign", "merge", *map(str, dirs), "--to", str(out), check=True)
    run_rig("export", str(out), "--to", str(tmp_path / "dataset"), check=True)
    assert run_rig("export", "--verify", str(tmp_path / "dataset"), check=True).stdout.strip().endswith(": ok")
    run_rig("report", str(out), check=True)
    assert (out / "report" / "index.html").is_file()
    claim = next(line for line in run_rig("findings", str(out), check=True).stdout.splitlines()
                 if line.startswith("single-tcp-rate "))
    assert "seed004-throughput" in claim and "not evaluated" not in claim, claim


def test_a_shard_whose_table_lags_its_runs_and_its_lag_attempts(tmp_path):
    dirs = shards(tmp_path)
    (dirs[1] / "runs.parquet").unlink()  # killed before its table was written: rebuilt from runs/
    store = CampaignStore(dirs[2])
    run = expand(parse_campaign(TEXT, "t")).runs[0]
    kept = store.write_attempt(synthetic_record(run))  # an attempt set aside: goes with its run
    out = tmp_path / "m"
    run_rig("campaign", "merge", *map(str, dirs), "--to", str(out), check=True)
    merged = CampaignDir(out)
    assert merged.runs_table().equals(runs_table(CampaignStore(out).rows()))
    owner = next(d for d in dirs if run.run_id in CampaignDir(d).recorded_ids())
    assert [a.run_id for a in merged.attempts()] == ([kept.name] if owner == dirs[2] else [])


def test_a_copy_of_the_same_shard_is_taken_once(tmp_path):
    dirs = shards(tmp_path)
    copy = tmp_path / "again" / dirs[0].name
    shutil.copytree(dirs[0], copy)
    (copy / "runs" / CampaignDir(copy).recorded_ids()[0] / "influx.json").write_text("{}")  # synced: not the record
    p = run_rig("campaign", "merge", *map(str, dirs), str(copy), "--to", str(tmp_path / "m"), check=True)
    n = len(CampaignDir(copy).recorded_ids())
    assert f"32 of 32 planned runs from 4 directories; {n} recorded twice alike, taken once" in p.stdout


def test_mismatched_plans_are_refused(tmp_path):
    dirs = shards(tmp_path)
    other = shards(tmp_path / "other", TEXT.replace("repetitions: 4", "repetitions: 5"))
    line = refused(tmp_path, str(dirs[0]), str(other[1]), "--to", str(tmp_path / "m"))
    assert f"{other[1] / 'plan.json'}: digest:" in line and "a merge joins directories of one plan" in line
    edited = tmp_path / "edited" / dirs[1].name
    shutil.copytree(dirs[1], edited)
    (edited / "campaign.yaml").write_text(TEXT + "limits: {max_lag_p99_ms: 50}\n")
    line = refused(tmp_path, str(dirs[0]), str(edited), "--to", str(tmp_path / "m"))
    assert f"{edited / 'campaign.yaml'}: differs from" in line


def test_a_run_recorded_twice_differently_is_refused(tmp_path):
    dirs = shards(tmp_path)
    run_id = CampaignDir(dirs[0]).recorded_ids()[0]
    twin = dirs[1] / "runs" / run_id
    shutil.copytree(dirs[0] / "runs" / run_id, twin)
    status = json.loads((twin / "status.json").read_text())
    (twin / "status.json").write_text(json.dumps({**status, "finished_at": "2026-11-27T02:00:00+00:00"}))
    line = refused(tmp_path, *map(str, dirs), "--to", str(tmp_path / "m"))
    assert f"{twin}: recorded also by {dirs[0]}, differently" in line and f"1 such run(s): {run_id}" in line


def test_missing_runs_are_listed_and_refused_unless_partial(tmp_path):
    dirs = shards(tmp_path)
    missing = CampaignDir(dirs[1]).recorded_ids()
    line = refused(tmp_path, str(dirs[0]), str(dirs[2]), "--to", str(tmp_path / "m"))
    assert f"error: DIR: {len(missing)} of 32 planned runs are recorded by none of the directories ({missing[0]}" in line
    assert "they hold: 1/3, 3/3" in line and "--partial" in line
    out = tmp_path / "results" / "mg-partial"
    p = run_rig("campaign", "merge", str(dirs[0]), str(dirs[2]), "--to", str(out), "--partial", check=True)
    assert f"{32 - len(missing)} of 32 planned runs" in p.stdout and f"{len(missing)} planned runs missing" in p.stderr
    # an unfinished campaign directory: --resume runs the missing runs into it
    plan = expand(parse_campaign(TEXT, "t"))
    assert CampaignStore.find_resumable(out.parent, plan).root == out


@pytest.mark.parametrize("case", ["to_exists", "same_dir_twice", "not_a_campaign", "no_digest", "unplanned_run"])
def test_other_refusals(tmp_path, case):
    dirs = shards(tmp_path, count=2)
    args, expect = [str(dirs[0]), str(dirs[1]), "--to", str(tmp_path / "m")], ""
    if case == "to_exists":
        args[-1], expect = str(dirs[0].parent), "--to: exists"
    elif case == "same_dir_twice":
        args[1], expect = str(dirs[0]) + "/", "DIR: given twice"
    elif case == "not_a_campaign":
        (tmp_path / "empty").mkdir()
        args[1], expect = str(tmp_path / "empty"), "campaign.yaml: missing"
    elif case == "no_digest":
        plan = json.loads((dirs[1] / "plan.json").read_text())
        (dirs[1] / "plan.json").write_text(json.dumps({k: v for k, v in plan.items() if k != "digest"}))
        expect = "plan.json: digest: missing"
    else:
        shutil.copytree(dirs[1] / "runs" / CampaignDir(dirs[1]).recorded_ids()[0], dirs[1] / "runs" / "I-bogus-01")
        expect = "I-bogus-01: run_id: not a run of the plan"
    assert expect in refused(tmp_path, *args)
