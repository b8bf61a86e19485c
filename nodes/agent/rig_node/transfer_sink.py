"""The rig transfer's receiving side (rig_transfer.py sink): takes a run's connections and reads
each to its end, stamping when its reads returned the bytes; rig_transfer.py documents its report."""

from __future__ import annotations

import socket
import threading
import time

from rig_node.mptcp_info import announced_addresses, stream_socket
from rig_node.stopping import STOPPED_ERROR, Stopped, start_thread

CHUNK = 256 * 1024


def _read_all(conn: socket.socket, peer: str, accepted_at: float, interval_s: float, out: list, lock) -> None:
    """Reads the connection to its end. Its entry in `out` is there from the start and kept
    current with each read (bytes, last byte, the interval in progress as the last one, stamped
    with its last read until it closes): a sink stopped before the end reports what was read."""
    entry = {"peer": peer, "accepted_at": accepted_at, "first_byte_at": None, "last_byte_at": None, "bytes": 0,
             "intervals": []}
    with lock:
        out.append(entry)
    buf = bytearray(CHUNK)
    total, last = 0, None
    intervals: list[list] = entry["intervals"]
    window_start = None
    while True:
        n = conn.recv_into(buf)
        # When the application has the bytes: after a lost segment is sent again, the kernel's
        # stamp of the last segment read would be its first arrival, before the gap was filled.
        now = time.time()
        if n == 0:
            break
        if window_start is None:
            entry["first_byte_at"] = window_start = now
            intervals.append([now, 0])
        total, last = total + n, now
        while now - window_start >= interval_s:  # close the windows this read has passed
            intervals[-1][0] = round(window_start + interval_s, 6)
            window_start += interval_s
            intervals.append([now, 0])
        intervals[-1][0] = now
        intervals[-1][1] += n
        entry["bytes"], entry["last_byte_at"] = total, last
    if intervals:
        intervals[-1][0] = round(last, 6)
    # whether this side announced its other addresses to the sender: a path to one the sender
    # never joined is told apart as announced and lost on the way, or never announced
    entry["add_addr_signal"] = announced_addresses(conn)
    conn.close()  # the sender waits for this: everything it sent has been read


def sink(port: int, connections: int, timeout_s: float, interval_s: float, tcp: bool = False) -> dict:
    srv = stream_socket(tcp)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(64)
    srv.settimeout(timeout_s)
    out: list[dict] = []
    lock = threading.Lock()
    readers = []
    error, stopped = None, False
    deadline = time.monotonic() + timeout_s
    try:
        try:
            for _ in range(connections):
                srv.settimeout(max(0.001, deadline - time.monotonic()))
                conn, addr = srv.accept()
                readers.append(start_thread(_read_all, conn, f"{addr[0]}:{addr[1]}", time.time(), interval_s, out, lock))
        except OSError as e:  # socket.timeout is an OSError
            error = f"accepted {len(readers)} of {connections} connections: {e}"
        for t in readers:
            t.join(max(0.0, deadline - time.monotonic()))
        if any(t.is_alive() for t in readers):
            error = error or "a connection did not end before the timeout"
    except Stopped:
        error, stopped = STOPPED_ERROR, True
    with lock:  # a reader still running may append an interval meanwhile: each entry as it is now
        doc = {"connections": sorted(({**c, "intervals": [list(i) for i in c["intervals"]]} for c in out),
                                     key=lambda c: c["accepted_at"])}
    if error:
        doc["error"] = error
    if stopped:
        doc["stopped"] = True
    return doc
