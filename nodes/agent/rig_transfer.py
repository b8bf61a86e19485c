#!/usr/bin/env python3
"""The rig's MPTCP transfer: a data volume (or a duration) from a sender to a receiver, timed
where the data arrives.

iperf3 -n ends its test once the sender has *written* the volume, so its receiver has read only
part of it by then and no completion time exists; this program's receiver reads every byte and
stamps the first and the last, so a volume run's flow completion time is exact.

  rig_transfer.py sink --port P --connections N [--timeout S] [--interval-ms MS] [--tcp]
      Listens (MPTCP) on P, takes N connections, reads each to its end, then prints one JSON
      object: {"connections": [{"peer", "accepted_at", "first_byte_at", "last_byte_at", "bytes",
      "intervals": [[t, bytes], ...]}, ...]} (bytes read per interval, every MS ms) and exits.
  rig_transfer.py source --target A [--bind B] --port P --connections N (--bytes V | --seconds T)
                         [--cc C] [--at UNIX_TIME] [--tcp]
      At --at (sleep, then spin the last 2 ms), opens N MPTCP connections in parallel and sends
      V bytes over all of them (V // N each, the first takes the rest) or sends for T seconds;
      then closes its side and waits for the receiver to close (it has read everything). Prints
      {"started_at", "connections": [{"local", "started_at", "connected_at", "sent_at", "closed_at", "bytes"}]}
      (started_at: just before connect(), which sends the SYN). The receiver's times are when its
      reads returned the bytes.

--tcp: plain TCP sockets (a single-path baseline). Standard library only (it runs on the lab's
nodes); times are the node's wall clock.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time

IPPROTO_MPTCP = getattr(socket, "IPPROTO_MPTCP", 262)
CHUNK = 256 * 1024
SPIN_S = 0.002
CONNECT_TIMEOUT_S = 5.0


def _socket(tcp: bool = False) -> socket.socket:
    return socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP if tcp else IPPROTO_MPTCP)


def _read_all(conn: socket.socket, peer: str, accepted_at: float, interval_s: float, out: list, lock) -> None:
    buf = bytearray(CHUNK)
    total, first, last = 0, None, None
    intervals: list[list] = []
    window_start, window_bytes = None, 0
    while True:
        n = conn.recv_into(buf)
        # When the application has the bytes: after a lost segment is sent again, the kernel's
        # stamp of the last segment read would be its first arrival, before the gap was filled.
        now = time.time()
        if n == 0:
            break
        if first is None:
            first = window_start = now
        total, last = total + n, now
        while now - window_start >= interval_s:  # close the windows this read has passed
            intervals.append([round(window_start + interval_s, 6), window_bytes])
            window_start, window_bytes = window_start + interval_s, 0
        window_bytes += n
    if window_start is not None:
        intervals.append([round(last, 6), window_bytes])
    conn.close()  # the sender waits for this: everything it sent has been read
    with lock:
        out.append({"peer": peer, "accepted_at": accepted_at, "first_byte_at": first, "last_byte_at": last,
                    "bytes": total, "intervals": intervals})


def sink(port: int, connections: int, timeout_s: float, interval_s: float, tcp: bool = False) -> dict:
    srv = _socket(tcp)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(64)
    srv.settimeout(timeout_s)
    out: list[dict] = []
    lock = threading.Lock()
    readers = []
    error = None
    deadline = time.monotonic() + timeout_s
    try:
        for _ in range(connections):
            srv.settimeout(max(0.001, deadline - time.monotonic()))
            conn, addr = srv.accept()
            t = threading.Thread(target=_read_all, args=(conn, f"{addr[0]}:{addr[1]}", time.time(), interval_s, out, lock),
                                 daemon=True)
            t.start()
            readers.append(t)
    except OSError as e:  # socket.timeout is an OSError
        error = f"accepted {len(readers)} of {connections} connections: {e}"
    for t in readers:
        t.join(max(0.0, deadline - time.monotonic()))
    if any(t.is_alive() for t in readers):
        error = error or "a connection did not end before the timeout"
    with lock:
        doc = {"connections": sorted(out, key=lambda c: c["accepted_at"])}
    if error:
        doc["error"] = error
    return doc


def _send(target: str, port: int, bind: str | None, cc: str | None, volume: int | None, until: float | None,
          tcp: bool, result: dict) -> None:
    s = _socket(tcp)
    try:
        if bind:
            s.bind((bind, 0))
        if cc:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        s.settimeout(CONNECT_TIMEOUT_S)  # a path that is down must not hang the run for TCP's minutes
        result["started_at"] = time.time()  # the SYN leaves within this connect()
        s.connect((target, port))
        s.settimeout(None)
        result["local"] = "%s:%d" % s.getsockname()[:2]
        result["connected_at"] = time.time()
        data = memoryview(bytes(CHUNK))
        sent = 0
        while (volume is not None and sent < volume) or (until is not None and time.time() < until):
            n = s.send(data[:min(CHUNK, volume - sent)] if volume is not None else data)
            sent += n
        result["bytes"] = sent
        result["sent_at"] = time.time()
        s.shutdown(socket.SHUT_WR)
        while s.recv(4096):  # the receiver closes once it has read everything
            pass
        result["closed_at"] = time.time()
    except OSError as e:
        result["error"] = f"{type(e).__name__}: {e}"
    finally:
        s.close()


def source(target: str, port: int, bind: str | None, connections: int, volume: int | None, seconds: float | None,
           cc: str | None, at: float | None, tcp: bool = False) -> dict:
    if at is not None:
        while (left := at - time.time()) > SPIN_S:
            time.sleep(min(left - SPIN_S, 0.05))
        while time.time() < at:
            pass
    started = time.time()
    shares = [None] * connections if volume is None else \
        [volume // connections + (volume % connections if i == 0 else 0) for i in range(connections)]
    until = started + seconds if seconds is not None else None
    results: list[dict] = [{} for _ in range(connections)]
    threads = [threading.Thread(target=_send, args=(target, port, bind, cc, shares[i], until, tcp, results[i]), daemon=True)
               for i in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # The transfer starts with the first connection's SYN (the threads' own start-up is not in it).
    doc = {"started_at": min((r["started_at"] for r in results if "started_at" in r), default=started),
           "connections": results}
    errors = [r["error"] for r in results if "error" in r]
    if errors:
        doc["error"] = errors[0]
    return doc


def main() -> int:
    p = argparse.ArgumentParser(description="The rig's MPTCP transfer, timed at the receiver.")
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
    s.add_argument("--at", type=float)
    s.add_argument("--tcp", action="store_true", help="plain TCP instead of MPTCP")
    a = p.parse_args()
    if a.mode == "sink":
        doc = sink(a.port, a.connections, a.timeout, a.interval_ms / 1000, a.tcp)
    else:
        doc = source(a.target, a.port, a.bind, a.connections, a.bytes, a.seconds, a.cc, a.at, a.tcp)
    print(json.dumps(doc))
    return 1 if "error" in doc else 0


if __name__ == "__main__":
    sys.exit(main())
