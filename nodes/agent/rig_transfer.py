#!/usr/bin/env python3
"""The rig's MPTCP transfer: a data volume (or a duration) from a sender to a receiver, timed
where the data arrives.

iperf3 -n ends its test once the sender has *written* the volume, so its receiver has read only
part of it by then and no completion time exists; this program's receiver reads every byte and
stamps the first and the last, so a volume run's flow completion time is exact.

  rig_transfer.py sink --port P --connections N [--timeout S] [--interval-ms MS] [--tcp]
      Listens (MPTCP) on P, takes N connections, reads each to its end, then prints one JSON
      object: {"connections": [{"peer", "accepted_at", "first_byte_at", "last_byte_at", "bytes",
      "intervals": [[t, bytes], ...], "add_addr_signal"}, ...]} (bytes read per interval, every MS
      ms; add_addr_signal: the addresses this side announced on the connection, MPTCP_INFO, read
      at its end, null for plain TCP or a fallback) and exits.
  rig_transfer.py source --target A [--bind B] --port P --connections N (--bytes V | --seconds T)
                         [--cc C] [--at UNIX_TIME | --hold] [--tcp] [--sample-ms MS]
                         [--loss-aware ADDR=FRACTION ... [--loss-link ADDR=SOURCE ...]]
                         [--loss-window-s W] [--loss-hold-s H]
                         [--paths ADDR ... [--join-wait-s W]]
      At --at, opens N MPTCP connections in parallel (each connection's thread sleeps until then
      itself: _sleep_until tells why) and sends
      V bytes over all of them (V // N each, the first takes the rest) or sends for T seconds;
      then closes its side and waits for the receiver to close (it has read everything). Prints
      {"started_at", "ready_at", "connections": [{"local", "started_at", "connected_at", "sent_at", "closed_at", "bytes", "mptcp",
      "subflows": [[t, local, remote, bytes_acked, bytes_sent, bytes_retrans, rtt_ms, cwnd, ssthresh], ...]}],
      "events": [{"t", "event", "local", "remote", ...}, ...]}],
      "switches": [{"t", "address", "loss", "action"}, ...]}
      (started_at: just before connect(), which sends the SYN; ready_at: when every connection's
      socket was prepared and its thread about to wait for --at; mptcp: without --tcp, whether the
      connection was still MPTCP once it had written everything and had its --paths, false when
      it fell back to TCP, at the handshake or after it; such a one does not wait for --paths). The receiver's times are when its
      reads returned the bytes.
      --hold: the program and its connections' threads start, then the start time is read from
      stdin (one line, unix time; the node agent's `release` writes it), and only then are the
      sockets created, given the CC and bound to --bind: a run's sources are prepared while the
      run before it transfers, under that run's path settings, and an MPTCP socket keeps those
      in force when it is created (whether the in-kernel path manager opens subflows and
      accepts announced addresses: the MPTCP limits), as its address may not exist under them.
      ready_at is then when every socket was created after the release. At end of input without
      a start time, nothing is sent and the report says the source was never released.
      subflows: every MS ms (default 100; 0: off) a thread reads each connection's subflows from
      its own socket (rig_node.mptcp_info; --tcp: the socket's TCP_INFO), and once more after the
      receiver has closed. t is when the read returned (unix s); local and remote "ip:port";
      counters cumulative per subflow, bytes_sent including retransmissions; rtt_ms the smoothed
      RTT; cwnd and ssthresh in segments (ssthresh 2147483647: not set yet). A subflow that has
      sent no data (a join still in SYN_SENT, or one that never got through) is left out. An
      MPTCP connection that fell back to TCP (the receiver does not speak MPTCP) has no final
      sample: once closed, its socket no longer has the subflow's counters.
      --loss-aware: the loss-aware path policy (rig_node.pathpolicy, which documents its rules)
      on these samples: a local address whose loss (retransmitted / sent bytes, each subflow from
      the end of its slow start on) over the last W seconds (default 1; longer while that holds
      too little data for FRACTION) reaches its FRACTION is made a backup MPTCP endpoint, and
      restored when a measure shows less, or after H seconds (default 10 W). Each switch is in
      "switches" (t unix s; loss the fraction that decided, null for a restore without a measure;
      "error" when `ip` failed, which also fails the run). Every path it made backup is restored
      before the program ends, also when it is stopped with SIGTERM.
      --loss-link: the policy's link measure instead: an address's loss is what its own link
      dropped at random over the frames it was given (rig_node.linkloss: SOURCE stats:PATH:STATION,
      the emulated radio's per-second log, or qdisc:IFACE, the interface's netem), no queue's drops.

      events: the connection's MPTCP path manager events (rig_node.pm_events: created,
      announced, sub_established, sub_closed ...), each stamped when it was read; absent where
      the kernel does not tell this process ("events_error" says why).
      --paths: local addresses that each must have an established subflow on every connection
      (the node's paths in use). A connection that has written everything keeps its side open
      until they all have, or until W seconds (default 5) after its start: a short transfer
      must not end before its path manager could open its other paths. What the receiver reads
      and when is not changed by it.

Stopped with SIGTERM (the agent's stop), either prints its report so far with "stopped": true
and "error": "stopped before its end" (a sink's connections with the bytes read until then and
their intervals, the last one up to its last read; a source's connections with their subflow
samples) and exits 143.

--tcp: plain TCP sockets (a single-path baseline). Standard library only (it runs on the lab's
nodes); times are the node's wall clock.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import socket
import sys

# The agent starts this file with `python -I`, which leaves the script's directory off sys.path;
# the rig_node package sits beside it (on the boards and in the repository).
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from rig_node import linkloss  # noqa: E402
from rig_node.stopping import STOPPED_ERROR, STOPPED_RC, Stopped, stop_on_sigterm  # noqa: E402
from rig_node.transfer_sink import sink  # noqa: E402
from rig_node.transfer_source import source  # noqa: E402


def _address(text: str) -> str:
    try:
        socket.inet_aton(text)
    except OSError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an IPv4 address") from None
    return text


def _path(text: str) -> str:
    """LOCAL (a subflow from that address) or LOCAL>REMOTE (from that address to that one)."""
    return ">".join(_address(part) for part in text.split(">", 1))


def _threshold(text: str) -> tuple[str, float]:
    address, sep, fraction = text.partition("=")
    try:
        socket.inet_aton(address)
        value = float(fraction)
    except (OSError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not ADDRESS=FRACTION") from None
    if not sep or not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: the fraction must be in (0, 1]")
    return address, value


def _link(text: str) -> tuple[str, str]:
    address, sep, spec = text.partition("=")
    try:
        socket.inet_aton(address)
        linkloss.source(spec)
    except (OSError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not ADDRESS=stats:PATH:STATION or ADDRESS=qdisc:IFACE") from None
    return address, spec


@functools.cache
def parser() -> argparse.ArgumentParser:
    """The command line, built once: the node agent builds it before it forks transfers
    (rig_node.forked), so that a fork does not (several ms of CPU each on a small core)."""
    p = argparse.ArgumentParser(prog="rig_transfer.py", description="The rig's MPTCP transfer, timed at the receiver.")
    sub = p.add_subparsers(dest="mode", required=True)
    k = sub.add_parser("sink")
    k.add_argument("--port", type=int, required=True)
    k.add_argument("--connections", type=int, required=True)
    k.add_argument("--timeout", type=float, default=300.0)
    k.add_argument("--interval-ms", type=float, default=100.0)
    k.add_argument("--tcp", action="store_true", help="plain TCP instead of MPTCP")
    s = sub.add_parser("source")
    s.add_argument("--target", required=True)
    s.add_argument("--bind")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--connections", type=int, default=1)
    amount = s.add_mutually_exclusive_group(required=True)
    amount.add_argument("--bytes", type=int)
    amount.add_argument("--seconds", type=float)
    s.add_argument("--cc")
    when = s.add_mutually_exclusive_group()
    when.add_argument("--at", type=float)
    when.add_argument("--hold", action="store_true", help="prepare, then read the start time (unix s) from stdin")
    s.add_argument("--tcp", action="store_true", help="plain TCP instead of MPTCP")
    s.add_argument("--sample-ms", type=float, default=100.0, help="subflow sampling period (0: only a final sample)")
    s.add_argument("--loss-aware", nargs="+", type=_threshold, metavar="ADDR=FRACTION",
                   help="loss-aware path policy: a local address and its loss threshold (0-1)")
    s.add_argument("--loss-link", nargs="+", type=_link, metavar="ADDR=SOURCE",
                   help="the link measure: each policy address's link counters (stats:PATH:STATION or qdisc:IFACE)")
    s.add_argument("--loss-window-s", type=float, default=1.0)
    s.add_argument("--loss-hold-s", type=float, help="restore a backup path after this long (default 10 windows)")
    s.add_argument("--paths", nargs="+", default=[], type=_path, metavar="ADDR[>REMOTE]",
                   help="subflows every connection must have established: from a local address (to a remote one)")
    s.add_argument("--join-wait-s", type=float, default=5.0,
                   help="how long after its start a connection that sent everything waits for --paths")
    return p


def main(argv: list[str] | None = None) -> int:
    """argv: the arguments after the program's name (the node agent's fork of it, rig_node.forked)."""
    p = parser()
    a = p.parse_args(argv)
    if a.mode == "source" and a.loss_aware and a.sample_ms <= 0:
        p.error("--loss-aware needs --sample-ms > 0")
    if a.mode == "source" and a.loss_link and set(dict(a.loss_aware or [])) - set(dict(a.loss_link)):
        p.error("--loss-link must name a source for every --loss-aware address")
    # The agent stops a program with SIGTERM: unwind (the policy restores its paths) and report
    # what it has (rig_node.stopping).
    try:
        stop_on_sigterm()
        if a.mode == "sink":
            doc = sink(a.port, a.connections, a.timeout, a.interval_ms / 1000, a.tcp)
        else:
            doc = source(a.target, a.port, a.bind, a.connections, a.bytes, a.seconds, a.cc, a.at, a.tcp,
                         a.sample_ms / 1000, dict(a.loss_aware or []), a.loss_window_s, a.loss_hold_s, a.hold,
                         tuple(a.paths), a.join_wait_s, dict(a.loss_link or []))
    except Stopped:  # while it was still setting up (the handler itself included), before its own unwinding began
        doc = {"connections": [], "error": STOPPED_ERROR, "stopped": True}
    print(json.dumps(doc))
    return STOPPED_RC if doc.get("stopped") else 1 if "error" in doc else 0


if __name__ == "__main__":
    sys.exit(main())
