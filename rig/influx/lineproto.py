"""InfluxDB line protocol: escaping and formatting of points.

https://docs.influxdata.com/influxdb/v1/write_protocols/line_protocol_reference/
"""

from __future__ import annotations

import math

import numpy as np

_MEASUREMENT = str.maketrans({",": r"\,", " ": r"\ ", "\n": " "})
_KEY = str.maketrans({",": r"\,", "=": r"\=", " ": r"\ ", "\n": " "})
_STRING = str.maketrans({'"': r"\"", "\\": r"\\", "\n": r"\n"})


def escape_measurement(name: str) -> str:
    return name.translate(_MEASUREMENT)


def escape_key(key: str) -> str:
    """Tag keys, tag values and field keys share one escaping rule."""
    return key.translate(_KEY)


def tag_set(tags: dict[str, object]) -> str:
    """',k=v,...' sorted by key (InfluxDB's recommendation); empty values are left out."""
    parts = [f",{escape_key(k)}={escape_key(str(v))}" for k, v in sorted(tags.items())
             if v is not None and str(v) != ""]
    return "".join(parts)


def field_value(v: object) -> str | None:
    """One field value in line protocol, or None when it cannot be written (null, NaN)."""
    if v is None:
        return None
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return f"{int(v)}i"
    if isinstance(v, (float, np.floating)):
        return repr(float(v)) if math.isfinite(v) else None
    return '"' + str(v).translate(_STRING) + '"'


def field_set(fields: dict[str, object]) -> str:
    """'k=v,...' without the null fields; empty when nothing can be written."""
    out = []
    for k, v in fields.items():
        value = field_value(v)
        if value is not None:
            out.append(f"{escape_key(k)}={value}")
    return ",".join(out)


def line(measurement: str, tags: dict[str, object], fields: dict[str, object], ts_ns: int) -> str | None:
    fs = field_set(fields)
    if not fs:
        return None  # a point needs at least one field
    return f"{escape_measurement(measurement)}{tag_set(tags)} {fs} {ts_ns}"


def seconds_to_ns(seconds: float) -> int:
    """Unix seconds (float) to integer nanoseconds, the same every time for the same float."""
    whole = math.floor(seconds)
    return whole * 1_000_000_000 + round((seconds - whole) * 1e9)
