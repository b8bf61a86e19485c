"""The rig transfer's receiving side (rig_transfer.py sink): takes a run's connections and reads
each to its end, stamping when its reads returned the bytes; rig_transfer.py documents its report."""

from __future__ import annotations

import socket
import threading
import time

from rig_node.mptcp_info import stream_socket

CHUNK = 256 * 1024


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
    srv = stream_socket(tcp)
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
