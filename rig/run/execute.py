"""One run: configure the nodes, start every sender at one instant T0, sample, collect, judge.

The rig under test is reached only through node agents, so this is the same code for the
emulated rig and the physical lab; the emulator (if any) contributes its lag and liveness.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Callable
from datetime import datetime, timezone

import pyarrow as pa

from rig.model.spec import Event, Limits, LossAware, Run, Tcp
from rig.model.topology import Topology
from rig.model.routing import node_plan, receive_buffer
from rig.run import joins, timeline, transfers
from rig.agents.client import AgentLost, AgentPool
from rig.run.judge import Verdict, judge_run
from rig.run.subflows import ccs_by_host, of_this_run, problems, subflow_rows, subflow_table
from rig.run.radios import NoRadios, Radios
from rig.run.watch import RunWatch, wait_program, watched
from rig.run.tables import interface_table, lag_table, received_table, switch_table, transfer_subflow_table
from rig.store import failures
from rig.store.columns import MIB_COUNTERS
from rig.store.path_stats import pair_path_stats
from rig.store.writer import RunRecord

# T0 is set this far after the launch round begins (launch): each sender's source, held with its
# sockets prepared (during the run before, or in the run's configure round), is released; the
# nodes sample and the senders' counters were read in configure. The lead covers 1.5 x
# the time a recent run took from that moment until all of it was in place (the round's replies
# and every source's `ready_at`), the largest of the last LEAD_RUNS runs, at least
# START_LEAD_MIN_S. A block's first run has no such measure yet: START_LEAD_FIRST_S, ten times
# what a release round takes on the emulated rig (2-3 ms) and many SSH round trips on the lab.
START_LEAD_MIN_S, START_LEAD_FIRST_S = 0.005, 0.05
LEAD_RUNS = 3
LISTEN_TIMEOUT_S = 5.0
# The next run's programs are prepared this long after T0 at the earliest: the senders have started.
PREPARE_AFTER_T0_S = 0.05
LAG_CUT_BEFORE_T0_S = 0.002  # the radios poll for the cut every 1 ms


@dataclass(frozen=True)
class RunSettings:
    """What every run of a campaign shares, from its file: limits, the events on each run's clock
    (a run adds those its factors imply: timeline.run_events), the loss-aware policy's and TCP's
    settings. Handed to a block's context, never written into it."""
    limits: Limits = field(default_factory=Limits)
    events: tuple[Event, ...] = ()
    loss_aware: LossAware = field(default_factory=LossAware)
    tcp: Tcp = field(default_factory=Tcp)
    manager: str = "kernel"  # the senders' path manager (campaign paths.manager)


@dataclass
class RunContext:
    """A block's rig as its runs use it (the backend builds it), the campaign's settings, and what
    each run leaves for the next in the block (written by the runs themselves: the configuration
    the nodes have, the T0 leads runs needed, the programs prepared, the port in use)."""
    topo: Topology
    agents: AgentPool
    settings: RunSettings
    radios: Radios = field(default_factory=NoRadios)  # the backend's, as a run sees them
    shared_clock: bool = False  # the emulated rig's nodes share the host's clock: no offsets to record
    # The receivers' sockets: MPTCP. Plain TCP there makes every sender's connection fall back
    # (how the judge's fallback check is tested).
    sinks_mptcp: bool = True
    applied: dict = field(default_factory=dict)  # (host, op) -> what it has: unchanged ones are not sent again
    # The T0 lead each of the last LEAD_RUNS runs would have needed: a burst of load in one run
    # must not leave the next with a lead sized from a single quick one.
    needed_leads: list = field(default_factory=list)
    prepared: str | None = None  # the run whose programs wait on `other_port(port)`, or None
    port: int = transfers.PORTS[1]  # the last run's port (a run uses the other one)

    @property
    def limits(self) -> Limits:
        return self.settings.limits

    def apply(self, agent, op: str, **request) -> None:
        """An idempotent configuration request (`paths`, `sysctl`), sent only when it changed."""
        if self.applied.get((agent.host, op)) == request:
            return
        self.applied.pop((agent.host, op), None)
        agent.request(op, **request)
        self.applied[(agent.host, op)] = request

    def assume_nothing(self) -> None:
        """After a failed run: every configuration is sent again, every program started anew."""
        self.applied.clear()
        self.prepared = None

    def start_lead_s(self) -> float:
        return max(START_LEAD_MIN_S, *self.needed_leads) if self.needed_leads else START_LEAD_FIRST_S

    def ran(self, in_place_s: float) -> None:
        """A run's launch round and sources were all in place in_place_s after its T0 was set."""
        self.needed_leads = [*self.needed_leads, 1.5 * in_place_s][-LEAD_RUNS:]


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds")


def take_port(ctx: RunContext, run: Run) -> bool:
    """The run's port (the one the last run did not use) and whether its programs were prepared
    during the last run's transfer (prepare_next): then its sinks listen and its sources wait."""
    prepared, ctx.prepared = ctx.prepared, None  # a run that fails part-way leaves none assumed
    ctx.port = transfers.other_port(ctx.port)
    return prepared == run.run_id


def start_sink(ctx: RunContext, run: Run, agent, port: int, ahead_s: float = 0.0) -> None:
    """A transfer sink on a receiver (the agent forks it: it listens a few ms later), replacing
    whatever waits under its port's key."""
    agent.request("launch", key=transfers.sink_key(port), program="transfer", at=None,
                  args=transfers.sink_args(run, ctx.limits, port, ctx.sinks_mptcp, ahead_s))


def source_launch(ctx: RunContext, run: Run, host: str, port: int) -> dict:
    """The request that starts a sender's source for the run, held until released with its T0."""
    p = next(p for p in ctx.topo.pairs if p.sender == host)
    subflows = p.subflows(run.homing, ctx.topo.mode)
    first = subflows[0]  # the initial subflow: the first radio in use to its side
    args = {**transfers.source_args(run, ctx.limits, str(first.local.address), str(first.remote.address), port,
                                    [transfers.subflow_path(s.local.address, s.remote.address, ctx.topo.mode)
                                     for s in subflows]),
            **loss_aware_args(ctx, run, host)}
    return {"op": "launch", "key": transfers.source_key(port), "program": "transfer", "args": args, "at": None}


def wait_listening(agent, port: int) -> None:
    """Until the receiver's sink listens, or LISTEN_TIMEOUT_S (then the sources' connections fail
    and say why)."""
    deadline = time.monotonic() + LISTEN_TIMEOUT_S
    while not agent.request("listening", port=port)["listening"] and time.monotonic() < deadline:
        time.sleep(0.002)


def tx_delta(rows: list, ifname: str) -> int:
    vals = [tx for _, i, tx, _ in rows if i == ifname and tx >= 0]
    return (vals[-1] - vals[0]) if len(vals) >= 2 else 0


def configure(ctx: RunContext, run: Run, prepared: bool) -> dict[str, dict]:
    """Every node at once, each agent its own requests in turn (one round instead of one per
    request): each receiver its buffer, then its sink (the buffer before the sink's socket exists:
    a listener keeps what it started with), listening before the round ends, unless it was
    prepared; each sender its routing for the run's homing and backup path, the rig's BPF CCs'
    initial ssthresh, then, unless prepared, its source, held (it replaces one held for another
    run), its counters and its sampling; each receiver its sampling. Not earlier: the run before's
    connections close after their programs have ended (MPTCP's subflows), and what they send then
    is not this run's. The launch round, whose time is in T0's lead, then only releases the
    sources. Only what changed is sent. Returns every node's MIB counters."""
    receivers = {p.receiver for p in ctx.topo.pairs}
    ssthresh = ctx.settings.tcp.initial_ssthresh or 0  # 0: the kernel's default
    cc_params = bool(ssthresh) or any(op == "cc_params" for _, op in ctx.applied)
    counters = {}

    def node(a) -> None:
        if a.host in receivers:
            ctx.apply(a, "sysctl", values=receive_buffer(run.rcvbuf_bytes, ctx.settings.tcp.rcvbuf_autotuning))
            if not prepared:
                start_sink(ctx, run, a, ctx.port)
                wait_listening(a, ctx.port)
            counters[a.host] = a.batch({"op": "mib"}, sampling(ctx, a.host))[0]
            return
        ctx.apply(a, "paths", plan=node_plan(ctx.topo, a.host, run.homing, run.backup, ctx.settings.tcp.no_metrics_save,
                                              ctx.settings.manager))
        if cc_params:
            ctx.apply(a, "cc_params", initial_ssthresh=ssthresh)
        # After its routing: a loss-aware source reads the endpoints' flags as it starts.
        start = [] if prepared else [source_launch(ctx, run, a.host, ctx.port)]
        counters[a.host] = a.batch(*start, {"op": "mib"}, sampling(ctx, a.host))[-2]

    ctx.agents.each(ctx.topo.nodes, node)
    return counters


def loss_aware_args(ctx: RunContext, run: Run, host: str) -> dict:
    """The loss-aware policy's settings for a sender's transfer: its paths' addresses and
    thresholds, and with the link measure where each path's link counters are."""
    if run.policy != "loss-aware":
        return {}
    p = next(p for p in ctx.topo.pairs if p.sender == host)
    la = ctx.settings.loss_aware
    radios = [p.radio(path) for path in la.threshold_pct if path in {r.role for r in p.radios}]
    out = {"loss_aware": {str(r.address): la.threshold_pct[r.role] / 100 for r in radios}, "loss_window_s": la.window_s}
    if la.measure == "link":
        out["loss_links"] = {str(r.address): ctx.radios.link_counters(host, r.ifname) for r in radios}
    return out


def sampling(ctx: RunContext, host: str) -> dict:
    """The request that starts a node's sampling: its interfaces' counters, a sender's sockets."""
    senders = {p.sender for p in ctx.topo.pairs}
    return {"op": "sample", "ifaces": [i.ifname for i in ctx.topo.interfaces_of(host)], "hz": ctx.limits.sample_hz,
            "ss_hz": ctx.limits.subflow_hz if host in senders else 0}


def cut_lag_windows(ctx: RunContext, when: float) -> None:
    """Have every radio start a new lag window at `when` (unix time), just before T0: a run's lag
    then covers its transfer, not the rest of the second before T0, when the sources start up."""
    ctx.radios.cut_lag(when)


@dataclass
class Launched:
    t0: float
    set_at: float  # when T0 was set (unix time)
    round_end: float  # when the launch round's replies and the events' were all in (unix time)
    events: timeline.Scheduled | None


def launch(ctx: RunContext, events: list[Event]) -> Launched:
    """T0, then one round: each sender's source released (held since configure or prepare_next;
    each receiver's sink listens, the nodes sample); then the run's events, each to act at its
    time."""
    topo = ctx.topo
    senders = [p.sender for p in topo.pairs]
    set_at = time.time()
    t0 = set_at + ctx.start_lead_s()
    cut_lag_windows(ctx, t0 - LAG_CUT_BEFORE_T0_S)
    ctx.agents.each(senders, lambda a: a.request("release", key=transfers.source_key(ctx.port), at=t0))
    # After the sampling started: an agent's `sample` drops a timeline it still holds (a failed run's).
    scheduled = timeline.schedule(ctx, timeline.plan(events, topo, t0)) if events else None
    return Launched(t0, set_at, time.time(), scheduled)


@dataclass
class Collected:
    """What the nodes hold of a run once its transfers ended."""

    samples: dict  # host -> interface counter rows
    subflows: list
    mib_after: dict  # host -> its MIB counters
    clocks: dict  # host -> the clock's offset (none on a shared clock)
    unreachable: dict  # host -> why its agent was lost during the transfer (nothing of it collected)


def finish(ctx: RunContext, run: Run, t0: float) -> tuple[dict[str, dict], Collected, RunWatch]:
    """One round, each node in one exchange: its program to its end (a sender's source, a
    receiver's sink, which may take SINK_GRACE_S longer), then at once its samples (sampling
    stops), its MIB counters, and on the lab the node's clock offset (the transfer's timing is
    on the nodes' clocks: the offsets bound an FCT's error). A node's interfaces carry only its own
    pair's traffic, so its collection at its own program's end misses nothing of the run. A part
    lost meanwhile (rig.run.watch) stops every node's program at once; every reachable node's
    samples are still collected (a node whose agent was lost has none: `unreachable`).
    The `wait` replies by host ({} for an unreachable one), what was collected, and the watch
    (why the run ended early)."""
    timeout = transfers.run_timeout_s(run, ctx.limits)
    senders = [p.sender for p in ctx.topo.pairs]
    watch = RunWatch()

    def node(agent) -> dict[str, dict]:
        sender = agent.host in senders
        key = transfers.source_key(ctx.port) if sender else transfers.sink_key(ctx.port)
        what = f"{'source' if sender else 'sink'} on {agent.host}"
        ended = wait_program(agent, key, timeout if sender else timeout + transfers.SINK_GRACE_S, watch, what,
                             ctx.port, receives=not sender)
        requests = [{"op": "unsample"}, {"op": "mib"}]
        requests += [] if ctx.shared_clock else [{"op": "clock"}]
        return {"wait": ended, **{r["op"]: reply for r, reply in zip(requests, agent.batch(*requests))}}

    replies = watched(ctx.agents, ctx.radios, ctx.topo.nodes, node, watch)
    unreachable = {h: str(r) for h, r in replies.items() if isinstance(r, Exception)}
    replies = {h: {"wait": {}, "unsample": {"samples": [], "ss": []}, "mib": {}} if h in unreachable else r
               for h, r in replies.items()}
    hosts = ctx.topo.nodes
    collected = Collected(
        samples={h: replies[h]["unsample"]["samples"] for h in hosts},
        subflows=of_this_run(subflow_rows({h: replies[h]["unsample"]["ss"] for h in senders}), t0),
        mib_after={h: replies[h]["mib"] for h in hosts},
        clocks={} if ctx.shared_clock else {h: replies[h]["clock"] for h in hosts if h not in unreachable},
        unreachable=unreachable)
    return {h: replies[h]["wait"] for h in hosts}, collected, watch


def can_prepare(run: Run, nxt: Run | None) -> bool:
    """Whether the next run's programs can be started during this run's transfer without changing
    anything this run's connections use: its receive buffer is this run's (the sysctl is read by
    every socket's autotuning, running ones too), and it has no loss-aware policy (whose source
    reads the endpoints' flags when it starts). Its path settings are applied after this run: a
    held source creates its sockets (which keep the MPTCP limits in force when they are created)
    and binds them only once released. A receiver's settings do not depend on the run, so its
    listening socket is the same under either run's."""
    return (nxt is not None and nxt.policy == "none"
            and receive_buffer(nxt.rcvbuf_bytes) == receive_buffer(run.rcvbuf_bytes))


def prepare_next(ctx: RunContext, run: Run, nxt: Run | None, t0: float) -> None:
    """During this run's transfer, one round: each receiver starts the next run's sink on the
    other port and waits until it listens; each sender forks the next run's source, which
    prepares its sockets and waits to be released with its T0 (launch). The next run's round
    between the two transfers is then only the release."""
    if not can_prepare(run, nxt):
        return
    port = transfers.other_port(ctx.port)
    time.sleep(max(0.0, t0 + PREPARE_AFTER_T0_S - time.time()))
    senders = {p.sender for p in ctx.topo.pairs}
    ahead_s = transfers.run_timeout_s(run, ctx.limits) + transfers.SINK_GRACE_S  # this run may take that long

    def node(agent) -> None:
        if agent.host in senders:
            agent.batch(source_launch(ctx, nxt, agent.host, port))
        else:
            start_sink(ctx, nxt, agent, port, ahead_s)
            wait_listening(agent, port)

    ctx.agents.each(ctx.topo.nodes, node)
    ctx.prepared = nxt.run_id


def _event_summary(rows: list[dict]) -> dict | None:
    """How many events acted (and where), how many did not, and their worst lateness."""
    if not rows:
        return None
    late = [r["lateness_ms"] for r in rows if r["lateness_ms"] is not None]
    return {"acted": len(late), "not_acted": len(rows) - len(late), "errors": sum(1 for r in rows if r["error"]),
            "max_lateness_ms": max(late) if late else None}


def counter_deltas(before: dict, after: dict) -> dict[str, int]:
    """How far each of a node's MIB counters moved during the run (empty: its agent was lost
    before they were read)."""
    return {k: after[k] - before.get(k, 0) for k in after}


def pair_row(run: Run, p, t: transfers.PairTransfer, report: dict, subflows: joins.PairSubflows, samples: list,
             mib_delta: dict[str, int], subflow_samples: list[dict]) -> dict:
    """One pair's row of the run (runs.parquet): its transfer's times and bytes, what left each of
    the sender's interfaces, what was sent more than once, how its subflows were made, and what
    they saw (`subflow_samples`: the pair's transfer_subflows rows; rig.store.path_stats)."""
    sink = report["sink"]

    def moved(counter: str) -> int | None:  # None: the sender's agent was lost before its counters were read
        return mib_delta.get(counter, 0) if mib_delta else None

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
        **{f"bytes_{kind}": sum(tx_delta(samples, r.ifname) for r in p.radios if r.path == kind) for kind in ("wifi", "lte")},
        **subflows.summary(),
        # The sender's MIB counters the runs table has columns for (rig.store.columns): what crossed
        # the interfaces more than once (segments retransmitted, MPTCP reinjections) and the path
        # manager at work (joins sent and answered, addresses announced to it).
        **{column: moved(counter) for column, counter in MIB_COUNTERS.items()},
        **pair_path_stats(subflow_samples, t.bytes_delivered),
    }


def _timeseries(ctx: RunContext, run: Run, samples: dict, subflows: list, reports: dict, paths: dict, event_rows: list,
                lags: dict, t0: float, t_end: float) -> dict[str, pa.Table]:
    """The run's time series tables, each only when the run has its data."""
    topo = ctx.topo
    timeseries = {"interfaces": interface_table(samples, topo), "received": received_table(reports, topo),
                  "transfer_subflows": transfer_subflow_table(reports, topo),
                  "subflow_life": joins.table([row for p in topo.pairs for row in paths[p.sender].rows()])}
    if subflows:
        timeseries["subflows"] = subflow_table(subflows)
    if event_rows:
        timeseries["events"] = timeline.table(event_rows)
    if run.policy != "none":
        timeseries["switches"] = switch_table(reports, topo)
    radio = ctx.radios.stats_table(t0, t_end)
    if radio is not None:
        timeseries["radio"] = radio
    if lags:
        timeseries["lag"] = lag_table(lags, t0)
    if ctx.radios.hops:
        timeseries["hops"] = pa.Table.from_pylist([{"time": t0, **h} for h in ctx.radios.hops])
    return timeseries


def execute_run(ctx: RunContext, run: Run, next_run: Run | None = None,
                during: Callable[[float], None] | None = None) -> RunRecord:
    """The run, recorded in memory. `next_run`: the block's next run, whose programs are prepared
    while this one transfers (None: none is). `during(t0)` is called once the sources are launched
    (T0 set): the runner stores the previous run then (rig.campaign.runner), while this one
    transfers."""
    topo = ctx.topo
    senders = [p.sender for p in topo.pairs]
    by_sender = {p.sender: p for p in topo.pairs}
    started_at = time.time()
    marks = [("start", time.monotonic())]

    prepared = take_port(ctx, run)
    mib_before = configure(ctx, run, prepared)
    marks.append(("configure", time.monotonic()))
    launched = launch(ctx, timeline.run_events(list(ctx.settings.events), run))
    t0, events = launched.t0, launched.events
    marks.append(("schedule", time.monotonic()))
    if during is not None:
        during(t0)
    try:
        prepare_next(ctx, run, next_run, t0)
    except AgentLost:
        pass  # during the transfer: the node's wait ends the run as the lost part's, the others' samples kept

    ended, nodes, watch = finish(ctx, run, t0)
    t_end = time.time()
    ctx.radios.flush_lag()  # the lag up to t_end, not only up to the last whole second
    marks.append(("transfer", time.monotonic()))

    event_rows = timeline.collect(ctx, events, t0, t_end, set(nodes.unreachable)) if events else []
    ctx.radios.wait_lag(t_end)
    lags = ctx.radios.lag(t0, t_end)
    radios_alive = ctx.radios.alive()
    sources = {s: ended[s] for s in senders}
    sinks = {s: ended[by_sender[s].receiver] for s in senders}
    ctx.ran(max(launched.round_end, transfers.ready_at(sources.values()) or 0.0) - launched.set_at)
    mib_delta = {h: counter_deltas(mib_before.get(h, {}), after) for h, after in nodes.mib_after.items()}
    reports, pairs, done, paths = {}, [], {}, {}
    for s in senders:
        done[s], reports[s] = transfers.pair_transfer(sources[s], sinks[s], run.volume_bytes)
        paths[s] = joins.PairSubflows(reports[s]["source"], by_sender[s], by_sender[s].subflows(run.homing, topo.mode),
                                      reports[s]["sink"], mib_delta.get(s), mib_delta.get(by_sender[s].receiver))
        pairs.append(pair_row(run, by_sender[s], done[s], reports[s], paths[s], nodes.samples[s], mib_delta[s],
                              transfer_subflow_table({s: reports[s]}, topo).to_pylist()))
    marks.append(("collect", time.monotonic()))

    verdict = judge_run(run, pairs, done, mib_delta, lags, radios_alive, ctx.limits,
                        crossed=topo.networks_crossed(run.homing), ended_by=watch.why, stalled=watch.stalled,
                        path_bytes={s: {r.role: tx_delta(nodes.samples[s], r.ifname) for r in by_sender[s].used(run.homing)}
                                    for s in senders},
                        subflow_problem=problems(nodes.subflows, run.cc, ctx.limits.max_cwnd_packets),
                        join_problems={s: paths[s].problem(ctx.limits) for s in senders})
    details = _details(ctx, t0, done, lags, nodes, event_rows, verdict, marks, mib_delta, prepared)
    details["failure"] = failures.of_run(verdict.status, watch.kind, not all(radios_alive.values()),
                                         any(t.timed_out for t in done.values()), verdict.lagged)
    if nodes.unreachable:  # what the reachable nodes recorded is kept, as a failed run's
        details["unreachable"] = sorted(nodes.unreachable)
    timeseries = _timeseries(ctx, run, nodes.samples, nodes.subflows, reports, paths, event_rows, lags, t0, t_end)
    return RunRecord(
        run=run, status=verdict.status, reason=verdict.reason, started_at=iso(started_at), finished_at=iso(time.time()),
        pairs=verdict.pairs, details=details, transfers=reports, timeseries=timeseries,
        logs={**{f"{s}.stderr": (sources[s].get("stderr") or "") + (sinks[s].get("stderr") or "") for s in senders},
              **stall_evidence(ended)},
    )


def stall_evidence(ended: dict[str, dict]) -> dict[str, str]:
    """A stalled run's evidence from each node (rig.run.watch), as files of its logs/: the sockets
    (`ss -tnmiM`), and the MIB counters with the programs' threads (state, wait channel, stack)."""
    logs = {}
    for host, reply in ended.items():
        if reply.get("evidence"):
            ev = reply["evidence"]
            logs[f"stall-{host}.ss"] = ev.get("ss") or ""
            logs[f"stall-{host}.json"] = json.dumps({"mib": ev.get("mib"), "programs": ev.get("programs")}, indent=1)
    return logs


def _details(ctx: RunContext, t0: float, done: dict, lags: dict, nodes: Collected, event_rows: list, verdict: Verdict,
             marks: list, mib_delta: dict, prepared: bool) -> dict:
    """The run's status.json details: T0 and the senders' start, the transfer's span, the lag,
    the clocks, the events, where the run's time went (and whether its programs were prepared
    during the run before), the MPTCP counters that moved."""
    starts = {s: t.started_at for s, t in done.items() if t.started_at}
    ends = [t.last_byte_at for t in done.values() if t.last_byte_at]
    return {
        "t0": iso(t0),
        "start_spread_ms": round((max(starts.values()) - min(starts.values())) * 1000, 3) if starts else None,
        "start_late_ms": {s: round((t - t0) * 1000, 3) for s, t in starts.items()},
        "transfer_s": round(max(ends) - t0, 3) if ends else None,
        "lag": lags,
        "clock_offsets_ms": {h: None if c["offset_s"] is None else round(c["offset_s"] * 1000, 3)
                             for h, c in nodes.clocks.items()},
        "impaired_hops": [h for h in ctx.radios.hops if h["impaired"]],
        "events": _event_summary(event_rows),
        "lagged": verdict.lagged,
        "subflow_ccs": ccs_by_host(nodes.subflows),
        "phases_ms": {name: round((t - marks[i][1]) * 1000, 1) for i, (name, t) in enumerate(marks[1:])},
        "prepared": prepared,
        "mib_delta": {h: {k: n for k, n in delta.items() if k.startswith("MPTcpExt") and n}
                      for h, delta in mib_delta.items()},
    }
