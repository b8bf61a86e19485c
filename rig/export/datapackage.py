"""datapackage.json: Frictionless (Tabular) Data Package descriptors for the exported tables.

https://specs.frictionlessdata.io/tabular-data-package/
"""

from __future__ import annotations

import re

import pyarrow as pa

from rig.store.columns import DESCRIPTIONS as RUN_DESCRIPTIONS

# What the columns of the time series and metric tables mean and their units (runs.parquet's: rig.store.columns);
# anything not listed is described by its type only.
DESCRIPTIONS = {
    **RUN_DESCRIPTIONS,  # runs.parquet's columns: rig.store.columns
    "bytes_acked": "cumulative bytes the subflow's peer acknowledged",
    "bytes_retrans": "cumulative bytes the subflow retransmitted",
    "ssthresh": "slow-start threshold, segments (2147483647: not set yet)",
    "connection": "index of the pair's connection",
    "planned": "when the event was due, Unix seconds (T0 + at_s; the controller's clock)",
    "actual": "when it took effect, Unix seconds (empty: the run ended first)",
    "lateness_ms": "actual - planned, ms",
    "at_s": "the event's time after T0 in the campaign, seconds",
    "where": "where the event acted: radio (the emulator's link) or node (the node agent)",
    "loss": "the path's loss over the policy's window when it switched (its measure's: retransmitted / sent "
            "bytes, or the link's own random drops / frames)",
    "action": "what the loss-aware policy did: backup or restore",
    "time": "sample time, Unix seconds (UTC)",
    "host": "host the sample was taken on",
    "interface": "network interface name",
    "path": "path the interface belongs to: lte, wifi or mgmt",
    "tx_bytes": "cumulative transmitted bytes counter",
    "rx_bytes": "cumulative received bytes counter",
    "network": "emulated radio network (ap1, ap2, ap3, cell)",
    "p50_ms": "median lag of the emulator behind wall clock, ms",
    "p99_ms": "99th percentile lag behind wall clock, ms",
    "max_ms": "maximum lag behind wall clock, ms",
    "busy_max_ms": "longest stretch the emulator ran events back to back without going idle, ms",
    "cpu": "cores the emulator process used (mean over the run)",
    "host_steal": "share of the host's CPU time its hypervisor took (steal) during the run, the same for every network",
    "samples": "number of lag samples in the interval",
    "local": "local address:port of the subflow",
    "remote": "remote address:port of the subflow",
    "cwnd": "congestion window, segments",
    "rtt_ms": "smoothed RTT, ms",
    "snd_wnd": "the window the subflow's receiver offers, bytes",
    "initial": "whether the subflow is its connection's first (the others are joins)",
    "ready_s": "a join's: when its path manager could first open it (the connection fully established, or its "
               "remote address announced), seconds after its connection's first SYN",
    "established_s": "when the subflow was established (the path manager's event), seconds after its connection's first SYN",
    "first_data_s": "when a sample first showed the subflow sending data, seconds after its connection's first SYN "
                    "(to the transfer's sample period)",
    "closed_s": "when the subflow closed while its connection lived, seconds after the first SYN (empty: it did not)",
    "error": "the error a closed subflow reported (errno), if any",
    "min_rtt_ms": "the subflow's smallest sampled smoothed RTT, ms",
}
PRIMARY_KEYS = {"runs": ["run_id", "pair"]}


# Arrow type predicate -> Frictionless field type, first match wins.
_TYPES = (
    (pa.types.is_boolean, "boolean"),
    (pa.types.is_integer, "integer"),
    (lambda t: pa.types.is_floating(t) or pa.types.is_decimal(t), "number"),
    (lambda t: pa.types.is_string(t) or pa.types.is_large_string(t), "string"),
    (pa.types.is_timestamp, "datetime"),
    (pa.types.is_date, "date"),
    (lambda t: pa.types.is_list(t) or pa.types.is_large_list(t), "array"),
    (lambda t: pa.types.is_struct(t) or pa.types.is_map(t), "object"),
)


def field_type(t: pa.DataType) -> str:
    if pa.types.is_dictionary(t):
        return field_type(t.value_type)
    return next((name for test, name in _TYPES if test(t)), "any")


def table_schema(name: str, schema: pa.Schema) -> dict:
    fields = []
    for f in schema:
        field = {"name": f.name, "type": field_type(f.type)}
        own = (f.metadata or {}).get(b"description")  # a table that describes its own columns wins
        if own or f.name in DESCRIPTIONS:
            field["description"] = own.decode() if own else DESCRIPTIONS[f.name]
        fields.append(field)
    out: dict = {"fields": fields}
    if name in PRIMARY_KEYS and all(k in schema.names for k in PRIMARY_KEYS[name]):
        out["primaryKey"] = PRIMARY_KEYS[name]
    return out


def package_name(text: str) -> str:
    """Frictionless names: lower-case letters, digits, '-', '_', '.'."""
    return re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-") or "dataset"


def resource(name: str, path: str, schema: pa.Schema, rows: int, size: int, sha256: str) -> dict:
    return {
        "name": package_name(name), "path": path, "profile": "tabular-data-resource",
        "format": "parquet", "mediatype": "application/vnd.apache.parquet",
        "bytes": size, "hash": f"sha256:{sha256}", "rows": rows,
        "schema": table_schema(name, schema),
    }
