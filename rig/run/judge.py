"""Deciding whether a run counts: ok, failed (it did not complete), stalled (its transfer made
no progress: rig.run.watch) or invalid (it completed, but not as configured: TCP fallback, a path
of the run's homing not established in time (rig.run.joins), a lagging emulator). The statuses
are rig.store.columns.STATUSES."""

from __future__ import annotations

from dataclasses import dataclass

from rig.model.spec import Limits, Run
from rig.run.transfers import PairTransfer
from rig.store.columns import STATUSES_WORST_FIRST

# MIB counters that mean an MPTCP connection fell back to plain TCP, by the names of
# /proc/net/netstat (kernels since 6.17 count every fallback cause: MPCapableDataFallback, the
# peer's first packet after the handshake without MPTCP options, and the others below). The
# sender's judge its pair; the receiver's say which end gave up first (MPCapableFallbackACK: it
# made the connection's socket from a segment without MP_CAPABLE, the ones carrying it lost).
FALLBACK_COUNTERS = ("MPTcpExtMPCapableFallbackSYNACK", "MPTcpExtMPCapableFallbackACK", "MPTcpExtInfiniteMapTx",
                     "MPTcpExtInfiniteMapRx", "MPTcpExtMPFallbackTokenInit", "MPTcpExtDssFallback",
                     "MPTcpExtDSSCorruptionFallback", "MPTcpExtMPCapableDataFallback", "MPTcpExtMD5SigFallback",
                     "MPTcpExtSimultConnectFallback")


@dataclass
class Verdict:
    status: str
    reason: str | None
    pairs: list[dict]
    lagged: bool = False  # invalid because an emulator lagged, and for nothing else


def _fallbacks(delta: dict[str, int]) -> list[str]:
    return [k.removeprefix("MPTcpExt") for k in FALLBACK_COUNTERS if delta.get(k, 0) > 0]


# A connection whose packets after the handshake that carry MP_CAPABLE (the third ACK and the first
# data) were all lost goes on as plain TCP: the receiver makes its socket from a later segment
# (MPCapableFallbackACK) and answers without MPTCP options, at which the sender falls back
# (MPCapableDataFallback). Lost on a busy medium (a starved station's queue expiring them), that is
# the network's doing, like lost SYNs: the run is a result with it counted (runs.parquet's
# data_fallbacks), but only where the receivers' own counters account for every such fallback.
DATA_FALLBACK, LOST_FIRST_PACKETS = "MPTcpExtMPCapableDataFallback", "MPTcpExtMPCapableFallbackACK"


def _unexplained_data_fallbacks(pairs: list[dict], deltas: dict[str, dict[str, int]]) -> set[str]:
    """The senders whose data fallbacks their receiver's counters do not account for (a receiver's
    count covers all the senders it serves)."""
    by_receiver: dict[str, list[str]] = {}
    for p in pairs:
        by_receiver.setdefault(p["receiver"], []).append(p["sender"])
    unexplained = set()
    for receiver, senders in by_receiver.items():
        fell_back = sum(deltas.get(s, {}).get(DATA_FALLBACK, 0) for s in senders)
        if fell_back > deltas.get(receiver, {}).get(LOST_FIRST_PACKETS, 0):
            unexplained.update(senders)
    return unexplained


def _pair_verdict(run: Run, transfer: PairTransfer, delta: dict[str, int], limits: Limits,
                  join_problem: str | None, path_bytes: dict[str, int],
                  receiver_fell_back: list[str], data_fallback_explained: bool) -> tuple[str, str | None]:
    if transfer.timed_out:
        return "failed", f"timed out after {limits.run_timeout_s:g} s ({transfer.error})"
    if transfer.error:
        return "failed", transfer.error  # e.g. "delivered 2810000 of 3000000 bytes"

    fell_back = _fallbacks({**delta, DATA_FALLBACK: 0} if data_fallback_explained else delta)
    if fell_back:
        at_receiver = f"; at the receiver: {', '.join(receiver_fell_back)}" if receiver_fell_back else ""
        return "invalid", f"connection fell back to plain TCP ({', '.join(fell_back)}{at_receiver})"
    # A connection whose MP_CAPABLE SYNs went unanswered is sent on as plain TCP by the kernel
    # (net.mptcp.syn_retrans_before_tcp_fallback): SYNs lost on a busy medium, the network's
    # doing; the run is a result with it counted (runs.parquet's tcp_fallbacks).
    syn_fallbacks = delta.get("MPTcpExtMPCapableSYNTXDrop", 0)
    if delta.get("MPTcpExtMPCapableSYNACKRX", 0) + syn_fallbacks < run.connections:
        return "invalid", "connection was not MPTCP (no MP_CAPABLE handshake)"

    if join_problem:
        return "invalid", join_problem
    total = sum(path_bytes.values())
    if len(path_bytes) > 1 and limits.min_path_share and total:
        for path, sent in path_bytes.items():
            if sent < limits.min_path_share * total:
                return "invalid", f"left the {path} path unused ({path} carried {sent} of {total} bytes)"
    return "ok", None


def judge_run(run: Run, pairs: list[dict], transfers: dict[str, PairTransfer], mib_delta: dict[str, dict[str, int]],
              lags: dict, radios_alive: dict, limits: Limits, crossed: set[str],
              path_bytes: dict[str, dict[str, int]], subflow_problem: str | None = None,
              join_problems: dict[str, str | None] | None = None, ended_by: str | None = None,
              stalled: bool = False) -> Verdict:
    """mib_delta: host -> how far its MIB counters moved in the run (rig.run.execute; a sender's
    judge its pair; a receiver's, where given, account for its senders' data fallbacks and name
    its part in a fallback);
    crossed: the radio networks the run's traffic crosses (Topology.networks_crossed);
    path_bytes: sender -> what left each of its radios in use (role -> bytes);
    join_problems: sender -> why a connection lacked one of its subflows in time (rig.run.joins);
    ended_by: the part whose loss ended the run early on every node (rig.run.watch), or None: the
    reason of every pair that did not complete;
    stalled: it was a transfer that stalled (ended_by says which): the pairs that did not
    complete are `stalled`, a result of the network under test, not a failure of the rig."""
    unexplained = _unexplained_data_fallbacks(pairs, mib_delta)
    judged = []
    for p in pairs:
        sender = p["sender"]
        status, reason = _pair_verdict(run, transfers[sender], mib_delta[sender], limits,
                                       (join_problems or {}).get(sender), path_bytes.get(sender, {}),
                                       _fallbacks(mib_delta.get(p["receiver"], {})), sender not in unexplained)
        judged.append({**p, "status": status, "reason": reason})

    # Run-wide causes override: they make every pair's numbers untrustworthy.
    run_reason = None
    lag_is_the_reason = False
    dead = [n for n, alive in radios_alive.items() if not alive]
    if dead:
        run_reason = f"emulator for {', '.join(dead)} exited during the run"
    elif ended_by:
        run_reason = ended_by
    elif lag_note := lag_reason(lags, crossed, limits):
        lag_is_the_reason, run_reason = True, lag_note
    if not run_reason and subflow_problem:
        run_reason = subflow_problem
    if ended_by:  # a pair stopped when the run was ended early failed by what ended it, not by its stop
        judged = [{**p, "status": "stalled" if stalled and not dead else "failed", "reason": ended_by}
                  if p["status"] == "failed" else p for p in judged]
    if run_reason:
        judged = [{**p, "status": "invalid" if p["status"] == "ok" else p["status"], "reason": p["reason"] or run_reason} for p in judged]

    statuses = [p["status"] for p in judged]
    status = next((s for s in STATUSES_WORST_FIRST if s in statuses), "ok")
    reason = run_reason or next((f"{p['sender']}: {p['reason']}" for p in judged if p["reason"]), None)
    # Only lag: no pair failed or was invalid on its own account, and nothing else run-wide.
    lagged = lag_is_the_reason and status == "invalid" and all(p["reason"] == run_reason for p in judged)
    return Verdict(status, reason, judged, lagged)


def lag_reason(lags: dict[str, dict], crossed: set[str], limits: Limits) -> str | None:
    """Why the emulators' lag over a run (network -> its lag, as Radios.lag gives it) makes the
    run invalid, naming the worst network; None if it does not. Only the networks the run's
    packets cross can distort it: an idle one's lag (a late wake-up with nothing to forward) is
    recorded but does not judge the run."""
    late = {n: s for n, s in lags.items() if s["samples"] and s["p99_ms"] > limits.max_lag_p99_ms}
    lagging = [(n, s) for n, s in late.items() if n in crossed]
    if not lagging:
        return None
    n, s = max(lagging, key=lambda x: x[1]["p99_ms"])
    # An idle network late too tells the host's lag from the traffic's: with nothing to forward,
    # only a host that held every emulator off (a paused virtual machine) makes it late.
    idle = sorted(set(late) - crossed)
    paused = f"; {', '.join(idle)} late too, with no traffic of the run: the host held the emulators off" if idle else ""
    return f"emulator lagged: p99 {s['p99_ms']:.2f} ms on {n} > {limits.max_lag_p99_ms:g} ms{_busy_note(s)}{paused}"


def _busy_note(lag: dict) -> str:
    """What the lag log says about why: a model that ran flat out, or a host that held it off
    (in a virtual machine, its hypervisor's steal: time no task of the host ran)."""
    busy, cpu, steal = lag.get("busy_max_ms"), lag.get("cpu"), lag.get("host_steal")
    if busy is None or cpu is None:  # NaN became null (older emulator builds)
        return ""
    stolen = "" if steal is None else f"; the hypervisor took {steal:.1%} of the host's CPU time"
    return f" (busy up to {busy:.0f} ms at a stretch, {cpu:.2f} core{stolen})"
