"""One run: configure the nodes, start every sender at one instant T0, sample, collect, judge.

The rig under test is reached only through node agents, so this is the same code for the
emulated rig and the physical lab; the emulator (if any) contributes its lag and liveness.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

import pyarrow as pa

from rig.campaign.model import Limits
from rig.campaign.plan import Run
from rig.emu.topology import Topology
from rig.paths import node_plan, receive_buffer
from rig.run.agents import AgentPool
from rig.run.judge import judge_run
from rig.run.subflows import ccs_by_host, of_this_run, problems, subflow_rows, subflow_table
from rig.store import RunRecord

# T0 is set this far after the launch requests go out: twice the time the previous run's requests
# took to reach every agent (~12 ms for 5 senders over netns), plus a margin.
START_LEAD_MIN_S, START_LEAD_FIRST_S = 0.03, 0.1
IPERF_KEY = "iperf3-client"
SERVER_KEY = "iperf3-server"


@dataclass
class RunContext:
    topo: Topology
    agents: AgentPool
    limits: Limits
    radios: dict = field(default_factory=dict)  # network -> RadioProcess (emulated rig only)
    stations: dict = field(default_factory=dict)  # station TAP -> (host, interface), for radio metrics
    hops: list = field(default_factory=list)  # what is in force on each radio hop (emulated rig)
    applied: dict = field(default_factory=dict)  # (host, op) -> what it has: unchanged ones are not sent again
    schedule_s: float | None = None  # how long the last launch requests took

    def apply(self, agent, op: str, **request) -> None:
        """An idempotent configuration request (`paths`, `sysctl`), sent only when it changed."""
        if self.applied.get((agent.host, op)) == request:
            return
        self.applied.pop((agent.host, op), None)
        agent.request(op, **request)
        self.applied[(agent.host, op)] = request

    def start_lead_s(self) -> float:
        return START_LEAD_FIRST_S if self.schedule_s is None else START_LEAD_MIN_S + 2 * self.schedule_s


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds")


def client_args(run: Run, bind: str, target: str) -> dict:
    # An MPTCP iperf3 (the agent wraps it in mptcpize). bytes is the run's whole data volume,
    # split over `parallel` connections; cc is set per socket and MPTCP passes it on to every subflow.
    return {"mode": "client", "target": target, "bind": bind, "parallel": run.connections,
            "bytes": run.volume_bytes, "cc": run.cc, "connect_timeout_ms": 5000}


def start_servers(ctx: RunContext, restart: bool = False) -> None:
    """A persistent iperf3 server on each receiver (restarted when asked, or when it died)."""
    receivers = [p.receiver for p in ctx.topo.pairs]

    def ensure(agent) -> bool:
        if restart or not agent.request("alive", key=SERVER_KEY)["alive"]:
            agent.request("launch", key=SERVER_KEY, program="iperf3", args={"mode": "server"}, at=None)
            return True
        return False

    launched = ctx.agents.each(receivers, ensure)
    # A new server listens within milliseconds; check rather than trust it.
    deadline = time.monotonic() + 5
    pending = {h for h, new in launched.items() if new}
    while pending and time.monotonic() < deadline:
        up = ctx.agents.each(sorted(pending), lambda a: a.request("listening", port=5201)["listening"])
        pending = {h for h, ok in up.items() if not ok}
        if pending:
            time.sleep(0.05)


def _interface_rows(samples: dict[str, list], topo: Topology) -> pa.Table:
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


def _lag_table(lags: dict, t0: float) -> pa.Table:
    rows = [{"time": t0, "network": n, **s} for n, s in lags.items()]
    schema = pa.schema([("time", pa.float64()), ("network", pa.string()), ("samples", pa.int64()),
                        ("p50_ms", pa.float64()), ("p99_ms", pa.float64()), ("max_ms", pa.float64()),
                        ("busy_max_ms", pa.float64()), ("cpu", pa.float64())])
    return pa.Table.from_pylist(rows, schema=schema)


def _radio_table(ctx: RunContext, since: float, until: float) -> pa.Table | None:
    """Per-station per-second radio metrics of every radio network (frames, drops; LTE: SINR,
    MCS, PRBs; WiFi: retries, data rate), with the node interface each station is."""
    rows = []
    for network, proc in ctx.radios.items():
        for r in proc.station_stats(since, until):
            host, ifname = ctx.stations.get(r.get("station"), ("", ""))
            rows.append({"time": float(r["t"]), "network": network, "host": host, "interface": ifname,
                         **{k: float(v) for k, v in r.items() if k not in ("t", "station") and isinstance(v, (int, float))},
                         **{k: str(v) for k, v in r.items() if k not in ("t", "station") and isinstance(v, str)}})
    if not rows:
        return None
    keys = sorted({k for r in rows for k in r})
    return pa.Table.from_pylist([{k: r.get(k) for k in keys} for r in rows])


def _finite(stats: dict) -> dict:
    """A window with no lag samples has no percentiles: null, not NaN, in the JSON."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in stats.items()}


def tx_delta(rows: list, ifname: str) -> int:
    vals = [tx for _, i, tx, _ in rows if i == ifname and tx >= 0]
    return (vals[-1] - vals[0]) if len(vals) >= 2 else 0


def execute_run(ctx: RunContext, run: Run) -> RunRecord:
    topo = ctx.topo
    senders = [p.sender for p in topo.pairs]
    receivers = [p.receiver for p in topo.pairs]
    by_sender = {p.sender: p for p in topo.pairs}
    started_at = time.time()
    marks = [("start", time.monotonic())]

    ctx.agents.each(senders, lambda a: ctx.apply(a, "paths", plan=node_plan(topo, a.host, run.homing)))
    ctx.agents.each(receivers, lambda a: ctx.apply(a, "sysctl", values=receive_buffer(run.rcvbuf_bytes)))
    start_servers(ctx)

    marks.append(("configure", time.monotonic()))
    mib_before = ctx.agents.each(senders, lambda a: a.request("mib"))
    hz = ctx.limits.sample_hz
    ss_hz = {h: ctx.limits.subflow_hz for h in senders}
    ctx.agents.each(topo.nodes, lambda a: a.request("sample", ifaces=[i.ifname for i in topo.interfaces_of(a.host)], hz=hz,
                                                    ss_hz=ss_hz.get(a.host, 0)))

    t0 = time.time() + ctx.start_lead_s()

    def launch(agent):
        p = by_sender[agent.host]
        bind, target = (p.sender_lte.address, p.receiver_b.address) if run.homing == "lte" else (p.sender_wifi.address, p.receiver_a.address)
        agent.request("launch", key=IPERF_KEY, program="iperf3", args=client_args(run, str(bind), str(target)), at=t0)

    ctx.agents.each(senders, launch)
    marks.append(("schedule", time.monotonic()))
    ctx.schedule_s = marks[-1][1] - marks[-2][1]
    results = ctx.agents.each(senders, lambda a: a.request("wait", key=IPERF_KEY, timeout=ctx.limits.run_timeout_s))
    t_end = time.time()
    for radio in ctx.radios.values():  # the lag up to t_end, not only up to the last whole second
        radio.flush_lag()
    marks.append(("transfer", time.monotonic()))
    sampled = ctx.agents.each(topo.nodes, lambda a: a.request("unsample"))
    samples = {h: r["samples"] for h, r in sampled.items()}
    subflows = of_this_run(subflow_rows({h: sampled[h]["ss"] for h in senders}), t0)
    mib_after = ctx.agents.each(senders, lambda a: a.request("mib"))

    for radio in ctx.radios.values():
        radio.wait_lag(t_end)
    lags = {n: _finite(r.lag(t0, t_end).__dict__) for n, r in ctx.radios.items()}
    radios_alive = {n: r.alive() for n, r in ctx.radios.items()}

    iperf, pairs = {}, []
    for s in senders:
        res, p = results[s], by_sender[s]
        try:
            doc = json.loads(res.get("stdout") or "{}")
        except json.JSONDecodeError:
            doc = {"error": "iperf3 printed no JSON", "stdout": res.get("stdout", "")[-2000:]}
        doc["_rig"] = {k: res.get(k) for k in ("started_at", "ended_at", "rc", "stderr", "timed_out")}
        iperf[s] = doc
        end = doc.get("end") or {}
        recv, sent = end.get("sum_received") or {}, end.get("sum_sent") or {}
        pairs.append({
            "pair": p.index, "sender": s, "receiver": p.receiver,
            "started_at": iso(res["started_at"]) if res.get("started_at") else None,
            "duration_s": recv.get("seconds"),
            "goodput_bps": recv.get("bits_per_second"),
            "bytes_sent": sent.get("bytes"),  # what the sending application wrote
            "bytes_received": recv.get("bytes"),  # what the receiving application read by the test's end
            "bytes_wifi": tx_delta(samples[s], p.sender_wifi.ifname),
            "bytes_lte": tx_delta(samples[s], p.sender_lte.ifname),
            # What crosses the interfaces more than once: segments the subflows retransmitted, and
            # MPTCP-level reinjections (data re-sent on another subflow after an MPTCP timeout).
            "retrans_segs": mib_after[s].get("TcpRetransSegs", 0) - mib_before[s].get("TcpRetransSegs", 0),
            "reinjections": mib_after[s].get("MPTcpExtMPTCPRetrans", 0) - mib_before[s].get("MPTcpExtMPTCPRetrans", 0),
        })

    marks.append(("collect", time.monotonic()))
    verdict = judge_run(run, pairs, iperf, mib_before, mib_after, lags, radios_alive, ctx.limits,
                        subflow_problem=problems(subflows, run.cc, ctx.limits.max_cwnd_packets))
    starts = [r["started_at"] for r in results.values() if r.get("started_at")]
    ends = [r["ended_at"] for r in results.values() if r.get("ended_at")]
    details = {
        "t0": iso(t0),
        "start_spread_ms": round((max(starts) - min(starts)) * 1000, 3) if starts else None,
        "start_late_ms": {s: round((r["started_at"] - t0) * 1000, 3) for s, r in results.items() if r.get("started_at")},
        "transfer_s": round(max(ends) - t0, 3) if ends else None,
        "lag": lags,
        "impaired_hops": [h for h in ctx.hops if h["impaired"]],
        "lagged": verdict.lagged,
        "subflow_ccs": ccs_by_host(subflows),
        "phases_ms": {name: round((t - marks[i][1]) * 1000, 1) for i, (name, t) in enumerate(marks[1:])},
        "mib_delta": {s: {k: mib_after[s][k] - mib_before[s].get(k, 0) for k in mib_after[s]
                          if k.startswith("MPTcpExt") and mib_after[s][k] != mib_before[s].get(k, 0)} for s in senders},
    }
    timeseries = {"interfaces": _interface_rows(samples, topo)}
    if subflows:
        timeseries["subflows"] = subflow_table(subflows)
    radio = _radio_table(ctx, t0, t_end)
    if radio is not None:
        timeseries["radio"] = radio
    if lags:
        timeseries["lag"] = _lag_table(lags, t0)
    if ctx.hops:
        timeseries["hops"] = pa.Table.from_pylist([{"time": t0, **h} for h in ctx.hops])
    return RunRecord(
        run=run, status=verdict.status, reason=verdict.reason, started_at=iso(started_at), finished_at=iso(time.time()),
        pairs=verdict.pairs, details=details, iperf=iperf, timeseries=timeseries,
        logs={f"{s}.stderr": results[s].get("stderr") or "" for s in senders},
    )
