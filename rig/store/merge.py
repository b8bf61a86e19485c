"""`rig campaign merge DIR... --to OUT`: campaign directories of one plan (the shards of a campaign
run on several hosts, rig.campaign.shards, or any partial runs of it) joined into one campaign
directory, every planned run exactly once.

Everything is checked before anything is written (one InputError line): the directories' plans
have the same digest and their campaign files the same settings (rig.model.campaign.
differing_setting: only a description may differ), every run they recorded is in
the plan, a run recorded by two directories has the same record in both (a copy of the same
shard) and is taken once, and every planned run is recorded by one of them (with `partial`, the
missing ones are listed and the merge is an unfinished campaign directory that `rig campaign run
--resume` completes). The merge is assembled beside OUT and renamed into place whole. Runs are
hard links to the shards' files where they share a filesystem (the store replaces files, never
rewrites them), copies elsewhere; runs.parquet is the shards' tables joined (rebuilt from a
shard's runs/ where its table lags them); metadata.json names each directory's host and runs.
"""

from __future__ import annotations

import filecmp
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from rig.core.errors import InputError
from rig.model.campaign import differing_setting, parse_campaign
from rig.store.columns import RUNS_SCHEMA, run_rows, runs_table
from rig.store.inputs import campaign_dir
from rig.store.reader import CAMPAIGN_FILE, METADATA, PLAN, RUNS_TABLE, CampaignDir
from rig.store.writer import RECORD, CampaignStore, utc_now
# Provenance that a merge keeps when every directory agrees, else lists (rig.store.provenance).
PROVENANCE = ("rig", "rig_version", "git_commit", "kernel", "tools")
SHOWN = 3  # run ids a refusal names before "and N more"


@dataclass
class Source:
    """One directory given to the merge, read."""

    dir: CampaignDir
    plan: dict
    metadata: dict
    campaign_text: str
    recorded: list[str]
    taken: list[str] = field(default_factory=list)  # the runs the merge takes from it


@dataclass
class MergeResult:
    root: Path
    planned: int
    merged: int
    missing: list[str]
    twice: list[str]  # recorded by two directories, the same record: taken once
    sources: list[Source]


def _listed(ids: list[str]) -> str:
    more = f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
    return ", ".join(ids[:SHOWN]) + more


def _source(path: Path) -> Source:
    campaign_dir(path, "DIR", needs=(CAMPAIGN_FILE, METADATA), optional=(RUNS_TABLE,))
    d = CampaignDir(path)
    if not d.plan_path.is_file():
        raise InputError(str(path), PLAN, "missing: not a campaign directory")
    text, plan = d.document(PLAN)
    if not isinstance(plan, dict) or not isinstance(plan.get("runs"), list):
        raise InputError(str(d.plan_path), "runs", "missing: not a campaign plan")
    if not plan.get("digest"):
        raise InputError(str(d.plan_path), "digest", "missing: not a plan the rig's runner wrote")
    return Source(d, plan, d.metadata(), (path / CAMPAIGN_FILE).read_text(), d.recorded_ids())


def _record_files(run_dir: Path) -> dict[str, Path]:
    """The files of a run's record, by path within the run directory."""
    out = {}
    for name in RECORD:
        p = run_dir / name
        if p.is_dir():
            out.update({f"{name}/{f.name}": f for f in sorted(p.iterdir()) if f.is_file()})
        elif p.is_file():
            out[name] = p
    return out


def _same_record(a: Path, b: Path) -> bool:
    fa, fb = _record_files(a), _record_files(b)
    return fa.keys() == fb.keys() and all(filecmp.cmp(fa[k], fb[k], shallow=False) for k in fa)


def check(dirs: list[Path], to: Path, partial: bool = False) -> tuple[list[Source], list[str], list[str]]:
    """(sources with the runs each gives, missing run ids, run ids recorded twice alike); refuses
    what cannot be merged (InputError) before anything is written."""
    to = Path(to)
    if to.exists() or to.is_symlink():
        raise InputError(str(to), "--to", "exists: the merge makes a new campaign directory")
    staging = to.with_name(f".{to.name}.creating")
    if staging.exists():
        raise InputError(str(to), "--to", f"{staging} exists: another merge to it is under way, or one was killed "
                                          "(then remove it)")
    seen: dict[Path, Path] = {}
    for d in dirs:
        real = Path(d).resolve()
        if real in seen:
            raise InputError(str(d), "DIR", f"given twice (as {seen[real]})")
        if to.resolve().is_relative_to(real):
            raise InputError(str(to), "--to", f"inside {d}: the merge goes beside the directories it joins")
        seen[real] = Path(d)
    sources = [_source(Path(d)) for d in dirs]
    first = sources[0]
    first_campaign = parse_campaign(first.campaign_text, str(first.dir.root / CAMPAIGN_FILE))
    for s in sources[1:]:
        if s.plan["digest"] != first.plan["digest"]:
            raise InputError(str(s.dir.plan_path), "digest", f"{s.plan['digest']} differs from {first.plan['digest']} "
                                                             f"of {first.dir.root}: a merge joins directories of one plan")
        changed = differing_setting(parse_campaign(s.campaign_text, str(s.dir.root / CAMPAIGN_FILE)), first_campaign)
        if changed is not None:
            raise InputError(str(s.dir.root / CAMPAIGN_FILE), "", f"differs from {first.dir.root / CAMPAIGN_FILE} in "
                                                                  f"{changed}: the directories ran different campaigns")
    planned = [r["run_id"] for r in first.plan["runs"]]
    known = set(planned)
    taken: dict[str, Source] = {}
    twice: list[str] = []
    for s in sources:
        for run_id in s.recorded:
            if run_id not in known:
                raise InputError(str(s.dir.run(run_id).path), "run_id", "not a run of the plan")
            other = taken.get(run_id)
            if other is None:
                taken[run_id] = s
                s.taken.append(run_id)
            elif _same_record(other.dir.run(run_id).path, s.dir.run(run_id).path):
                twice.append(run_id)
            else:
                clash = [r for r in s.recorded if r in taken and taken[r] is not s
                         and not _same_record(taken[r].dir.run(r).path, s.dir.run(r).path)]
                raise InputError(str(s.dir.run(run_id).path), "", f"recorded also by {other.dir.root}, differently: "
                                 f"a run is merged once (leave one of the directories out); {len(clash)} such run(s): "
                                 f"{_listed(clash)}")
    missing = [r for r in planned if r not in taken]
    if missing and not partial:
        shards = sorted({str(s.metadata.get("shard") or "whole campaign") for s in sources})
        raise InputError("DIR", "", f"{len(missing)} of {len(planned)} planned runs are recorded by none of the "
                                    f"directories ({_listed(missing)}); they hold: {', '.join(shards)}. Add the "
                                    f"directory that has them, or --partial to merge what there is")
    return sources, missing, twice


def merge(dirs: list[Path], to: Path, partial: bool = False) -> MergeResult:
    sources, missing, twice = check(dirs, to, partial)
    to = Path(to)
    first = sources[0]
    name = first.plan["campaign"]
    campaign_id = to.name.removeprefix(f"{name}-")  # as the writer names its directories

    def fill(store: CampaignStore) -> None:
        for s in sources:
            taken = set(s.taken)
            for run_id in s.taken:
                store.link_run(s.dir.run(run_id).path)
            for attempt in s.dir.attempts():  # the attempts set aside of its runs (their lag_retries count them)
                if attempt.run_id.rpartition(".")[0] in taken:
                    store.link_run(attempt.path, attempt=True)
        store.write_table(_runs_table(sources, (name, campaign_id)))

    to.parent.mkdir(parents=True, exist_ok=True)
    CampaignStore.assemble(to, first.campaign_text, {**first.plan, "campaign_id": campaign_id},
                           _metadata(sources, name, campaign_id), fill)
    return MergeResult(to, len(first.plan["runs"]), sum(len(s.taken) for s in sources), missing, twice, sources)


def _runs_table(sources: list[Source], names: tuple[str, str]) -> pa.Table:
    """runs.parquet of the merge: each source's table where it holds exactly its recorded runs in
    the current columns (filtered to the runs taken from it), else its rows rebuilt from runs/."""
    tables = []
    for s in sources:
        if not s.taken:
            continue
        table = None
        if s.dir.runs_table_path.is_file():
            t = s.dir.runs_table()
            if (t.schema.remove_metadata().equals(RUNS_SCHEMA.remove_metadata())
                    and set(pc.unique(t.column("run_id")).to_pylist()) == set(s.recorded)):
                table = t.filter(pc.is_in(t.column("run_id"), pa.array(s.taken, pa.string())))
                for column, value in zip(("campaign", "campaign_id"), names):
                    table = table.set_column(table.column_names.index(column), column,
                                             pa.repeat(pa.scalar(value, pa.string()), table.num_rows))
        if table is None:
            rows = []
            for run_id in s.taken:
                run = s.dir.run(run_id)
                rows += run_rows(run_id, names, run.params(), run.status(), run.pairs())
            table = runs_table(rows)
        tables.append(table.cast(RUNS_SCHEMA))
    if not tables:
        return RUNS_SCHEMA.empty_table()
    joined = pa.concat_tables(tables)
    return joined.take(pc.sort_indices(joined, [("run_id", "ascending"), ("pair", "ascending")])).replace_schema_metadata(
        RUNS_SCHEMA.metadata)


def _metadata(sources: list[Source], name: str, campaign_id: str) -> dict:
    """The merge's metadata.json: the provenance the directories share (a list where they differ),
    and per directory its host, shard, provenance and the runs taken from it."""
    shards = [{"directory": str(s.dir.root.resolve()), "campaign_id": s.metadata.get("campaign_id"),
               "shard": s.metadata.get("shard"), "host": s.metadata.get("host"),
               **{k: s.metadata.get(k) for k in (*PROVENANCE, "started_at")}, "runs": sorted(s.taken)}
              for s in sources]
    meta: dict = {"campaign": name, "campaign_id": campaign_id, "merged_at": utc_now()}
    for key in PROVENANCE:
        values = []
        for entry in shards:
            if entry[key] not in values:
                values.append(entry[key])
        meta[key] = values[0] if len(values) == 1 else values
    hosts = list(dict.fromkeys(str(entry["host"]) for entry in shards if entry["runs"]))
    meta["host"] = ", ".join(hosts)
    starts = sorted(str(entry["started_at"]) for entry in shards if entry["started_at"])
    meta["started_at"] = starts[0] if starts else None
    meta["shards"] = shards
    return meta
