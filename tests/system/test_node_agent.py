"""The node agent is no root shell: its requests are a closed, typed set. Requests outside the set
(a shell command, a sysctl off the allowlist, a program that is not a traffic tool, a path
traversal in an argument, malformed fields) are refused with a clear error, logged on the node,
and the agent goes on serving. The real agent runs in a throwaway network namespace (the shared
`netns` fixture)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fixtures.node_agent import AGENT, AgentPipe


@pytest.fixture
def agent(netns, tmp_path):
    """The agent in a namespace of its own: (agent, namespace, its log); told to quit afterwards (the
    netns fixture then stops whatever is left)."""
    ns, log = netns("agent"), tmp_path / "agent.log"
    a = AgentPipe(netns.start([sys.executable, "-u", "-I", str(AGENT), "--log", str(log)], ns,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE))
    try:
        yield a, ns, log
    finally:
        a.close()


IPERF_CLIENT = {"mode": "client", "target": "127.0.0.1", "bytes": 1000}
TRANSFER_SOURCE = {"mode": "source", "target": "127.0.0.1", "seconds": 1}
HOSTILE = {
    # a shell command, however it is dressed
    "shell op": {"op": "sh", "script": "id"},
    "exec op": {"op": "exec", "argv": ["id"]},
    "no op": {"script": "id"},
    "op not a string": {"op": ["sh"]},
    "not an object": ["sh", "-c", "id"],
    "launch argv": {"op": "launch", "key": "x", "argv": ["sh", "-c", "id"]},
    "launch shell program": {"op": "launch", "key": "x", "program": "sh", "args": {}},
    "launch absolute program": {"op": "launch", "key": "x", "program": "/usr/bin/iperf3", "args": IPERF_CLIENT},
    "launch program with arguments": {"op": "launch", "key": "x", "program": "iperf3 -s", "args": {}},
    "iperf3 extra option": {"op": "launch", "key": "x", "program": "iperf3", "args": {**IPERF_CLIENT, "argv": ["--logfile", "/etc/x"]}},
    "iperf3 injected target": {"op": "launch", "key": "x", "program": "iperf3", "args": {**IPERF_CLIENT, "target": "127.0.0.1; id"}},
    "iperf3 injected cc": {"op": "launch", "key": "x", "program": "iperf3", "args": {**IPERF_CLIENT, "cc": "cubic --logfile=/etc/passwd"}},
    "iperf3 negative bytes": {"op": "launch", "key": "x", "program": "iperf3", "args": {**IPERF_CLIENT, "bytes": -1}},
    "iperf3 privileged port": {"op": "launch", "key": "x", "program": "iperf3", "args": {"mode": "server", "port": 22}},
    "iperf3 unknown mode": {"op": "launch", "key": "x", "program": "iperf3", "args": {"mode": "daemon"}},
    "transfer injected path": {"op": "launch", "key": "x", "program": "transfer",
                               "args": {**TRANSFER_SOURCE, "loss_aware": {"127.0.0.1 --at 0": 0.01}}},
    "transfer loss above 1": {"op": "launch", "key": "x", "program": "transfer", "args": {**TRANSFER_SOURCE, "loss_aware": {"127.0.0.1": 5}}},
    "transfer loss_aware list": {"op": "launch", "key": "x", "program": "transfer", "args": {**TRANSFER_SOURCE, "loss_aware": ["127.0.0.1"]}},
    "transfer loss_links without loss_aware": {"op": "launch", "key": "x", "program": "transfer",
                                               "args": {**TRANSFER_SOURCE, "loss_links": {"127.0.0.1": {"qdisc": "lo"}}}},
    "transfer loss_links relative path": {"op": "launch", "key": "x", "program": "transfer",
                                          "args": {**TRANSFER_SOURCE, "loss_aware": {"127.0.0.1": 0.01},
                                                   "loss_links": {"127.0.0.1": {"stats": "x.stats.jsonl", "station": "t"}}}},
    "transfer loss_links other file": {"op": "launch", "key": "x", "program": "transfer",
                                       "args": {**TRANSFER_SOURCE, "loss_aware": {"127.0.0.1": 0.01},
                                                "loss_links": {"127.0.0.1": {"stats": "/etc/shadow", "station": "t"}}}},
    "transfer sample_ms zero": {"op": "launch", "key": "x", "program": "transfer", "args": {**TRANSFER_SOURCE, "sample_ms": 0}},
    "transfer window text": {"op": "launch", "key": "x", "program": "transfer", "args": {**TRANSFER_SOURCE, "loss_window_s": "1; id"}},
    # sysctls off the allowlist
    "sysctl ip_forward": {"op": "sysctl", "values": {"net.ipv4.ip_forward": "1"}},
    "sysctl core_pattern": {"op": "sysctl", "values": {"kernel.core_pattern": "|/bin/sh"}},
    "sysctl value with a command": {"op": "sysctl", "values": {"net.ipv4.tcp_rmem": "4096 131072 $(id)"}},
    "sysctl traversal": {"op": "sysctl", "values": {"net.ipv4.conf.../../../kernel/core_pattern.rp_filter": "0"}},
    "sysctl slash traversal": {"op": "sysctl", "values": {"net/../kernel/core_pattern": "x"}},
    # path traversal and other bad names in arguments
    "sample traversal": {"op": "sample", "ifaces": ["../../../etc"], "hz": 10},
    "sample dotdot": {"op": "sample", "ifaces": [".."], "hz": 10},
    "key traversal": {"op": "wait", "key": "../../etc/passwd"},
    "stop traversal": {"op": "stop", "key": "/proc/1"},
    "plan interface traversal": {"op": "paths", "plan": {"interfaces": [{"name": "../../x", "up": False}]}},
    "plan route injection": {"op": "paths", "plan": {"interfaces": [
        {"name": "lo", "address": "10.9.9.9", "prefixlen": 24, "table": 101, "routes": ["default; id"]}]}},
    "plan main table": {"op": "paths", "plan": {"interfaces": [
        {"name": "lo", "address": "10.9.9.9", "prefixlen": 24, "table": 254}]}},
    "plan extra field": {"op": "paths", "plan": {"interfaces": [], "script": "id"}},
    "plan sysctl": {"op": "paths", "plan": {"interfaces": [], "sysctls": {"kernel.modprobe": "/tmp/x"}}},
    "listening port": {"op": "listening", "port": "22; id"},
    "hello extra": {"op": "hello", "script": "id"},
    "launch far future": {"op": "launch", "key": "x", "program": "iperf3", "args": IPERF_CLIENT, "at": 4e9},
    "transfer held with a time": {"op": "launch", "key": "x", "program": "transfer",
                                  "args": {**TRANSFER_SOURCE, "hold": True, "at": 1e9}},
    "transfer hold text": {"op": "launch", "key": "x", "program": "transfer", "args": {**TRANSFER_SOURCE, "hold": "yes; id"}},
    "release nothing held": {"op": "release", "key": "x", "at": 1e9},
    "release traversal": {"op": "release", "key": "../../etc/passwd", "at": 1e9},
    "release extra field": {"op": "release", "key": "x", "at": 1e9, "argv": ["id"]},
}


@pytest.mark.parametrize("name", HOSTILE)
def test_agent_refuses_requests_outside_its_set(agent, name):
    a, _, log = agent
    reply = a.send(HOSTILE[name])
    assert reply.get("error", "").startswith("refused: "), reply
    assert "refused" in log.read_text()  # logged on the node
    assert a.send({"op": "hello"})["python"]  # and the agent goes on serving


def test_refused_requests_change_nothing(agent):
    a, ns, _ = agent
    forward = Path("/proc/sys/net/ipv4/ip_forward")
    inside = lambda: subprocess.run(["ip", "netns", "exec", ns, "cat", str(forward)], capture_output=True, text=True).stdout
    before = inside()
    for req in HOSTILE.values():
        a.send(req)
    assert inside() == before
    assert not list(Path("/etc").glob("x"))


def test_a_line_that_is_not_json_is_an_error_not_a_crash(agent):
    a, _, _ = agent
    assert "error" in a.send("sh -c id")
    assert a.send({"op": "hello"})["host"]


def test_allowed_requests_work(agent):
    """The set is enough for a run: sysctls from the allowlist, a traffic program with checked
    arguments, listening, wait, stop, kernel counters and facts."""
    a, ns, _ = agent
    assert a.send({"op": "sysctl", "values": {"net.ipv4.tcp_rmem": "4096 65536 1048576", "net.mptcp.enabled": 1}}) == {}
    got = subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-n", "net.ipv4.tcp_rmem"], capture_output=True, text=True).stdout
    assert got.split() == ["4096", "65536", "1048576"]
    assert a.send({"op": "launch", "key": "srv", "program": "iperf3", "args": {"mode": "server", "port": 5299}}) == {}
    deadline = time.monotonic() + 5
    while not a.send({"op": "listening", "port": 5299})["listening"]:
        assert time.monotonic() < deadline, "the MPTCP iperf3 server did not listen"
        time.sleep(0.05)
    a.send({"op": "launch", "key": "cli", "program": "iperf3",
            "args": {"mode": "client", "target": "127.0.0.1", "port": 5299, "bytes": 100000, "cc": "cubic"}})
    result = a.send({"op": "wait", "key": "cli", "timeout": 30})
    assert result["rc"] == 0 and json.loads(result["stdout"])["end"]["sum_sent"]["bytes"] >= 100000, result
    assert a.send({"op": "stop", "key": "srv"}) == {}
    # The rig's own transfer: the receiver reads every byte and stamps the last one.
    a.send({"op": "launch", "key": "sink", "program": "transfer", "args": {"mode": "sink", "port": 5298, "connections": 2}})
    while not a.send({"op": "listening", "port": 5298})["listening"]:
        assert time.monotonic() < deadline + 5, "the transfer sink did not listen"
        time.sleep(0.02)
    a.send({"op": "launch", "key": "src", "program": "transfer", "args": {
        "mode": "source", "port": 5298, "connections": 2, "target": "127.0.0.1", "bytes": 1_000_001, "cc": "cubic",
        "at": time.time() + 0.2, "sample_ms": 20}})
    src, sink = (json.loads(a.send({"op": "wait", "key": k, "timeout": 30})["stdout"]) for k in ("src", "sink"))
    assert sum(c["bytes"] for c in sink["connections"]) == 1_000_001 == sum(c["bytes"] for c in src["connections"])
    assert src["started_at"] <= min(c["first_byte_at"] for c in sink["connections"])
    assert all(c["subflows"] and c["subflows"][-1][3] >= c["bytes"] for c in src["connections"])  # per-subflow series
    assert a.send({"op": "alive", "key": "srv"}) == {"alive": False}
    assert a.send({"op": "mib"})["MPTcpExtMPCapableSYNRX"] >= 1  # the client's MPTCP connection
    assert "cubic" in a.send({"op": "facts"})["available"]


def test_stray_traffic_programs_of_a_lost_agent_are_stopped(agent, netns):
    """What a killed agent left running in the node (an iperf3 server holding its port) is found
    and stopped by the next agent; nothing outside the node's namespace is touched."""
    a, ns, _ = agent
    stray = netns.start(["iperf3", "-s", "-p", "5298"], ns, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        start_new_session=True)
    outside = netns.start(["iperf3", "-s", "-p", "5297", "-B", "127.0.0.1"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    assert stray.pid in a.send({"op": "stop_strays"})["stopped"]
    assert stray.wait(10) is not None and outside.poll() is None
