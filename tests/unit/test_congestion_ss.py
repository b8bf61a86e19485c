"""rig.congestion's `ss -tinH` parser on recorded output (tests/data), no root needed.

ss-tinH-mptcp-loopback.txt: `ss -tinH state established` in a namespace during two iperf3 runs over
loopback (kernel 6.18): an MPTCP one with -C lia and two subflows (127.0.0.1 and 127.0.0.2), and a
plain TCP one with -C cubic; the control connections run the namespace's default, bbr. Both ends'
sockets are in it, the server's as IPv4-mapped IPv6 addresses.
"""

from __future__ import annotations

import pytest

from fixtures.cli import REPO
from rig.congestion import parse_ss

DATA = REPO / "tests" / "data"


@pytest.fixture
def loopback() -> list[dict]:
    return parse_ss((DATA / "ss-tinH-mptcp-loopback.txt").read_text())


def by_ends(socks: list[dict]) -> dict[tuple[str, str], dict]:
    return {(s["local"], s["remote"]): s for s in socks}


def test_every_socket_once(loopback):
    assert len(loopback) == 12
    assert len(by_ends(loopback)) == 12


def test_mptcp_subflows_of_the_lia_connection(loopback):
    socks = by_ends(loopback)
    # the client's two data subflows: the join from 127.0.0.2 (ss appends %lo) and the first one
    join = socks[("127.0.0.2%lo:40421", "127.0.0.1:5301")]
    assert join == {"local": "127.0.0.2%lo:40421", "remote": "127.0.0.1:5301", "cc": "lia", "mptcp": True,
                    "cwnd": 10, "bytes_acked": 2455401, "snd_wnd": 1988608, "rcv_ssthresh": 65495, "rtt_ms": 35.241}
    first = socks[("127.0.0.1:54882", "127.0.0.1:5301")]
    assert (first["cc"], first["mptcp"], first["cwnd"], first["bytes_acked"], first["rtt_ms"]) == \
        ("lia", True, 11, 4950286, 0.139)
    # the server's end of the join: no bytes_acked (it only received), rtt "1/0.5"
    server = socks[("[::ffff:127.0.0.1]:5301", "[::ffff:127.0.0.2]:40421")]
    assert server["cc"] == "lia" and server["mptcp"] and server["rtt_ms"] == 1.0 and "bytes_acked" not in server


def test_plain_tcp_and_control_connections(loopback):
    socks = by_ends(loopback)
    cubic = socks[("127.0.0.1:59220", "127.0.0.1:5302")]
    assert cubic == {"local": "127.0.0.1:59220", "remote": "127.0.0.1:5302", "cc": "cubic", "mptcp": False,
                     "cwnd": 11, "bytes_acked": 3801126, "snd_wnd": 328704, "rcv_ssthresh": 65495, "rtt_ms": 0.087}
    # bbr's "bbr:(bw:...,mrtt:...)" field does not disturb the others
    control = socks[("127.0.0.1:59212", "127.0.0.1:5302")]
    assert (control["cc"], control["mptcp"], control["cwnd"], control["bytes_acked"]) == ("bbr", False, 13, 207)
    ccs = sorted(s["cc"] for s in loopback)
    assert ccs == ["bbr"] * 6 + ["cubic"] * 2 + ["lia"] * 4
    assert sum(s["mptcp"] for s in loopback) == 8


def test_odd_input():
    assert parse_ss("") == []
    # a socket line without its info line, then one whose info has no CC name first
    text = "0 0 10.0.0.1:1 10.0.0.2:2\n0 0 10.0.0.1:3 10.0.0.2:4\n\t wscale:7,7 cwnd:5 rtt:2.5/1\n"
    assert parse_ss(text) == [{"local": "10.0.0.1:3", "remote": "10.0.0.2:4", "cc": "", "mptcp": False, "cwnd": 5,
                               "rtt_ms": 2.5}]
    assert parse_ss("garbage\n\t lia cwnd:3\n") == []


def test_ssthresh_when_ss_shows_one():
    """ss-tinH-mptcp-olia-ssthresh45.txt: the client's side of a loopback MPTCP iperf3 run with -C olia
    after a fixed initial ssthresh of 45 was set for the namespace (nodes/agent/rig_node/ccparams.py):
    the two olia subflows show ssthresh:45; the bbr control connection's ssthresh is infinite, which
    ss leaves out. rcv_ssthresh is another field."""
    socks = by_ends(parse_ss((DATA / "ss-tinH-mptcp-olia-ssthresh45.txt").read_text()))
    assert {ends: (s["cc"], s.get("ssthresh")) for ends, s in socks.items()} == {
        ("127.0.0.1:38760", "127.0.0.1:5301"): ("bbr", None),
        ("127.0.0.1:38764", "127.0.0.1:5301"): ("olia", 45),
        ("127.0.0.2%lo:44377", "127.0.0.1:5301"): ("bbr", None),
        ("127.0.0.2%lo:47607", "127.0.0.1:5301"): ("olia", 45),
    }


def test_buffers_with_skmem():
    """ss-tinmH-mptcp-joined-rcvbuf.txt: `ss -tinmH state established` on the sender (its two lines
    first) and then the receiver of an emulated dual run (kernel 6.18, balia, tcp_rmem 4096 131072
    1000000), 5 s in, with the WiFi path set to backup. The LTE subflow joined after the connection's
    receive buffer had stopped growing: the receiver's end of it kept the default 131072
    (rb), offers at most 85504 (rcv_ssthresh), and the sender sees that window (snd_wnd) and has
    that much in flight. -m puts skmem before the CC name."""
    socks = by_ends(parse_ss((DATA / "ss-tinmH-mptcp-joined-rcvbuf.txt").read_text()))
    sender_lte = socks[("10.45.0.11:34237", "10.45.0.21:5302")]
    assert (sender_lte["cc"], sender_lte["mptcp"], sender_lte["cwnd"], sender_lte["snd_wnd"]) == ("balia", True, 917, 85504)
    receiver_lte = socks[("10.45.0.21:5302", "10.45.0.11:34237")]
    assert (receiver_lte["cc"], receiver_lte["rcvbuf"], receiver_lte["rcv_ssthresh"]) == ("bbr", 131072, 85504)
    receiver_wifi = socks[("10.1.2.21:5302", "10.1.1.11:53273")]
    assert (receiver_wifi["rcvbuf"], receiver_wifi["rcv_ssthresh"]) == (1000000, 652343)
    assert all(s["mptcp"] for s in socks.values()) and len(socks) == 4
