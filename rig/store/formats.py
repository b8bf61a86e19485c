"""The versions of the files the rig writes and reads back.

Each such JSON file carries a "format" field, "<kind>/<version>". A reader takes its own kind
up to the version it knows; a file without the field was written before formats were versioned
and is read as version 1. A newer or unknown format is refused (InputError, exit 2) before the
reader acts on the file: a newer rig may have changed what the fields mean.
"""

from __future__ import annotations

import json
from pathlib import Path

from rig.core.errors import InputError

PLAN = "rig-plan/1"  # a campaign directory's plan.json
RUN_STATUS = "rig-run-status/1"  # each recorded run's status.json
EXPORT = "rig-export/1"  # an exported bundle's datapackage.json


def check(doc: object, path: Path | str, current: str) -> None:
    """Refuse `doc` (read from `path`) unless its format is `current`'s kind at a version up to
    `current`'s; no format field is version 1."""
    kind, _, known = current.partition("/")
    found = doc.get("format", f"{kind}/1") if isinstance(doc, dict) else None
    name, sep, version = found.partition("/") if isinstance(found, str) else ("", "", "")
    if name == kind and sep and version.isdigit() and int(version) <= int(known):
        return
    if name == kind and sep and version.isdigit():
        raise InputError(str(path), "format", f"{found} is newer than this rig reads (up to {current}); "
                                               "use the rig that wrote it or a newer one")
    raise InputError(str(path), "format", f"unknown format {found!r}; this rig reads {current}")


def check_file(path: Path, current: str) -> None:
    """check() on the JSON file at `path`; a file that is missing or not JSON is left to the
    caller's own checks (a bundle's checksums report it)."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return
    check(doc, path, current)
