"""`rig export`: a campaign directory to a self-describing, checksummed dataset bundle.

The bundle is written to a sibling temporary directory and renamed into place at the end, so
a failed export leaves nothing half-written behind.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import Counter
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pyarrow.parquet as pq
import yaml

from analysis.studies import study_arrow_tables
from analysis import stalls
from rig.store import formats
from rig.core.errors import InputError, RigError
from rig.export import datapackage
from rig.findings.applied import export_table
from rig.export.readme import render
from rig.export.secrets import env_secret_values, find_secret, strip_secrets
from rig.export.tables import runs_table, string_values_containing, write_series, write_table
from rig.store.reader import CAMPAIGN_FILE, DOCUMENTS, METADATA, RUNS_TABLE, CampaignDir

SUMS = "SHA256SUMS"
TEXT_SUFFIXES = {".json", ".yaml", ".md", ".log", ".txt"}
REQUIRED = (*DOCUMENTS, RUNS_TABLE)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _rig_version() -> str:
    try:
        return version("mptcp-rig")
    except PackageNotFoundError:
        return "unknown"


def _load_documents(campaign: CampaignDir) -> tuple[dict, dict[str, list[str]], set[str]]:
    """campaign.yaml, plan.json, metadata.json with secret keys stripped."""
    docs: dict = {}
    removed: dict[str, list[str]] = {}
    values: set[str] = set()
    for name in DOCUMENTS:
        text, parsed = campaign.document(name)
        clean, paths, found = strip_secrets(parsed)
        docs[name] = (text, clean, bool(paths))
        if paths:
            removed[name] = paths
        values |= found
    return docs, removed, values


def export_campaign(campaign_dir: Path, to: Path) -> Path:
    campaign_dir, to = Path(campaign_dir), Path(to)
    for name in REQUIRED:
        if not (campaign_dir / name).is_file():
            raise InputError(str(campaign_dir), name, "missing: not a finished campaign directory")
    if to.exists() and not (to.is_dir() and not any(to.iterdir())):
        raise InputError(str(to), "--to", "exists and is not empty; exports are never overwritten")
    campaign = CampaignDir(campaign_dir)
    docs, removed, secrets = _load_documents(campaign)
    secrets |= env_secret_values()

    to.parent.mkdir(parents=True, exist_ok=True)
    tmp = to.with_name(f".{to.name}.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "data").mkdir(parents=True)
    try:
        resources = _write_tables(campaign, tmp)
        for name, (text, clean, had_secrets) in docs.items():
            if not had_secrets:
                (tmp / name).write_text(text)  # as given, byte for byte
            elif name.endswith(".yaml"):
                (tmp / name).write_text(yaml.safe_dump(clean, sort_keys=False))
            else:
                (tmp / name).write_text(json.dumps(clean, indent=2) + "\n")
        meta = docs[METADATA][1]
        runs = pq.read_table(tmp / "data/runs.parquet").to_pylist()
        statuses = Counter({r["run_id"]: r["status"] for r in runs}.values())  # runs, not pairs
        stalled = stalls.per_condition(runs)
        exported_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        (tmp / "datapackage.json").write_text(json.dumps({
            "format": formats.EXPORT,
            "profile": "tabular-data-package",
            "name": datapackage.package_name(f"{meta.get('campaign')}-{meta.get('campaign_id')}"),
            "title": f"MPTCP rig campaign {meta.get('campaign')} ({meta.get('campaign_id')})",
            "created": exported_at,
            "resources": resources,
        }, indent=2) + "\n")
        (tmp / "README.md").write_text(render(meta, (tmp / CAMPAIGN_FILE).read_text(), resources,
                                              statuses, removed, exported_at, f"rig {_rig_version()}", stalled))
        _refuse_leaks(tmp, secrets)
        _write_sums(tmp)
        if to.exists():
            _move_into(tmp, to)
        else:
            tmp.rename(to)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return to


def _move_into(tmp: Path, to: Path) -> None:
    """`to` is an existing empty directory (e.g. a mount point): move the contents in."""
    for p in tmp.iterdir():
        p.rename(to / p.name)
    tmp.rmdir()


def _write_tables(campaign: CampaignDir, out: Path) -> list[dict]:
    runs = runs_table(campaign)
    write_table(runs, out / "data/runs.parquet")
    written = [("runs", "data/runs.parquet", runs.schema, runs.num_rows)]
    for name, files in campaign.series_files().items():
        path = f"data/{name}.parquet"
        schema, rows = write_series(files, out / path)
        written.append((name, path, schema, rows))
    for name, table in study_arrow_tables(campaign.root).items():  # the studies' metrics (docs/studies.md)
        path = f"data/{name}.parquet"
        write_table(table, out / path)
        written.append((name, path, table.schema, table.num_rows))
    findings = export_table(campaign.root)  # the studies' claims checked on the valid runs (docs/findings.md)
    if findings is not None:
        write_table(findings, out / "data/findings.parquet")
        written.append(("findings", "data/findings.parquet", findings.schema, findings.num_rows))
    return [datapackage.resource(name, path, schema, rows, (out / path).stat().st_size,
                                 sha256_file(out / path))
            for name, path, schema, rows in written]


def _refuse_leaks(bundle: Path, secrets: set[str]) -> None:
    for path in sorted(bundle.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(bundle)
        if path.suffix in TEXT_SUFFIXES:
            if find_secret(path.read_text(errors="replace"), secrets):
                raise RigError(f"{rel}: holds a secret value; export refused")
        elif path.suffix == ".parquet":
            column = string_values_containing(path, secrets)
            if column:
                raise RigError(f"{rel}: column {column} holds a secret value; export refused")


def _write_sums(bundle: Path) -> None:
    lines = [f"{sha256_file(p)}  {p.relative_to(bundle).as_posix()}"
             for p in sorted(bundle.rglob("*")) if p.is_file() and p.name != SUMS]
    (bundle / SUMS).write_text("\n".join(lines) + "\n")


def verify(bundle: Path) -> list[str]:
    """Problems found (empty when the bundle is intact), each naming its file. A bundle of a
    format this rig cannot read is refused (InputError) before its checksums are looked at."""
    bundle = Path(bundle)
    formats.check_file(bundle / "datapackage.json", formats.EXPORT)
    sums = bundle / SUMS
    if not sums.is_file():
        return [f"{sums}: missing"]
    listed: dict[str, str] = {}
    problems = []
    for n, text in enumerate(sums.read_text().splitlines(), 1):
        digest, sep, name = text.partition("  ")
        if not sep or len(digest) != 64:
            problems.append(f"{sums}: line {n}: malformed")
            continue
        listed[name] = digest
    for name, digest in listed.items():
        path = bundle / name
        if not path.is_file():
            problems.append(f"{path}: missing")
        elif sha256_file(path) != digest:
            problems.append(f"{path}: altered (SHA-256 differs from {SUMS})")
    for path in sorted(bundle.rglob("*")):
        rel = path.relative_to(bundle).as_posix()
        if path.is_file() and path.name != SUMS and rel not in listed:
            problems.append(f"{path}: not listed in {SUMS}")
    return problems
