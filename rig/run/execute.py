"""One run: configure the nodes, start every sender at one instant T0, sample, collect, judge.

The rig under test is reached only through node agents, so this is the same code for the
emulated rig and the physical lab; the emulator (if any) contributes its lag and liveness.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Callable
from datetime import datetime, timezone

import pyarrow as pa

from rig.spec import Event, Limits, LossAware, Run, Tcp
from rig.topology import Topology
from rig.paths import node_plan, receive_buffer
from rig.run import timeline, transfers
from rig.run.agents import AgentPool
from rig.run.judge import judge_run
from rig.run.subflows import ccs_by_host, of_this_run, problems, subflow_rows, subflow_table
from rig.run.tables import (interface_table, lag_table, radio_table, received_table, switch_table,
                            transfer_subflow_table)
from rig.store import RunRecord

# T0 is set this far after the sources are launched: they start ahead and wait for T0 themselves,
# so it covers 1.5 x the time a recent run's launch requests took to reach every agent (~12 ms
# for 5 senders over netns) plus 1.5 x the slowest source's start-up in that run (its launch to
# its `ready_at`: a few ms, the agent forks it; more when the host is loaded): the largest of
# the last LEAD_RUNS runs. A campaign's first run has no such measure yet: START_LEAD_FIRST_S.
START_LEAD_MIN_S, START_LEAD_FIRST_S = 0.03, 0.15
LEAD_RUNS = 3
LISTEN_TIMEOUT_S = 5.0
LAG_CUT_BEFORE_T0_S = 0.002  # the radios poll for the cut every 1 ms


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
    startup_s: float = 0.0  # the slowest source's start-up in the last run (launch -> ready to wait)
    # The T0 lead each of the last LEAD_RUNS runs would have needed (a burst of load in one run
    # must not leave the next with a lead sized from a single quick one)
    needed_leads: list = field(default_factory=list)
    # The sinks already listening for the next run, started at the end of the previous one (their
    # arguments and the receive buffer they started with), or None: started within the run.
    sinks_ready: tuple | None = None
    more_runs: bool = True  # False before a campaign's last run: no sinks are started ahead after it
    # The receivers' sockets: MPTCP. Plain TCP there makes every sender's connection fall back
    # (how the judge's fallback check is tested).
    sinks_mptcp: bool = True
    shared_clock: bool = False  # the emulated rig's nodes share the host's clock: no offsets to record
    # The campaign's run-wide settings: events on each run's clock, the loss-aware policy's, TCP's.
    events: list[Event] = field(default_factory=list)
    loss_aware: LossAware = field(default_factory=LossAware)
    tcp: Tcp = field(default_factory=Tcp)

    def apply(self, agent, op: str, **request) -> None:
        """An idempotent configuration request (`paths`, `sysctl`), sent only when it changed."""
        if self.applied.get((agent.host, op)) == request:
            return
        self.applied.pop((agent.host, op), None)
        agent.request(op, **request)
        self.applied[(agent.host, op)] = request

    def start_lead_s(self) -> float:
        if not self.needed_leads:
            return START_LEAD_FIRST_S
        return max(START_LEAD_MIN_S, *self.needed_leads)

    def ran(self, schedule_s: float, startup_s: float) -> None:
        """A run's launch took schedule_s and its slowest source started in startup_s."""
        self.schedule_s, self.startup_s = schedule_s, startup_s
        self.needed_leads = [*self.needed_leads, 1.5 * (schedule_s + startup_s)][-LEAD_RUNS:]


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds")


def _sink_setting(ctx: RunContext, run: Run) -> tuple:
    """What a run's sinks must have started with: their arguments and the receive buffer."""
    return transfers.sink_args(run, ctx.limits, ctx.sinks_mptcp), receive_buffer(run.rcvbuf_bytes)


def sinks_needed(ctx: RunContext, run: Run) -> bool:
    """Whether this run starts fresh sinks: not when the previous run already started the ones it
    needs (start_sinks_ahead)."""
    ready, ctx.sinks_ready = ctx.sinks_ready, None  # a run that fails part-way leaves none assumed
    return ready != _sink_setting(ctx, run)


def start_sink(ctx: RunContext, run: Run, agent) -> None:
    """A fresh transfer sink on a receiver (wait_listening: until it listens)."""
    agent.request("launch", key=transfers.SINK_KEY, program="transfer", args=transfers.sink_args(run, ctx.limits, ctx.sinks_mptcp),
                  at=None)


def start_sinks(ctx: RunContext, run: Run) -> None:
    """A fresh transfer sink on each receiver, unless the previous run started them (sinks_needed)."""
    if sinks_needed(ctx, run):
        ctx.agents.each([p.receiver for p in ctx.topo.pairs], lambda a: start_sink(ctx, run, a))


def start_sinks_ahead(ctx: RunContext, run: Run) -> None:
    """Once this run's sinks have reported: fresh ones with the same setting for the next run, so
    that their start (a fork by the agent, a few ms) overlaps this run's collection instead of
    the next run's configuration. They only listen until
    then; the next run checks they listen before its T0, and restarts them if it needs another
    setting (buffer, connections, timeout)."""
    if not ctx.more_runs:
        return
    start_sinks(ctx, run)
    ctx.sinks_ready = _sink_setting(ctx, run)


def wait_listening(ctx: RunContext) -> None:
    deadline = time.monotonic() + LISTEN_TIMEOUT_S
    pending = {p.receiver for p in ctx.topo.pairs}
    while pending and time.monotonic() < deadline:
        up = ctx.agents.each(sorted(pending), lambda a: a.request("listening", port=transfers.PORT)["listening"])
        pending = {h for h, ok in up.items() if not ok}
        if pending:
            time.sleep(0.01)


def _finite(stats: dict) -> dict:
    """A window with no lag samples has no percentiles: null, not NaN, in the JSON."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in stats.items()}


def tx_delta(rows: list, ifname: str) -> int:
    vals = [tx for _, i, tx, _ in rows if i == ifname and tx >= 0]
    return (vals[-1] - vals[0]) if len(vals) >= 2 else 0


def configure(ctx: RunContext, run: Run) -> None:
    """Every node at once, each agent its own requests in turn (one round instead of one per
    request): each receiver its buffer, then its sink (the buffer before the sink's socket exists:
    a listener keeps what it started with); each sender its routing for the run's homing and
    backup path, and the rig's BPF CCs' initial ssthresh. Only what changed is sent."""
    receivers = {p.receiver for p in ctx.topo.pairs}
    fresh_sinks = sinks_needed(ctx, run)
    ssthresh = ctx.tcp.initial_ssthresh or 0  # 0: the kernel's default
    cc_params = bool(ssthresh) or any(op == "cc_params" for _, op in ctx.applied)

    def node(a) -> None:
        if a.host in receivers:
            ctx.apply(a, "sysctl", values=receive_buffer(run.rcvbuf_bytes))
            if fresh_sinks:
                start_sink(ctx, run, a)
            return
        ctx.apply(a, "paths", plan=node_plan(ctx.topo, a.host, run.homing, run.backup, ctx.tcp.no_metrics_save))
        if cc_params:
            ctx.apply(a, "cc_params", initial_ssthresh=ssthresh)

    ctx.agents.each(ctx.topo.nodes, node)


def loss_aware_args(ctx: RunContext, run: Run, host: str) -> dict:
    """The loss-aware policy's settings for a sender's transfer: its paths' addresses and thresholds."""
    if run.policy != "loss-aware":
        return {}
    p = next(p for p in ctx.topo.pairs if p.sender == host)
    addresses = {"wifi": str(p.sender_wifi.address), "lte": str(p.sender_lte.address)}
    return {"loss_aware": {addresses[path]: pct / 100 for path, pct in ctx.loss_aware.threshold_pct.items()},
            "loss_window_s": ctx.loss_aware.window_s}


def start_sampling(ctx: RunContext, agent) -> None:
    senders = {p.sender for p in ctx.topo.pairs}
    agent.request("sample", ifaces=[i.ifname for i in ctx.topo.interfaces_of(agent.host)], hz=ctx.limits.sample_hz,
                  ss_hz=ctx.limits.subflow_hz if agent.host in senders else 0)


def cut_lag_windows(ctx: RunContext, when: float) -> None:
    """Have every radio start a new lag window at `when` (unix time), just before T0: a run's lag
    then covers its transfer, not the rest of the second before T0, when the sources start up."""
    if ctx.radios:
        timer = threading.Timer(max(0.0, when - time.time()), lambda: [r.flush_lag() for r in ctx.radios.values()])
        timer.daemon = True
        timer.start()


def launch(ctx: RunContext, run: Run) -> tuple[float, timeline.Scheduled | None]:
    """The sinks listening, the run's events, then every source to start at T0 (sampling has
    started: start_sampling); returns T0 and the events as scheduled."""
    topo = ctx.topo
    senders = {p.sender: p for p in topo.pairs}
    wait_listening(ctx)
    began = time.monotonic()
    t0 = time.time() + ctx.start_lead_s()
    cut_lag_windows(ctx, t0 - LAG_CUT_BEFORE_T0_S)
    events = timeline.schedule(ctx, timeline.plan(ctx.events, topo, t0)) if ctx.events else None

    def source(agent):
        p = senders[agent.host]
        bind, target = (p.sender_lte.address, p.receiver_b.address) if run.homing == "lte" else (p.sender_wifi.address, p.receiver_a.address)
        args = {**transfers.source_args(run, ctx.limits, str(bind), str(target), t0), **loss_aware_args(ctx, run, agent.host)}
        agent.request("launch", key=transfers.SOURCE_KEY, program="transfer", args=args, at=None)

    ctx.agents.each(list(senders), source)
    ctx.schedule_s = time.monotonic() - began
    return t0, events


def _event_summary(rows: list[dict]) -> dict | None:
    """How many events acted (and where), how many did not, and their worst lateness."""
    if not rows:
        return None
    late = [r["lateness_ms"] for r in rows if r["lateness_ms"] is not None]
    return {"acted": len(late), "not_acted": len(rows) - len(late), "errors": sum(1 for r in rows if r["error"]),
            "max_lateness_ms": max(late) if late else None}


def pair_row(run: Run, p, t: transfers.PairTransfer, sink: dict, samples: list, mib_before: dict, mib_after: dict) -> dict:
    """One pair's row of the run (runs.parquet): its transfer's times and bytes, what left each of
    the sender's interfaces, and what was sent more than once."""
    if run.time_based:  # goodput over the duration; a transfer of a time has no completion time
        duration, fct = run.duration_s, None
        # what arrived within the duration (the sender's queue drains after it, not counted)
        within = transfers.delivered_by(sink, t.started_at + run.duration_s) if t.started_at else 0
        goodput = within * 8 / run.duration_s if t.error is None else None
    else:  # volume x 8 / FCT: only a transfer that delivered everything has one
        duration = fct = t.fct_s
        goodput = run.volume_bytes * 8 / t.fct_s if t.fct_s and t.error is None else None
    return {
        "pair": p.index, "sender": p.sender, "receiver": p.receiver,
        "started_at": iso(t.started_at) if t.started_at else None,
        "first_byte_at": iso(t.first_byte_at) if t.first_byte_at else None,
        "last_byte_at": iso(t.last_byte_at) if t.last_byte_at else None,
        "fct_s": fct,
        "duration_s": duration,
        "goodput_bps": goodput,
        "bytes_sent": t.bytes_sent,  # what the sender wrote
        "bytes_received": t.bytes_delivered,  # what the receiver read: == volume when complete
        "bytes_wifi": tx_delta(samples, p.sender_wifi.ifname),
        "bytes_lte": tx_delta(samples, p.sender_lte.ifname),
        # What crosses the interfaces more than once: segments the subflows retransmitted, and
        # MPTCP-level reinjections (data re-sent on another subflow after an MPTCP timeout).
        "retrans_segs": mib_after.get("TcpRetransSegs", 0) - mib_before.get("TcpRetransSegs", 0),
        "reinjections": mib_after.get("MPTcpExtMPTCPRetrans", 0) - mib_before.get("MPTcpExtMPTCPRetrans", 0),
    }


def _timeseries(ctx: RunContext, run: Run, samples: dict, subflows: list, reports: dict, event_rows: list, lags: dict,
                t0: float, t_end: float) -> dict[str, pa.Table]:
    """The run's time series tables, each only when the run has its data."""
    topo = ctx.topo
    timeseries = {"interfaces": interface_table(samples, topo), "received": received_table(reports, topo),
                  "transfer_subflows": transfer_subflow_table(reports, topo)}
    if subflows:
        timeseries["subflows"] = subflow_table(subflows)
    if event_rows:
        timeseries["events"] = timeline.table(event_rows)
    if run.policy != "none":
        timeseries["switches"] = switch_table(reports, topo)
    radio = radio_table(ctx.radios, ctx.stations, t0, t_end)
    if radio is not None:
        timeseries["radio"] = radio
    if lags:
        timeseries["lag"] = lag_table(lags, t0)
    if ctx.hops:
        timeseries["hops"] = pa.Table.from_pylist([{"time": t0, **h} for h in ctx.hops])
    return timeseries


def execute_run(ctx: RunContext, run: Run, during: Callable[[float], None] | None = None) -> RunRecord:
    """The run, recorded in memory. `during(t0)` is called once the sources are launched (T0
    set): the runner stores the previous run then (rig.campaign.runner), while this one transfers."""
    topo = ctx.topo
    senders = [p.sender for p in topo.pairs]
    by_sender = {p.sender: p for p in topo.pairs}
    started_at = time.time()
    marks = [("start", time.monotonic())]

    configure(ctx, run)
    marks.append(("configure", time.monotonic()))
    mib_before = {}

    def before(a) -> None:  # each sender its counters, then every node its sampling
        if a.host in by_sender:
            mib_before[a.host] = a.request("mib")
        start_sampling(ctx, a)

    ctx.agents.each(topo.nodes, before)
    mib_before = {s: mib_before[s] for s in senders}
    # Senders and receivers time a transfer on their own clocks: their offsets bound the FCT's error.
    clocks = {} if ctx.shared_clock else ctx.agents.each(topo.nodes, lambda a: a.request("clock"))
    t0, events = launch(ctx, run)
    marks.append(("schedule", time.monotonic()))
    if during is not None:
        during(t0)

    timeout = transfers.run_timeout_s(run, ctx.limits)
    sources = ctx.agents.each(senders, lambda a: a.request("wait", key=transfers.SOURCE_KEY, timeout=timeout))
    by_receiver = ctx.agents.each([p.receiver for p in topo.pairs],
                                  lambda a: a.request("wait", key=transfers.SINK_KEY, timeout=transfers.SINK_GRACE_S))
    sinks = {s: by_receiver[by_sender[s].receiver] for s in senders}
    t_end = time.time()
    start_sinks_ahead(ctx, run)  # after t_end: nothing of this run's transfer is left to disturb
    for radio in ctx.radios.values():  # the lag up to t_end, not only up to the last whole second
        radio.flush_lag()
    marks.append(("transfer", time.monotonic()))
    mib_after = {}

    def after(a) -> dict:  # every node its samples, then each sender its counters
        sampled = a.request("unsample")
        if a.host in by_sender:
            mib_after[a.host] = a.request("mib")
        return sampled

    sampled = ctx.agents.each(topo.nodes, after)
    mib_after = {s: mib_after[s] for s in senders}
    samples = {h: r["samples"] for h, r in sampled.items()}
    subflows = of_this_run(subflow_rows({h: sampled[h]["ss"] for h in senders}), t0)

    event_rows = timeline.collect(ctx, events, t0, t_end) if events else []
    for radio in ctx.radios.values():
        radio.wait_lag(t_end)
    lags = {n: _finite(r.lag(t0, t_end).__dict__) for n, r in ctx.radios.items()}
    radios_alive = {n: r.alive() for n, r in ctx.radios.items()}

    reports, pairs, done = {}, [], {}
    ctx.ran(ctx.schedule_s, transfers.startup_s(sources.values()))
    for s in senders:
        done[s], reports[s] = transfers.pair_transfer(sources[s], sinks[s], run.volume_bytes)
        pairs.append(pair_row(run, by_sender[s], done[s], reports[s]["sink"], samples[s], mib_before[s], mib_after[s]))

    marks.append(("collect", time.monotonic()))
    verdict = judge_run(run, pairs, done, mib_before, mib_after, lags, radios_alive, ctx.limits,
                        subflow_problem=problems(subflows, run.cc, ctx.limits.max_cwnd_packets))
    starts = {s: t.started_at for s, t in done.items() if t.started_at}
    ends = [t.last_byte_at for t in done.values() if t.last_byte_at]
    details = {
        "t0": iso(t0),
        "start_spread_ms": round((max(starts.values()) - min(starts.values())) * 1000, 3) if starts else None,
        "start_late_ms": {s: round((t - t0) * 1000, 3) for s, t in starts.items()},
        "transfer_s": round(max(ends) - t0, 3) if ends else None,
        "lag": lags,
        "clock_offsets_ms": {h: None if c["offset_s"] is None else round(c["offset_s"] * 1000, 3) for h, c in clocks.items()},
        "impaired_hops": [h for h in ctx.hops if h["impaired"]],
        "events": _event_summary(event_rows),
        "lagged": verdict.lagged,
        "subflow_ccs": ccs_by_host(subflows),
        "phases_ms": {name: round((t - marks[i][1]) * 1000, 1) for i, (name, t) in enumerate(marks[1:])},
        "mib_delta": {s: {k: mib_after[s][k] - mib_before[s].get(k, 0) for k in mib_after[s]
                          if k.startswith("MPTcpExt") and mib_after[s][k] != mib_before[s].get(k, 0)} for s in senders},
    }
    timeseries = _timeseries(ctx, run, samples, subflows, reports, event_rows, lags, t0, t_end)
    return RunRecord(
        run=run, status=verdict.status, reason=verdict.reason, started_at=iso(started_at), finished_at=iso(time.time()),
        pairs=verdict.pairs, details=details, transfers=reports, timeseries=timeseries,
        logs={f"{s}.stderr": (sources[s].get("stderr") or "") + (sinks[s].get("stderr") or "") for s in senders},
    )
