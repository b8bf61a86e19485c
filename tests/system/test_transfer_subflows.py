"""The rig transfer's per-subflow series and its loss-aware path policy, in the real program (the
policy's decisions on synthetic samples: tests/unit/test_path_policy.py).

The real program runs between the two namespaces of tests/fixtures/two_paths.py (a dual-homed
client and its server, as the rig sets them). Path 2 can drop a fraction of its data packets
(nodes/bpf/random_loss.bpf.c at the server's ingress; there is no netem here).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from fixtures.node_agent import TRANSFER
from fixtures.random_loss import random_loss
from fixtures.two_paths import C1, C2, MB, S1, S2, by_subflow, finish, listening_sink, run_transfer, sh, sink_and_source

def test_the_source_reports_each_subflow_over_time(netns, two_paths):
    src, sink = run_transfer(netns, two_paths, ["--seconds", "3", "--sample-ms", "100"])
    conn = src["connections"][0]
    assert src["switches"] == [] and conn["bytes"] == sink["connections"][0]["bytes"]
    subflows = by_subflow(conn["subflows"])
    assert set(subflows) == {(C1, S1), (C2, S2)}, subflows.keys()  # the rig's two paths
    for key, rows in subflows.items():
        assert len(rows) >= 10, (key, len(rows))  # 3 s at 10 Hz, less what the join and the start take
        times, acked = [r[0] for r in rows], [r[3] for r in rows]
        assert times == sorted(times) and acked == sorted(acked) and acked[-1] > acked[0] + MB, (key, acked)
        assert all(r[4] >= r[3] - 2 for r in rows), key  # sent >= acked (the SYN and the FIN count in acked)
        assert all(0 < r[6] < 1000 and r[7] > 0 and r[8] > 0 for r in rows[1:]), key  # rtt_ms, cwnd, ssthresh
    # the last sample is taken after the receiver closed: everything sent is acknowledged
    last = conn["subflows"][-1]
    assert last[0] >= conn["closed_at"]
    assert sum(rows[-1][3] for rows in subflows.values()) >= conn["bytes"]


@pytest.mark.parametrize("source_tcp", [True, False], ids=["tcp", "mptcp-fallback"])
def test_a_tcp_connection_is_one_subflow(netns, two_paths, source_tcp):
    """The --tcp baseline, and an MPTCP socket whose peer answers in plain TCP (it falls back)."""
    tcp = ["--tcp"] if source_tcp else []
    _, source = sink_and_source(netns, two_paths, 5401, ["--tcp"], ["--bytes", str(4 * MB), "--sample-ms", "50", *tcp])
    conn = finish(source)["connections"][0]
    assert {(r[1], r[2]) for r in conn["subflows"]} == {(conn["local"], f"{S1}:5401")}
    assert len(conn["subflows"]) >= 3
    if source_tcp:  # the final sample: all acknowledged (a closed fallback socket has lost its subflow's counters)
        assert conn["subflows"][-1][3] >= 4 * MB


def endpoint_flags(ns: str) -> dict[str, bool]:
    """address -> backup flag of the namespace's MPTCP endpoints."""
    return {e["address"]: bool(e.get("backup")) for e in json.loads(sh("ip", "-n", ns, "-j", "mptcp", "endpoint", "show").stdout)}


def test_the_loss_aware_policy_makes_the_lossy_path_backup_and_restores_it_at_the_end(netns, two_paths):
    ns = two_paths
    random_loss(ns["s"], "s2", 50_000)  # 5 % of path 2's data packets
    seen = []
    src, _ = run_transfer(netns, ns, ["--seconds", "8", "--loss-aware", f"{C1}=0.02", f"{C2}=0.02",
                                      "--loss-window-s", "1", "--loss-hold-s", "60"],
                          during=lambda: seen.append(endpoint_flags(ns["c"])))
    after = endpoint_flags(ns["c"])
    switches = src["switches"]
    assert [(s["address"], s["action"]) for s in switches] == [(C2, "backup"), (C2, "restore")], switches
    backup, restore = switches
    assert backup["loss"] >= 0.02 and "error" not in backup  # the loss it saw
    assert restore["loss"] is None and restore["t"] > backup["t"]  # restored at the end of the run
    assert {C1: False, C2: True} in seen  # the endpoint carried the backup flag during the run
    assert after == {C1: False, C2: False}  # and no longer after it
    # after the switch, the lossy path carries little: most of the data goes over path 1
    rows = by_subflow(src["connections"][0]["subflows"])
    at = backup["t"]

    def acked_after(key):
        r = rows[key]
        return r[-1][3] - next(x[3] for x in r if x[0] >= at)
    assert acked_after((C1, S1)) > 5 * acked_after((C2, S2))


def test_a_stopped_source_restores_the_paths_it_made_backup(netns, two_paths):
    """The agent stops a program with SIGTERM: the next run must not start with a path backup."""
    ns = two_paths
    random_loss(ns["s"], "s2", 50_000)
    _, source = sink_and_source(netns, ns, 5402, [], ["--seconds", "60", "--loss-aware", f"{C2}=0.02", "--loss-hold-s", "60"])
    deadline = time.monotonic() + 30
    while not endpoint_flags(ns["c"])[C2]:
        assert time.monotonic() < deadline and source.poll() is None, "path 2 never went backup"
        time.sleep(0.05)
    source.terminate()
    source.communicate(timeout=30)
    assert endpoint_flags(ns["c"]) == {C1: False, C2: False}


def single_homed(ns: str) -> None:
    """The client as a single-homed sender between runs: no endpoints, MPTCP limits 0."""
    sh("ip", "-n", ns, "mptcp", "endpoint", "flush")
    sh("ip", "-n", ns, "mptcp", "limits", "set", "subflows", "0", "add_addr_accepted", "0")


def dual_homed(ns: str) -> None:
    for src, dev in ((C1, "c1"), (C2, "c2")):
        sh("ip", "-n", ns, "mptcp", "endpoint", "add", src, "dev", dev, "subflow")
    sh("ip", "-n", ns, "mptcp", "limits", "set", "subflows", "2", "add_addr_accepted", "1")


@pytest.mark.parametrize("socket_first", [True, False], ids=["socket-before-the-switch", "socket-after-it"])
def test_an_mptcp_socket_keeps_the_path_managers_limits_in_force_when_it_was_created(netns, two_paths, socket_first):
    """The kernel's behaviour the held source is built around: a socket created while the node
    was single-homed (MPTCP limits 0) neither opens subflows nor accepts the announced address
    once the node is dual-homed; one created after the switch does both."""
    ns = two_paths
    single_homed(ns["c"])
    listening_sink(netns, ns, 5403, "--connections", "1", "--timeout", "60")
    create, wait = "s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)\n", "sys.stdin.readline()\n"
    script = ("import socket, sys, time\n" + (create + wait if socket_first else wait + create)
              + f"s.connect(('{S1}', 5403)); s.sendall(bytes(2 << 20)); time.sleep(1.0); s.close()\n")
    client = netns.start([sys.executable, "-c", script], ns["c"], stdin=subprocess.PIPE, text=True)
    time.sleep(0.3)  # it waits on its input (with its socket, if socket_first) while the node switches
    dual_homed(ns["c"])
    client.communicate("\n", timeout=60)
    assert client.returncode == 0
    joins = json.loads(sh("ip", "netns", "exec", ns["c"], "nstat", "-az", "-j", "MPTcpExtMPJoinSynAckRx").stdout)
    joined = next(iter(joins.values()))["MPTcpExtMPJoinSynAckRx"]
    assert joined == (0 if socket_first else 1)


def test_a_held_source_opens_every_subflow_of_the_settings_in_force_at_its_release(netns, two_paths):
    """A run's source is started (held) under the run before's path settings, a single-homed
    one's here; released after the switch to dual-homed, both paths carry data."""
    ns = two_paths
    single_homed(ns["c"])
    sink = listening_sink(netns, ns, 5404, "--connections", "2", "--timeout", "60")
    source = netns.start([sys.executable, "-I", str(TRANSFER), "source", "--target", S1, "--bind", C1, "--port", "5404",
                          "--connections", "2", "--bytes", str(4 * MB), "--sample-ms", "50", "--hold"], ns["c"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)  # held: started, waiting for its start time
    dual_homed(ns["c"])
    out, err = source.communicate(f"{time.time() + 0.05}\n", timeout=60)
    assert source.returncode == 0, err
    src = json.loads(out)
    for conn in src["connections"]:
        carried = {k: rows[-1][3] for k, rows in by_subflow(conn["subflows"]).items()}
        assert set(carried) == {(C1, S1), (C2, S2)}, carried
        assert all(acked > 64 * 1024 for acked in carried.values()), carried
    finish(sink)
