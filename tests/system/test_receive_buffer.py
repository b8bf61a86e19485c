"""A receiver's buffer as a run sets it (rig.model.routing.receive_buffer, through the node
agent's sysctl allowlist), seen in the real kernel's MPTCP subflows of a connection between the
two namespaces of tests/fixtures/two_paths.py: autotuned from Linux's default, or fixed at the
run's rcvbuf from the start (campaign `tcp.rcvbuf_autotuning: false`, docs/campaigns.md "Receive
buffers"). The connection carries a byte each way (the client's path manager opens the join once
the connection is fully established), too little for an autotuned buffer to grow."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from fixtures.two_paths import S1, sh
from rig.congestion import parse_ss
from rig.model.routing import receive_buffer
from rig_node.sysctls import checked

RCVBUF = 1_000_000
PORT = 5407
IPPROTO_MPTCP = 262
SERVER = (f"import socket, time; s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, {IPPROTO_MPTCP}); "
          f"s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('', {PORT})); s.listen(); "
          "c, _ = s.accept(); c.recv(1); c.sendall(b'x'); time.sleep(30)")
CLIENT = (f"import socket, time; s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, {IPPROTO_MPTCP}); "
          f"s.connect(('{S1}', {PORT})); s.sendall(b'x'); s.recv(1); time.sleep(30)")


def receive_buffers(ns: str) -> list[int]:
    """The receive buffers of the server's MPTCP subflows on PORT."""
    out = sh("ip", "netns", "exec", ns, "ss", "-tinmH", "state", "established", f"( sport = :{PORT} )").stdout
    return sorted(s["rcvbuf"] for s in parse_ss(out) if s["mptcp"] and "rcvbuf" in s)


@pytest.mark.parametrize("autotuning", [True, False], ids=["autotuned", "fixed"])
def test_the_receivers_subflows_get_the_buffer_the_run_sets(two_paths, autotuning):
    client, server = two_paths["c"], two_paths["s"]
    for name, value in checked(receive_buffer(RCVBUF, autotuning)).items():
        sh("ip", "netns", "exec", server, "sysctl", "-qw", f"{name}={value}")
    procs = [subprocess.Popen(["ip", "netns", "exec", server, sys.executable, "-c", SERVER])]
    try:
        while str(PORT) not in sh("ip", "netns", "exec", server, "ss", "-Htln").stdout:
            time.sleep(0.05)
        procs.append(subprocess.Popen(["ip", "netns", "exec", client, sys.executable, "-c", CLIENT]))
        deadline, bufs = time.monotonic() + 10, []
        while len(bufs) < 2 and time.monotonic() < deadline:  # the first subflow and the join
            time.sleep(0.1)
            bufs = receive_buffers(server)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    # autotuned: Linux's default until data makes it grow; fixed: the whole buffer, the join too
    assert bufs == [131072, 131072] if autotuning else bufs == [RCVBUF, RCVBUF], bufs
