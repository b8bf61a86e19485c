"""The loss-aware policy's link counters on the lab (nodes/agent/rig_node/linkloss.py): an
interface's root qdisc, read with the real `tc` in a namespace. There is no netem here, so what
is checked is the reading itself: packets counted, nothing lost by a qdisc that is not netem, and
counting that goes on when the qdisc is replaced (its counters start at 0). The emulated rig's
source, the radio's stats log: tests/unit/test_path_policy.py, and a whole run with the link
measure in tests/system/test_timeline.py."""

from __future__ import annotations

import json
import subprocess
import sys

from rig.rigs.emulated import netns as rig_netns

AGENT_DIR = "nodes/agent"
READER = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from rig_node.linkloss import Qdisc
q = Qdisc("v0")
for line in sys.stdin:  # one reading per line read
    print(json.dumps(q.read()), flush=True)
"""


def ping(ns: str, count: int) -> None:
    subprocess.run(["ip", "netns", "exec", ns, "ping", "-q", "-c", str(count), "-i", "0.01", "-W", "1", "10.9.0.2"],
                   capture_output=True, timeout=30, check=True)


def test_a_qdisc_reading_counts_what_the_interface_sent_and_goes_on_across_a_new_qdisc(netns):
    a, b = netns("a"), netns("b")
    netns.veth(a, "v0", b, "v1")
    for ns, dev, addr in ((a, "v0", "10.9.0.1/24"), (b, "v1", "10.9.0.2/24")):
        rig_netns.ip("addr", "add", addr, "dev", dev, netns=ns)
        rig_netns.ip("link", "set", dev, "up", netns=ns)
    rig_netns.ip("neigh", "flush", "dev", "v0", netns=a)
    subprocess.run(["ip", "netns", "exec", a, "tc", "qdisc", "replace", "dev", "v0", "root", "pfifo"], check=True)
    reader = netns.start([sys.executable, "-c", READER, AGENT_DIR], ns=a, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)

    def read() -> tuple[int, int]:
        reader.stdin.write("\n")
        reader.stdin.flush()
        return tuple(json.loads(reader.stdout.readline()))

    base = read()
    ping(a, 20)
    given, lost = read()
    assert given - base[0] >= 20 and lost == 0  # the requests (and ARP): pfifo's drops are no link loss
    subprocess.run(["ip", "netns", "exec", a, "tc", "qdisc", "replace", "dev", "v0", "root", "pfifo", "limit", "500"],
                   check=True)  # a new qdisc: its counters start at 0
    ping(a, 10)
    again, lost = read()
    assert again - given >= 10 and lost == 0
    reader.stdin.close()
    reader.wait(timeout=10)
