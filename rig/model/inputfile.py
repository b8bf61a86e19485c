"""A YAML file a user wrote, read into a typed model: each problem is one InputError line naming
the file, the field and the problem (the campaign file, a findings file)."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from rig.core.errors import InputError
from rig.core.yamlfile import load_yaml

M = TypeVar("M", bound=BaseModel)


def location(loc: tuple) -> str:
    """pydantic's error location as the field's path: factors.cc[2]."""
    out = ""
    for part in loc:
        if part == "[key]":  # pydantic's marker for a bad mapping key: the key itself is named already
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def parse_model(model: type[M], text: str, source: str, what: str) -> M:
    """`text` (YAML) as a `model`; `what` names the file's kind in the message for a non-mapping."""
    data = load_yaml(text, source)
    if not isinstance(data, dict):
        raise InputError(source, "(top level)", f"expected a mapping of {what} fields")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        msg = "unknown field" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
        raise InputError(source, location(tuple(err["loc"])), msg) from None


def read_input(path: Path) -> str:
    try:
        return Path(path).read_text()
    except OSError as e:
        raise InputError(str(path), "(file)", e.strerror or str(e)) from None
    except UnicodeDecodeError as e:
        raise InputError(str(path), "(file)", f"not UTF-8 text (byte {e.start})") from None
