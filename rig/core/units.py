"""Human sizes and durations in campaign files: "15MB", "1000KB", "640KiB", or a plain number
of bytes; "120s", "2min", "500ms", or a plain number of seconds.

Decimal units (KB, MB, GB) are powers of 1000, as in the seeds' "MB" data volumes; binary
units (KiB, MiB, GiB) are powers of 1024.
"""

from __future__ import annotations

import re

_UNITS = {
    "": 1, "b": 1,
    "kb": 1000, "mb": 1000**2, "gb": 1000**3,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(value: int | float | str) -> int:
    """Bytes in `value`; ValueError with a readable message if it is not a size."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a size")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"{value!r} is negative")
        return int(value)
    m = _SIZE.match(str(value))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"{value!r} is not a size (use e.g. 15MB, 1000KB, 640KiB or a number of bytes)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def format_size(n: int) -> str:
    """The shortest exact decimal spelling of `n` bytes: 15000000 -> "15MB"."""
    for unit, factor in (("GB", 1000**3), ("MB", 1000**2), ("KB", 1000)):
        if n >= factor and n % factor == 0:
            return f"{n // factor}{unit}"
    return f"{n}B"


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|min|h|)\s*$")
_SECONDS = {"": 1, "s": 1, "ms": 1e-3, "min": 60, "h": 3600}


def parse_duration(value: int | float | str) -> float:
    """Seconds in `value` ("120s", "2min", "500ms", or a plain number of seconds); ValueError
    with a readable message if it is not a duration."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"{value!r} is negative")
        return float(value)
    m = _DURATION.match(str(value))
    if not m:
        raise ValueError(f"{value!r} is not a duration (use e.g. 120s, 2min, 500ms or a number of seconds)")
    return float(m.group(1)) * _SECONDS[m.group(2)]


def format_duration(seconds: float) -> str:
    """The short spelling of a duration: 120.0 -> "120s", 0.5 -> "500ms"."""
    if seconds >= 1 and float(seconds).is_integer():
        return f"{int(seconds)}s"
    return f"{round(seconds * 1000)}ms" if seconds < 1 else f"{seconds:g}s"
