"""Fixed initial ssthresh (docs/congestion-control.md, "Fixed initial ssthresh"), on this kernel.

- The kernel's own route metric `ssthresh` does not give a connection its initial ssthresh with
  the rig's sysctls (tcp_no_metrics_save=1): measured with tcp_info on real TCP connections.
- The rig's BPF CCs (lia, olia, balia, rig_reno) start every subflow of a real MPTCP connection,
  and a plain TCP connection, at the value set for their namespace through the node agent's
  module (nodes/agent/rig_node/ccparams.py), and at the kernel's default (infinite) when it is 0;
  kernel-builtin CCs ignore it.

Root. Namespaces a and b (a veth between them) and m (loopback MPTCP, two subflows), from the
shared `netns` fixture: removed afterwards with what runs in them, also on failure. The value lives in the CCs' maps keyed by the
namespace's cookie, so it reaches only these namespaces; it is cleared at the end all the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from fixtures.node_agent import AGENT_DIR
from rig import congestion


INFINITE = 0x7FFFFFFF  # TCP_INFINITE_SSTHRESH, what tcp_info reports when nothing set one

# A client: connects (MPTCP or TCP) with a CC, sends 64 kB, prints tcp_info's snd_ssthresh (offset
# 76 of struct tcp_info) as a JSON line, then holds the connection until stdin closes.
CLIENT = r"""
import json, socket, struct, sys
host, port, cc, proto = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
s.connect((host, port))
s.sendall(b"x" * 65536)
info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104) if proto == 0 else b""
print(json.dumps({"ssthresh": struct.unpack_from("I", info, 76)[0] if len(info) >= 80 else None}), flush=True)
sys.stdin.read()
s.close()
"""
# A sink: accepts connections (MPTCP when the client is) and reads them to the end.
SERVER = r"""
import socket, sys, threading
host, port, proto = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
l = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((host, port))
l.listen(16)
print("listening", flush=True)
def sink(c):
    while c.recv(65536):
        pass
    c.close()
while True:
    threading.Thread(target=sink, args=(l.accept()[0],), daemon=True).start()
"""
MPTCP = 262  # IPPROTO_MPTCP


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=check)


def nsx(ns: str, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return sh("ip", "netns", "exec", ns, *argv, check=check)


def cc_params(ns: str, packets: int) -> dict:
    """The node agent's cc_params request, handled in namespace `ns` as a node's agent would."""
    code = ("import json, sys; from rig_node import ccparams; "
            f"print(json.dumps(ccparams.request({{'op': 'cc_params', 'initial_ssthresh': {packets}}})))")
    p = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(AGENT_DIR)})
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.fixture(scope="module")
def rig_ccs():
    before = congestion.available()
    congestion.ensure_registered(congestion.RIG_CCS)
    yield
    if not set(congestion.RIG_CCS) & before:
        congestion.unregister_all()


@pytest.fixture
def namespaces(netns):
    """{"a", "b"}: 10.78.0.1 -- veth -- 10.78.0.2; "m": loopback with a second MPTCP address; a sink
    listening in b and in m."""
    ns = {k: netns(k) for k in ("a", "b", "m")}
    try:
        netns.veth(ns["a"], "sa", ns["b"], "sb")
        for k, dev, addr in (("a", "sa", "10.78.0.1/24"), ("b", "sb", "10.78.0.2/24")):
            nsx(ns[k], "ip", "addr", "add", addr, "dev", dev)
            nsx(ns[k], "ip", "link", "set", dev, "up")
            nsx(ns[k], "sysctl", "-qw", "net.ipv4.tcp_no_metrics_save=1")  # as on the rig's nodes
        nsx(ns["m"], "ip", "addr", "add", "127.0.0.2/8", "dev", "lo")
        nsx(ns["m"], "ip", "mptcp", "limits", "set", "subflow", "2")
        nsx(ns["m"], "ip", "mptcp", "endpoint", "add", "127.0.0.2", "dev", "lo", "subflow")
        for k, host, proto in (("b", "10.78.0.2", 0), ("m", "127.0.0.1", MPTCP)):
            server = netns.start([sys.executable, "-c", SERVER, host, "5400", str(proto)], ns[k],
                                 stdout=subprocess.PIPE, text=True)
            assert server.stdout.readline().strip() == "listening"
        yield ns
    finally:  # the namespaces (and the sinks) go with the netns fixture, after this
        for name in ns.values():
            subprocess.run(["ip", "netns", "exec", name, sys.executable, "-c",
                            "from rig_node import ccparams; ccparams.set_initial_ssthresh(0)"],
                           env={**os.environ, "PYTHONPATH": str(AGENT_DIR)}, capture_output=True, check=False)


def connect(netns, ns: str, host: str, cc: str, proto: int) -> tuple[subprocess.Popen, int | None]:
    """A client connection from namespace `ns`, held open; and its tcp_info ssthresh (plain TCP only)."""
    client = netns.start([sys.executable, "-c", CLIENT, host, "5400", cc, str(proto)], ns,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = client.stdout.readline()
    assert line, client.stderr.read()
    return client, json.loads(line)["ssthresh"]


def close(client: subprocess.Popen, ns: str | None = None) -> None:
    """End the connection; with `ns`, also wait until none of its subflows is established any more,
    so that the next connection's are the only ones there."""
    client.stdin.close()
    client.wait(10)
    deadline = time.monotonic() + 10
    while ns and subflows(ns, 0) and time.monotonic() < deadline:
        time.sleep(0.05)


def subflows(ns: str, count: int) -> list[dict]:
    """The client's subflows to the sink once `count` of them are established (the join follows the
    first subflow by a round trip or so)."""
    deadline = time.monotonic() + 10
    while True:
        socks = [s for s in congestion.subflow_ccs(ns) if s["remote"].endswith(":5400") and s["mptcp"]]
        if len(socks) >= count or time.monotonic() > deadline:
            return socks
        time.sleep(0.05)


def test_route_metric_ssthresh_does_not_set_the_initial_ssthresh(netns, namespaces, rig_ccs):
    """Kernel route metric `ssthresh lock 20` on the path, tcp_no_metrics_save=1: the kernel starts
    every connection at infinity (the metric only acts through a tcp_metrics entry, which this
    setting never creates); the rig's rig_reno with the value set starts at it."""
    ns = namespaces
    nsx(ns["a"], "ip", "route", "replace", "10.78.0.2/32", "dev", "sa", "ssthresh", "lock", "20")
    for cc in ("cubic", "reno", "cubic"):  # the second cubic connection: after one was closed
        client, ssthresh = connect(netns, ns["a"], "10.78.0.2", cc, 0)
        close(client)
        assert ssthresh == INFINITE, (cc, ssthresh)
    assert nsx(ns["a"], "ip", "tcp_metrics", "show").stdout.strip() == ""
    assert cc_params(ns["a"], 20) == {"initial_ssthresh": 20}
    client, ssthresh = connect(netns, ns["a"], "10.78.0.2", "rig_reno", 0)
    close(client)
    assert ssthresh == 20
    client, ssthresh = connect(netns, ns["a"], "10.78.0.2", "cubic", 0)  # builtins do not read it
    close(client)
    assert ssthresh == INFINITE


@pytest.mark.parametrize("cc", congestion.RIG_CCS)
def test_rig_ccs_start_mptcp_subflows_at_the_initial_ssthresh(netns, namespaces, rig_ccs, cc):
    ns = namespaces
    m = ns["m"]
    assert cc_params(m, 23) == {"initial_ssthresh": 23}
    client, _ = connect(netns, m, "127.0.0.1", cc, MPTCP)
    socks = subflows(m, 2)
    close(client, m)
    assert len(socks) == 2, socks
    assert [(s["cc"], s.get("ssthresh")) for s in socks] == [(cc, 23), (cc, 23)], socks

    assert cc_params(m, 0) == {"initial_ssthresh": 0}  # back to the kernel's default: infinite
    client, _ = connect(netns, m, "127.0.0.1", cc, MPTCP)
    socks = subflows(m, 2)
    close(client, m)
    assert len(socks) == 2, socks
    assert [(s["cc"], s.get("ssthresh")) for s in socks] == [(cc, None), (cc, None)], socks  # ss omits infinity


def test_builtin_ccs_ignore_it(netns, namespaces, rig_ccs):
    ns = namespaces
    m = ns["m"]
    cc_params(m, 23)
    for cc in ("cubic", "reno"):
        client, _ = connect(netns, m, "127.0.0.1", cc, MPTCP)
        socks = subflows(m, 2)
        close(client, m)
        assert [(s["cc"], s.get("ssthresh")) for s in socks] == [(cc, None), (cc, None)], socks


def test_bad_values_are_refused(namespaces, rig_ccs):
    ns = namespaces
    for bad in ("1", "-5", "True", "2.5", "1048577", "'20'"):
        code = f"from rig_node import ccparams; ccparams.request({{'op': 'cc_params', 'initial_ssthresh': {bad}}})"
        p = subprocess.run(["ip", "netns", "exec", ns["m"], sys.executable, "-c", code], capture_output=True,
                           text=True, env={**os.environ, "PYTHONPATH": str(AGENT_DIR)})
        assert p.returncode == 1 and "Refused: cc_params.initial_ssthresh: " in p.stderr, (bad, p.stderr)
    code = "from rig_node import ccparams; ccparams.request({'op': 'cc_params', 'initial_ssthresh': 5, 'x': 1})"
    p = subprocess.run(["ip", "netns", "exec", ns["m"], sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(AGENT_DIR)})
    assert "Refused: cc_params: unexpected field 'x'" in p.stderr
