"""A path cut and restored during a transfer, with each path manager a campaign could name: what
takes the path back is the path manager's alone (the rig announces and renews nothing).

Between the two namespaces of tests/fixtures/two_paths.py (a dual-homed client pinned as the
rig's senders are, and its server), path 2's link goes down in the client, as a modem that lost
its signal (its routes go with it, its address stays), and comes back with its routes, as the
node agent's `link_up` brings it. Then:

- the in-kernel path manager (`paths.manager: kernel`) keeps the stalled subflow, and that same
  subflow carries data again (at its next retransmission);
- mptcpd 0.12 with its addr_adv plugin (the in-kernel path manager, endpoints managed by mptcpd)
  does nothing on the link's return: the endpoints stay as they were and the same stalled
  subflow resumes, as without it;
- mptcpd 0.12 with its sspi plugin (net.mptcp.path_manager=userspace) opens no subflow on path 2
  at all: sspi only announces the client's other addresses to the server, whose in-kernel path
  manager opens no subflow towards a client;
- mptcpd with the rig's own plugin (nodes/mptcpd/rig_pm.c), what a campaign's `paths.manager:
  userspace` runs on the senders, opens path 2's subflow and, when the link comes back, replaces
  the stalled subflow by a new one, which carries data.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from fixtures.namespaces import Namespaces
from rig.rigs import mptcpd as rig_mptcpd
from fixtures.two_paths import C1, C2, S2, finish, sh, sink_and_source

MPTCPD = "/usr/libexec/mptcpd"  # Debian's mptcpd package (outside PATH: a systemd unit starts it)
CUT_AT_S, RESTORE_AT_S, SECONDS = 1.5, 4.5, 14  # a 3 s outage: its backoff ends well within the transfer


def endpoints(ns: str) -> str:
    return sh("ip", "-n", ns, "mptcp", "endpoint", "show").stdout


def start_mptcpd(netns: Namespaces, ns: str, plugin: str, *flags: str) -> subprocess.Popen:
    """mptcpd in the client's namespace with only `plugin`, once it says the plugin is up. The
    command line overrides every setting of the host's /etc/mptcpd/mptcpd.conf."""
    sh("ip", "-n", ns, "mptcp", "endpoint", "flush")  # the fixture's endpoints: now mptcpd's business
    daemon = netns.start([MPTCPD, "--log=stderr", "--plugin-dir=/usr/lib/x86_64-linux-gnu/mptcpd",
                          f"--path-manager={plugin}", f"--load-plugins={plugin}",
                          "--notify-flags=existing,skip_link_local,skip_loopback", *flags], ns,
                         stderr=subprocess.PIPE, text=True)
    for line in daemon.stderr:  # its log ends when it exits: a failed start ends the loop
        if "path manager initialized" in line:
            return daemon
    raise AssertionError(f"mptcpd ({plugin}) did not start: exit status {daemon.wait()}")


def transfer_with_a_cut(netns: Namespaces, ns: dict, port: int) -> tuple[dict, float, float]:
    """One connection for SECONDS, path 2 down from CUT_AT_S to RESTORE_AT_S: (its report, the
    unix times of the cut and of the restore)."""
    _, source = sink_and_source(netns, ns, port, [], ["--seconds", str(SECONDS), "--sample-ms", "100"])
    start = time.time()
    time.sleep(CUT_AT_S)
    down = time.time()
    sh("ip", "-n", ns["c"], "link", "set", "c2", "down")
    time.sleep(RESTORE_AT_S - CUT_AT_S)
    up = time.time()
    sh("ip", "-n", ns["c"], "link", "set", "c2", "up")
    sh("ip", "-n", ns["c"], "route", "replace", f"{S2}/32", "dev", "c2", "table", "102")  # as link_up
    assert up - start < SECONDS - 5, "the host was too slow to cut and restore within the transfer"
    return finish(source)["connections"][0], down, up


def path2_subflows(conn: dict) -> dict[str, list[list]]:
    """The samples of each subflow from the client's path-2 address, by its local ip:port."""
    out: dict[str, list[list]] = {}
    for row in conn["subflows"]:
        if row[1].rsplit(":", 1)[0] == C2:
            out.setdefault(row[1], []).append(row)
    return out


def assert_the_stalled_subflow_carries_data_again(conn: dict, down: float, up: float) -> None:
    subflows = path2_subflows(conn)
    before = {local: max(r[3] for r in rows if r[0] <= down) for local, rows in subflows.items()
              if any(r[0] <= down for r in rows)}
    assert before and all(acked > 0 for acked in before.values()), subflows  # path 2 carried data first
    at_restore = {local: max(r[3] for r in rows if r[0] <= up) for local, rows in subflows.items()
                  if any(r[0] <= up for r in rows)}
    resumed = {local for local, rows in subflows.items() if any(r[0] > up and r[3] > at_restore.get(local, 0)
                                                                 for r in rows)}
    assert resumed and resumed <= set(before), (resumed, before)  # the subflow from before the cut
    events = conn["events"]
    assert not [e for e in events if e["event"] == "sub_closed" and e["local"] in before], events
    assert not [e for e in events if e["event"] == "sub_established" and e["t"] > down], events  # none anew


@pytest.mark.parametrize("manager", ["kernel", "mptcpd-addr_adv"])
def test_a_restored_path_carries_data_again_on_its_stalled_subflow(netns, two_paths, manager):
    ns = two_paths
    daemon = None
    if manager == "mptcpd-addr_adv":
        daemon = start_mptcpd(netns, ns["c"], "addr_adv", "--addr-flags=subflow")
        deadline = time.monotonic() + 10
        while C2 not in endpoints(ns["c"]):  # mptcpd adds an endpoint for each address it finds
            assert time.monotonic() < deadline, endpoints(ns["c"])
            time.sleep(0.1)
    before = endpoints(ns["c"])
    conn, down, up = transfer_with_a_cut(netns, ns, 5410)
    assert_the_stalled_subflow_carries_data_again(conn, down, up)
    assert endpoints(ns["c"]) == before  # nothing announced or renewed an address
    if daemon is not None:
        assert daemon.poll() is None  # mptcpd ran throughout, and did nothing on the link's return


def test_mptcpds_userspace_sspi_plugin_opens_no_subflow_on_the_second_path(netns, two_paths):
    ns = two_paths
    sh("ip", "netns", "exec", ns["c"], "sysctl", "-qw", "net.mptcp.path_manager=userspace")
    daemon = start_mptcpd(netns, ns["c"], "sspi")
    _, source = sink_and_source(netns, ns, 5411, [], ["--seconds", "3", "--sample-ms", "100"])
    conn = finish(source)["connections"][0]
    locals_ = {row[1].rsplit(":", 1)[0] for row in conn["subflows"]}
    assert locals_ == {C1}, conn["subflows"][-3:]  # the initial subflow alone carried the data
    assert not [e for e in conn["events"] if e["event"] == "sub_established"], conn["events"]
    assert daemon.poll() is None


def start_rig_pm(netns: Namespaces, ns: str, log) -> subprocess.Popen:
    """mptcpd with the rig's plugin in the client's namespace, as the emulated rig starts it."""
    sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.mptcp.path_manager=userspace")
    with open(log, "w") as f:
        daemon = netns.start(rig_mptcpd.argv(), ns, stdout=f, stderr=subprocess.STDOUT)
    rig_mptcpd.wait_ready(daemon, log, ns)
    return daemon


def test_the_rigs_plugin_re_creates_a_returning_paths_subflow(netns, two_paths, tmp_path):
    """net.mptcp.path_manager=userspace and mptcpd with the rig's plugin (rig_pm) in the client,
    its endpoints and tables as the rig's paired plan: the plugin opens path 2's subflow to the
    announced address, and when path 2's link comes back it replaces the stalled subflow by a
    new one, which carries data. The server's endpoints are untouched: nothing is re-announced."""
    rig_mptcpd.plugin_built()
    ns = two_paths
    daemon = start_rig_pm(netns, ns["c"], tmp_path / "mptcpd.log")
    server_endpoints = endpoints(ns["s"])
    conn, down, up = transfer_with_a_cut(netns, ns, 5412)
    log = (tmp_path / "mptcpd.log").read_text()
    subflows = path2_subflows(conn)
    before = {local for local, rows in subflows.items() if any(r[0] <= down and r[3] > 0 for r in rows)}
    assert before, (subflows, log)  # the plugin's join on path 2 carried data before the cut
    after = {local for local, rows in subflows.items() if local not in before and
             any(r[0] > up and r[3] > 0 for r in rows)}
    assert len(after) == 1, (subflows, log)  # one new subflow on path 2 (no two joins) carried data after the restore
    events = conn["events"]
    assert [e for e in events if e["event"] == "sub_closed" and e["local"] in before], events  # the stalled one went
    assert [e for e in events if e["event"] == "sub_established" and e["t"] > up and e["local"] in after], events
    assert endpoints(ns["s"]) == server_endpoints
    assert daemon.poll() is None, log


def test_the_rigs_plugin_makes_a_backup_endpoints_initial_subflow_backup(netns, two_paths, tmp_path):
    """A backup endpoint (factors.backup) under the plugin as under the kernel's path manager:
    path 1 carries the initial subflow and is backup, so once path 2 joined the data goes there."""
    rig_mptcpd.plugin_built()
    ns = two_paths
    sh("ip", "-n", ns["c"], "mptcp", "endpoint", "change", C1, "backup")
    start_rig_pm(netns, ns["c"], tmp_path / "mptcpd.log")
    _, source = sink_and_source(netns, ns, 5413, [], ["--seconds", "4", "--sample-ms", "100"])
    conn = finish(source)["connections"][0]
    log = (tmp_path / "mptcpd.log").read_text()
    assert "the initial subflow set backup" in log, log
    last = {}
    for row in conn["subflows"]:
        last[row[1].rsplit(":", 1)[0]] = max(last.get(row[1].rsplit(":", 1)[0], 0), row[3])
    assert last.get(C2, 0) > 10 * last.get(C1, 0), (last, log)  # path 1 only until path 2 joined
