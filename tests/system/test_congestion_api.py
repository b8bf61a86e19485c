"""rig.congestion on this host: registration, namespaces, and what ran on each subflow.

Fast (a few seconds): one namespace (the shared `netns` fixture), loopback MPTCP traffic only.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from rig import congestion
from rig.core.errors import RigError


def test_ensure_registered_is_idempotent_and_rejects_unknown_names():
    congestion.ensure_registered(congestion.RIG_CCS)
    congestion.ensure_registered(["lia", "lia"])
    assert set(congestion.RIG_CCS) <= congestion.available()
    assert all(congestion.explain(n) is None for n in congestion.RIG_CCS)
    assert {name for name, _, state in congestion.struct_ops_maps() if state == "INUSE"} == set(congestion.RIG_CCS)
    # repairs() sums the `repairs` global of each object's .bss map: it must be there to be read
    for name in congestion.RIG_CCS:
        dump = subprocess.run(["bpftool", "-j", "map", "dump", "name", f"{name}.bss"], capture_output=True, text=True)
        assert dump.returncode == 0 and '"repairs":' in dump.stdout, (name, dump.stderr)
    assert set(congestion.repairs()) == set(congestion.RIG_CCS)
    with pytest.raises(RigError, match="not one of the rig's congestion controls"):
        congestion.ensure_registered(["cubci"])
    why = congestion.explain("vegas")
    assert why.cause is congestion.Cause.UNKNOWN and "does not provide it" in why.message


def test_allow_in_namespace(netns):
    name = netns("api")
    congestion.ensure_registered(["olia"])
    congestion.allow_in_namespace(name, ["reno"])  # already allowed: nothing to do
    host_list = open("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read()
    if "olia" in host_list.split():
        pytest.skip("olia already allowed host-wide on this host")
    with pytest.raises(RigError, match="host-wide"):
        congestion.allow_in_namespace(name, ["olia"])
    assert open("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read() == host_list  # untouched


def test_subflow_ccs_reports_the_cc_each_subflow_runs(netns):
    name = netns("api")
    congestion.ensure_registered(["balia"])
    subprocess.run(["ip", "-n", name, "addr", "add", "127.0.0.2/8", "dev", "lo"], check=True)
    subprocess.run(["ip", "-n", name, "mptcp", "limits", "set", "subflow", "2"], check=True)
    subprocess.run(["ip", "-n", name, "mptcp", "endpoint", "add", "127.0.0.2", "dev", "lo", "subflow"], check=True)
    netns.start(["mptcpize", "run", "iperf3", "-s", "-1", "-p", "5301"], name,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    client = netns.start(["mptcpize", "run", "iperf3", "-c", "127.0.0.1", "-p", "5301", "-C", "balia", "-t", "3", "-b", "50M"],
                         name, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.5)
    socks = congestion.subflow_ccs(name)
    data = [s for s in socks if s["remote"].endswith(":5301") and s["mptcp"] and s.get("bytes_acked", 0) > 100_000]
    assert len(data) == 2, socks  # both subflows of the data connection
    assert {s["cc"] for s in data} == {"balia"}
    assert all(s["cwnd"] > 0 and s["rtt_ms"] >= 0 for s in data)
    client.wait(10)
