"""Per-subflow snapshots (`ss -tinH` taken by the node agents during a run): the run's
cwnd/RTT series, the window the receiver offered, the congestion control each subflow actually
ran, and windows that cannot be real."""

from __future__ import annotations

import pyarrow as pa

from rig.congestion import parse_ss

SCHEMA = pa.schema([("time", pa.float64()), ("host", pa.string()), ("local", pa.string()), ("remote", pa.string()),
                    ("cc", pa.string()), ("cwnd", pa.int64()), ("rtt_ms", pa.float64()), ("bytes_acked", pa.int64()),
                    ("snd_wnd", pa.int64())])
DATA_BYTES = 8 * 1024  # subflows that acked less belong to iperf3's control connection or carried nothing


def subflow_rows(snapshots: dict[str, list]) -> list[dict]:
    """host -> [[t, ss output], ...]  =>  one row per MPTCP subflow per snapshot."""
    rows = []
    for host, snaps in snapshots.items():
        for t, text in snaps:
            for sock in parse_ss(text):
                if sock.get("mptcp"):
                    rows.append({"time": t, "host": host, "local": sock["local"], "remote": sock["remote"],
                                 "cc": sock.get("cc", ""), "cwnd": sock.get("cwnd"), "rtt_ms": sock.get("rtt_ms"),
                                 "bytes_acked": sock.get("bytes_acked"), "snd_wnd": sock.get("snd_wnd")})
    return rows


def of_this_run(rows: list[dict], t0: float) -> list[dict]:
    """Drop the sockets already established before the run's start time t0 (the nodes' clocks, as
    the launch): the previous run's connections, whose subflows can stay established for seconds
    while an orphaned MPTCP connection still delivers what iperf3 -n had written. Sampling starts
    before t0, so each node has at least one snapshot of what was there before."""
    before = {(r["host"], r["local"], r["remote"]) for r in rows if r["time"] < t0}
    return [r for r in rows if (r["host"], r["local"], r["remote"]) not in before]


def subflow_table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def ccs_by_host(rows: list[dict]) -> dict[str, dict[str, str]]:
    """host -> {"local->remote": cc} for the subflows that carried data."""
    out: dict[str, dict[str, str]] = {}
    for r in rows:
        if (r["bytes_acked"] or 0) >= DATA_BYTES:
            out.setdefault(r["host"], {})[f"{r['local']}->{r['remote']}"] = r["cc"]
    return out


def problems(rows: list[dict], cc: str, max_cwnd: int) -> str | None:
    """Why the subflows make a run invalid, or None."""
    wild = [r for r in rows if (r["cwnd"] or 0) > max_cwnd]
    if wild:
        r = max(wild, key=lambda r: r["cwnd"])
        return f"cwnd runaway on {r['host']} {r['local']}->{r['remote']}: {r['cwnd']} packets"
    wrong = sorted({f"{h} {flow}: {c}" for h, flows in ccs_by_host(rows).items() for flow, c in flows.items() if c != cc})
    if wrong:
        return f"subflows did not run {cc}: {'; '.join(wrong[:3])}"
    return None
