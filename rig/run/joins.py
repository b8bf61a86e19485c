"""Each connection's subflows over their life, and whether every path a connection should use
joined in time.

The sender's transfer reports, per connection, its first SYN (`started_at`, just before
connect()), the kernel's MPTCP path manager events (created, announced, sub_established,
sub_closed with its error; rig_node.pm_events) and its subflow samples (every 1/series_hz).
From them, one row per subflow: when it was established and closed (to the event, ~0.1 ms) and
when it first carried data (to the sample period), relative to its connection's first SYN.

A real client opens its second path within a few round trips, so a dual-homed connection whose
path was not established within max(join_min_s, join_rtts x RTT) of its first SYN is invalid
whatever its length (RTT: the largest of its subflows' smallest sampled RTTs, the paths' base
round trips). A joined subflow the scheduler left idle is a result: it has no first data.
"""

from __future__ import annotations

import pyarrow as pa

from rig.model.spec import Limits
from rig.model.topology import Pair

# time: the connection's first SYN (unix s), which the other times count from
SCHEMA = pa.schema([("time", pa.float64()), ("host", pa.string()), ("pair", pa.int32()), ("connection", pa.int32()),
                    ("local", pa.string()), ("remote", pa.string()), ("path", pa.string()),
                    ("established_s", pa.float64()), ("first_data_s", pa.float64()), ("closed_s", pa.float64()),
                    ("error", pa.int32()), ("bytes_acked", pa.int64()), ("min_rtt_ms", pa.float64())])


def _addr(endpoint: str) -> str:
    return endpoint.rsplit(":", 1)[0]


def connection_subflows(conn: dict, paths: dict[str, str]) -> list[dict]:
    """One connection's subflows (`paths`: local address -> path name), ordered by when they
    were established (failed joins, never established, last)."""
    start = conn.get("started_at")
    if start is None:
        return []
    rows: dict[str, dict] = {}

    def row(local: str, remote: str) -> dict:
        return rows.setdefault(local, {"local": local, "remote": remote, "path": paths.get(_addr(local), "other"),
                                       "established_s": None, "first_data_s": None, "closed_s": None,
                                       "error": None, "bytes_acked": None, "min_rtt_ms": None})

    for e in conn.get("events") or []:
        if "local" not in e:
            continue
        r = row(e["local"], e.get("remote", ""))
        if e["event"] in ("created", "sub_established") and r["established_s"] is None:
            r["established_s"] = round(e["t"] - start, 6)
        elif e["event"] == "sub_closed":
            r["closed_s"], r["error"] = round(e["t"] - start, 6), e.get("error")
    for t, local, remote, acked, _sent, _retrans, rtt_ms, *_ in conn.get("subflows") or []:
        r = row(local, remote)
        if r["first_data_s"] is None:
            r["first_data_s"] = round(t - start, 6)
        r["bytes_acked"] = acked
        if rtt_ms and (r["min_rtt_ms"] is None or rtt_ms < r["min_rtt_ms"]):
            r["min_rtt_ms"] = rtt_ms
    never = float("inf")
    return sorted(rows.values(), key=lambda r: (never if r["established_s"] is None else r["established_s"], r["local"]))


def pair_paths(pair: Pair) -> dict[str, str]:
    """The sender's local addresses -> their path."""
    return {str(i.address): i.path for i in (pair.sender_wifi, pair.sender_lte)}


def life_rows(source: dict, host: str, pair: Pair) -> list[dict]:
    """A sender's report => the rows of every connection's subflows (the run's subflow_life)."""
    paths = pair_paths(pair)
    return [{"time": conn["started_at"], "host": host, "pair": pair.index, "connection": n, **r}
            for n, conn in enumerate(source.get("connections") or []) for r in connection_subflows(conn, paths)]


def join_bound_s(subflows: list[dict], limits: Limits) -> float:
    rtts = [r["min_rtt_ms"] for r in subflows if r["min_rtt_ms"]]
    return max(limits.join_min_s, limits.join_rtts * max(rtts, default=0.0) / 1000)


def path_joins(subflows: list[dict], path: str) -> float | None:
    """When the connection's first subflow on `path` was established (s after its first SYN)."""
    times = [r["established_s"] for r in subflows if r["path"] == path and r["established_s"] is not None]
    return min(times, default=None)


def join_problem(source: dict, pair: Pair, needed: tuple[str, ...], limits: Limits) -> str | None:
    """Why a connection of the pair did not have every one of the `needed` paths in time, or None."""
    if source.get("events_error"):
        return f"its subflows cannot be checked ({source['events_error']})"
    paths = pair_paths(pair)
    for n, conn in enumerate(source.get("connections") or []):
        if conn.get("started_at") is None or "events" not in conn:
            continue  # it never connected: the transfer's error says so
        subflows = connection_subflows(conn, paths)
        bound = join_bound_s(subflows, limits)
        for path in needed:
            at = path_joins(subflows, path)
            name = "LTE" if path == "lte" else "WiFi" if path == "wifi" else path
            if at is None:
                return f"connection {n}: its {name} subflow was never established"
            if at > bound:
                return f"connection {n}: its {name} subflow was established {at:.2f} s after its first SYN (bound {bound:.2f} s)"
    return None


def pair_summary(source: dict, pair: Pair, needed: tuple[str, ...]) -> dict:
    """runs.parquet's subflow columns of a pair: `subflows`, the fewest subflows established on
    any of its connections; `join_s`, the latest any of its connections had its last needed path
    (dual-homed runs; None when one never had it, or single-homed)."""
    paths = pair_paths(pair)
    counts, joins = [], []
    for conn in source.get("connections") or []:
        if "events" not in conn:
            continue
        subflows = connection_subflows(conn, paths)
        counts.append(sum(1 for r in subflows if r["established_s"] is not None))
        at = [path_joins(subflows, p) for p in needed]
        joins.append(None if None in at else max(at))
    return {"subflows": min(counts, default=None),
            "join_s": max(joins) if len(needed) > 1 and joins and None not in joins else None}


def table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)
