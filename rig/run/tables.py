"""The time series a run records, as Arrow tables: interface counters, emulator lag, the
transfers' subflows and reads, the loss-aware policy's switches (the radios' per-station
metrics come from the backend: rig.run.radios)."""

from __future__ import annotations

import pyarrow as pa

from rig.model.topology import Topology


def interface_table(samples: dict[str, list], topo: Topology) -> pa.Table:
    path_of = {(i.host, i.ifname): i.path for i in topo.interfaces}
    cols: dict[str, list] = {"time": [], "host": [], "interface": [], "path": [], "tx_bytes": [], "rx_bytes": []}
    for host, rows in samples.items():
        for t, ifname, tx, rx in rows:
            cols["time"].append(t)
            cols["host"].append(host)
            cols["interface"].append(ifname)
            cols["path"].append(path_of.get((host, ifname), "other"))
            cols["tx_bytes"].append(tx)
            cols["rx_bytes"].append(rx)
    schema = pa.schema([("time", pa.float64()), ("host", pa.string()), ("interface", pa.string()), ("path", pa.string()),
                        ("tx_bytes", pa.int64()), ("rx_bytes", pa.int64())])
    return pa.Table.from_pydict(cols, schema=schema)


def lag_table(lags: dict, t0: float) -> pa.Table:
    rows = [{"time": t0, "network": n, **s} for n, s in lags.items()]
    schema = pa.schema([("time", pa.float64()), ("network", pa.string()), ("samples", pa.int64()),
                        ("p50_ms", pa.float64()), ("p99_ms", pa.float64()), ("max_ms", pa.float64()),
                        ("busy_max_ms", pa.float64()), ("cpu", pa.float64()), ("host_steal", pa.float64())])
    return pa.Table.from_pylist(rows, schema=schema)


SUBFLOW_SCHEMA = pa.schema([("time", pa.float64()), ("host", pa.string()), ("pair", pa.int32()), ("connection", pa.int32()),
                            ("local", pa.string()), ("remote", pa.string()), ("path", pa.string()),
                            ("bytes_acked", pa.int64()), ("bytes_sent", pa.int64()), ("bytes_retrans", pa.int64()),
                            ("rtt_ms", pa.float64()), ("cwnd", pa.int64()), ("ssthresh", pa.int64())])
RECEIVED_SCHEMA = pa.schema([("time", pa.float64()), ("host", pa.string()), ("pair", pa.int32()),
                             ("connection", pa.int32()), ("bytes", pa.int64())])
SWITCH_SCHEMA = pa.schema([("time", pa.float64()), ("host", pa.string()), ("pair", pa.int32()), ("path", pa.string()),
                           ("address", pa.string()), ("loss", pa.float64()), ("action", pa.string())])


def _path_by_address(topo: Topology) -> dict[str, str]:
    """A sender's address -> its path: the radio's role (wifi, lte, lte2)."""
    return {str(r.address): r.role for p in topo.pairs for r in p.radios}


def transfer_subflow_table(reports: dict[str, dict], topo: Topology) -> pa.Table:
    """The senders' own per-subflow samples (rig_transfer.py source, every 1/series_hz)."""
    pair_of = {p.sender: p.index for p in topo.pairs}
    path_of = _path_by_address(topo)
    rows = []
    for host, report in reports.items():
        for n, conn in enumerate(report["source"].get("connections") or []):
            for t, local, remote, acked, sent, retrans, rtt_ms, cwnd, ssthresh in conn.get("subflows") or []:
                rows.append({"time": t, "host": host, "pair": pair_of.get(host), "connection": n, "local": local,
                             "remote": remote, "path": path_of.get(local.rsplit(":", 1)[0], "other"),
                             "bytes_acked": acked, "bytes_sent": sent, "bytes_retrans": retrans, "rtt_ms": rtt_ms,
                             "cwnd": cwnd, "ssthresh": ssthresh})
    return pa.Table.from_pylist(rows, schema=SUBFLOW_SCHEMA)


def received_table(reports: dict[str, dict], topo: Topology) -> pa.Table:
    """The receivers' reads per interval (bytes read in the interval ending at `time`)."""
    by_sender = {p.sender: p for p in topo.pairs}
    rows = []
    for sender, report in reports.items():
        p = by_sender[sender]
        for n, conn in enumerate(report["sink"].get("connections") or []):
            for t, nbytes in conn.get("intervals") or []:
                rows.append({"time": t, "host": p.receiver, "pair": p.index, "connection": n, "bytes": nbytes})
    return pa.Table.from_pylist(rows, schema=RECEIVED_SCHEMA)


def switch_table(reports: dict[str, dict], topo: Topology) -> pa.Table:
    """What the loss-aware policy did on each sender: every switch with the loss it saw."""
    pair_of = {p.sender: p.index for p in topo.pairs}
    path_of = _path_by_address(topo)
    rows = [{"time": s["t"], "host": host, "pair": pair_of.get(host), "path": path_of.get(s["address"], "other"),
             "address": s["address"], "loss": s["loss"], "action": s["action"]}
            for host, report in reports.items() for s in report["source"].get("switches") or []]
    return pa.Table.from_pylist(rows, schema=SWITCH_SCHEMA)
