"""Line protocol built column by column with Arrow compute, without a Python object per point.

A time-series file of a million rows becomes a few dozen Arrow string operations instead of a
million tag_set/field_set calls (rig.influx.lineproto stays the one-point reference: a test checks
that both write the same points). The output is `Block`s: complete lines, newline-terminated,
as the bytes the sink POSTs.

Float fields are written as Arrow formats them (the shortest text that reads back as the same
float64, e.g. "3" for 3.0, which line protocol reads as a float): the same value as repr().
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rig.influx.lineproto import escape_key, escape_measurement

ROWS_PER_BLOCK = 50_000  # bounds the memory of one file's strings


@dataclass(frozen=True)
class Block:
    data: bytes  # complete lines, each ending in "\n"
    points: int


def as_array(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def concat(*parts) -> pa.Array:
    """Element-wise concatenation, null where any part is null."""
    return pc.binary_join_element_wise(*parts, "")


def _join(*parts, sep: str = "") -> pa.Array:
    """Element-wise concatenation; null parts are left out (with their separator). The first
    part must never be null: rows where every part is null go missing (Arrow 26)."""
    return pc.binary_join_element_wise(*parts, sep, null_handling="skip")


def _escape_key(values: pa.Array) -> pa.Array:
    """escape_key on every value (newline last: the space it becomes stays unescaped, as in escape_key)."""
    for old, new in ((",", r"\,"), ("=", r"\="), (" ", r"\ "), ("\n", " ")):
        values = pc.replace_substring(values, old, new)
    return values


def _escape_string(values: pa.Array) -> pa.Array:
    """A string field value, quoted (lineproto._STRING: backslash first, so added ones stay)."""
    for old, new in (("\\", "\\\\"), ('"', r"\""), ("\n", r"\n")):
        values = pc.replace_substring(values, old, new)
    return concat('"', values, '"')


def _as_string(values: pa.Array) -> pa.Array:
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    return values.cast(pa.string())


def time_ns(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A `time` column (float unix seconds or an Arrow timestamp) as integer nanoseconds:
    lineproto.seconds_to_ns of each value, computed per column."""
    column = as_array(column)
    if pa.types.is_timestamp(column.type):
        return column.cast(pa.timestamp("ns", tz=column.type.tz)).cast(pa.int64()).to_numpy()
    seconds = column.cast(pa.float64()).to_numpy(zero_copy_only=False)
    whole = np.floor(seconds)
    # seconds_to_ns: floor, then round() the fraction (half to even, like numpy's rint)
    return whole.astype(np.int64) * 1_000_000_000 + np.rint((seconds - whole) * 1e9).astype(np.int64)


def field_text(values: pa.Array) -> pa.Array | None:
    """lineproto.field_value for a whole column (null where nothing is written: null, NaN, inf);
    None for a type this does not handle (the caller falls back to one value at a time)."""
    t = values.type
    if pa.types.is_boolean(t):
        return pc.if_else(values, "true", "false")
    if pa.types.is_integer(t):
        return concat(values.cast(pa.string()), "i")
    if pa.types.is_floating(t):
        values = values.cast(pa.float64())  # float32 written as the float64 it is, as repr(float(v)) did
        finite = pc.is_finite(values)
        return pc.if_else(finite, values.cast(pa.string()), pa.scalar(None, pa.string()))
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_dictionary(t):
        return _escape_string(_as_string(values))
    return None


def tag_piece(key: str, values: pa.Array) -> pa.Array:
    """',key=value' per row, null where the value is null or empty (tag_set leaves those out).
    Tags have few distinct values: each is escaped once, then taken for every row."""
    if not pa.types.is_dictionary(values.type):
        values = values.dictionary_encode()  # a null value gets a null index
    distinct = values.dictionary.cast(pa.string())
    distinct = pc.if_else(pc.equal(distinct, ""), pa.scalar(None, pa.string()), distinct)
    return concat(f",{escape_key(key)}=", _escape_key(distinct)).take(values.indices)


def tag_prefix(measurement: str, constant: dict[str, object], columns: dict[str, pa.Array]) -> str | pa.Array:
    """measurement + tag_set({**constant, **columns}) per row (keys sorted, empty values left
    out); one string when no tag comes from a column."""
    parts: list = [escape_measurement(measurement)]
    for key in sorted({**constant, **columns}):
        if key in columns:
            parts.append(tag_piece(key, columns[key]))
        else:
            v = constant[key]
            if v is not None and str(v) != "":
                parts.append(f",{escape_key(key)}={escape_key(str(v))}")
    return _join(*parts) if columns else "".join(parts)


def field_piece(key: str, text: pa.Array) -> pa.Array:
    """'key=value' per row, null where the value is."""
    return concat(f"{escape_key(key)}=", text)


def lines(prefix: str | pa.Array, fields: list[pa.Array], tail: str, ts: np.ndarray,
          rows_per_block: int = ROWS_PER_BLOCK) -> Iterator[Block]:
    """prefix + ' ' + fields (',' between, nulls left out) + tail + ' ' + ts, one line per row,
    rows without any field dropped; in blocks of at most rows_per_block lines."""
    for start in range(0, len(ts), rows_per_block):
        end = min(start + rows_per_block, len(ts))
        part = [f.slice(start, end - start) for f in fields]
        # A leading "" part: binary_join_element_wise(skip) drops rows whose parts are all null
        # (Arrow 26), so every row has one that is not; the ',' it brings is cut off again.
        field_set = _join("", *part, sep=",") if part else pa.array([""] * (end - start), pa.string())
        keep = pc.not_equal(field_set, "")
        if not pc.any(keep).as_py():
            continue
        field_set = pc.utf8_slice_codeunits(field_set, 1)
        ts_text = pa.array(ts[start:end]).cast(pa.string())
        head = prefix if isinstance(prefix, str) else prefix.slice(start, end - start)
        text = pc.filter(concat(head, " ", field_set, tail, " ", ts_text, "\n"), keep)
        yield Block(_buffer_bytes(text), len(text))


def _buffer_bytes(strings: pa.Array) -> bytes:
    """The concatenated values of a string array without nulls, straight from its buffers."""
    if len(strings) == 0:
        return b""
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int32)[strings.offset:strings.offset + len(strings) + 1]
    return strings.buffers()[2][int(offsets[0]):int(offsets[-1])].to_pybytes()


def sub_index(id_columns: list[pa.Array]) -> pa.Array:
    """Per row, the first-appearance index of its id columns' values (the `sub` tag)."""
    parts = []
    for col in id_columns:
        col = _as_string(col)
        parts.append(pc.if_else(col.is_valid(), concat("v", col), "n"))  # None and "" stay apart
    key = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, "\x1f")
    return key.dictionary_encode().indices  # the dictionary is in order of first appearance
