"""A transfer the agent stops (SIGTERM) still reports what it has, marked `stopped`, exit 143: the
rig's own transfer over the loopback, plain TCP (no root)."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import time

import pytest

from fixtures.node_agent import TRANSFER
from rig_node.sampling import listening
from rig.store import failures


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _queues(port: int, local: bool) -> list[tuple[int, int]]:
    """(tx_queue, rx_queue) of each established loopback TCP socket whose local (else remote) port
    is `port`, from /proc/net/tcp."""
    out = []
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            address = fields[1] if local else fields[2]
            if address.endswith(f":{port:04X}") and fields[3] == "01":
                tx, rx = fields[4].split(":")
                out.append((int(tx, 16), int(rx, 16)))
    return out


def _until(condition, what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"never: {what}")
        time.sleep(0.01)


@contextlib.contextmanager
def _transfer(*args: str):
    """The rig's transfer with these arguments (plain TCP), killed afterwards if still running."""
    program = subprocess.Popen([sys.executable, str(TRANSFER), *args, "--tcp"], stdout=subprocess.PIPE, text=True)
    try:
        yield program
    finally:
        if program.poll() is None:
            program.kill()
            program.wait()


def _stopped(program: subprocess.Popen) -> dict:
    """SIGTERM, as the agent stops a program: its report, marked stopped, exit 143."""
    program.send_signal(signal.SIGTERM)
    out, _ = program.communicate(timeout=30)
    report = json.loads(out)
    assert program.returncode == 143 and report["stopped"] and report["error"] == "stopped before its end", report
    return report


def test_a_stopped_sink_reports_the_bytes_it_read():
    port = _port()
    with _transfer("sink", "--port", str(port), "--connections", "1", "--timeout", "60", "--interval-ms", "10") as sink:
        _until(lambda: listening(port), "the sink listens")
        with socket.create_connection(("127.0.0.1", port)) as sender:
            sender.sendall(b"x" * 100_000)
            # every byte acknowledged by the sink's node (none left to send), and none left to read
            _until(lambda: _queues(port, local=False) == [(0, 0)] and _queues(port, local=True) == [(0, 0)],
                   "the sink has read every byte sent")
            report = _stopped(sink)
    [conn] = report["connections"]
    assert conn["bytes"] == 100_000 and conn["first_byte_at"] <= conn["last_byte_at"], conn
    assert sum(n for _, n in conn["intervals"]) == 100_000  # the interval in progress too
    assert failures.of_program(143, json.dumps(report)) == "program_died"  # stopped: never the network's


def test_a_stopped_source_reports_its_connections():
    port = _port()
    with socket.socket() as receiver:  # accepts, never reads: the source blocks with data queued
        receiver.bind(("127.0.0.1", port))
        receiver.listen()
        with _transfer("source", "--target", "127.0.0.1", "--port", str(port), "--bytes", str(10**9),
                       "--sample-ms", "10") as source:
            _until(lambda: any(tx for tx, _ in _queues(port, local=False)), "the source has data queued")
            report = _stopped(source)
    [conn] = report["connections"]
    assert conn["local"].startswith("127.0.0.1:") and conn["started_at"] and isinstance(conn["subflows"], list), conn
