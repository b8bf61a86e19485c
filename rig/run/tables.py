"""The time series a run records, as Arrow tables: interface counters, emulator lag, radio
metrics per station."""

from __future__ import annotations

import pyarrow as pa

from rig.emu.topology import Topology


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
                        ("busy_max_ms", pa.float64()), ("cpu", pa.float64())])
    return pa.Table.from_pylist(rows, schema=schema)


def radio_table(radios: dict, stations: dict, since: float, until: float) -> pa.Table | None:
    """Per-station per-second radio metrics of every radio network (frames, drops; LTE: SINR,
    MCS, PRBs; WiFi: retries, data rate), with the node interface each station is."""
    rows = []
    for network, proc in radios.items():
        for r in proc.station_stats(since, until):
            host, ifname = stations.get(r.get("station"), ("", ""))
            rows.append({"time": float(r["t"]), "network": network, "host": host, "interface": ifname,
                         **{k: float(v) for k, v in r.items() if k not in ("t", "station") and isinstance(v, (int, float))},
                         **{k: str(v) for k, v in r.items() if k not in ("t", "station") and isinstance(v, str)}})
    if not rows:
        return None
    keys = sorted({k for r in rows for k in r})
    return pa.Table.from_pylist([{k: r.get(k) for k in keys} for r in rows])
