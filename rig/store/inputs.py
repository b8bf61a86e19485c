"""Checks of the directories a user names on the command line (`rig export`, `rig report`,
`rig sync`), made before anything is written: each problem is one InputError line."""

from __future__ import annotations

import json
from pathlib import Path

from rig.core.errors import InputError
from rig.core.yamlfile import load_yaml
from rig.store.reader import DOCUMENTS, RUNS_TABLE, CampaignDir

# What a campaign directory holds once the runner has recorded at least one run (rig.store.writer).
CAMPAIGN_FILES = (*DOCUMENTS, RUNS_TABLE)


def campaign_dir(path: Path, flag: str, needs: tuple[str, ...] = CAMPAIGN_FILES, optional: tuple[str, ...] = ()) -> Path:
    """`path` is a campaign directory with readable `needs` (JSON, YAML and Parquet are parsed),
    and readable `optional` files where they exist."""
    path = Path(path)
    if not path.exists():
        raise InputError(str(path), flag, "no such directory")
    if not path.is_dir():
        raise InputError(str(path), flag, "not a directory")
    for name in needs:
        if not (path / name).is_file():
            raise InputError(str(path), name, "missing: not a campaign directory with recorded runs")
    for name in (*needs, *optional):
        if (path / name).exists():
            _readable(path / name)
    campaign = CampaignDir(path)
    if campaign.plan_path.exists():
        if not isinstance(campaign.plan().get("runs"), list):
            raise InputError(str(campaign.plan_path), "runs", "missing: not a campaign plan")
    return path


def _readable(f: Path) -> None:
    try:
        if f.suffix == ".json":
            if not isinstance(json.loads(f.read_text()), dict):
                raise InputError(str(f), "(top level)", "expected a JSON object")
        elif f.suffix == ".yaml":
            load_yaml(f.read_text(), str(f))
        elif f.suffix == ".parquet":
            import pyarrow.parquet as pq  # only here: the CLI's input checks start without pyarrow

            pq.read_metadata(f)
    except json.JSONDecodeError as e:
        raise InputError(f"{f}:{e.lineno}:{e.colno}", "", f"not valid JSON: {e.msg}") from None
    except UnicodeDecodeError:
        raise InputError(str(f), "(file)", "not text (UTF-8)") from None
    except OSError as e:
        raise InputError(str(f), "(file)", e.strerror or str(e)) from None
    except Exception as e:  # noqa: BLE001 - pyarrow's errors: a file that is not Parquet
        if isinstance(e, InputError):
            raise
        raise InputError(str(f), "(file)", f"not a Parquet file: {e}") from None


def bundle_dir(path: Path, sums: str) -> Path:
    """`path` is an exported dataset bundle: a directory with its checksum file or its descriptor
    (a bundle that lost only its checksum file is damaged, which verifying reports: exit 1)."""
    path = Path(path)
    if not path.exists():
        raise InputError(str(path), "--verify", "no such directory")
    if not path.is_dir():
        raise InputError(str(path), "--verify", "not a directory")
    if not (path / sums).is_file() and not (path / "datapackage.json").is_file():
        raise InputError(str(path), "--verify", f"not an exported dataset (no {sums}, no datapackage.json)")
    return path
