"""A campaign survives a lost component: real faults injected into real campaigns on the emulated rig.

Each test runs `rig campaign run` (or `rig nightly`) as a user does and, while a run's transfer
is in progress, breaks a real component: SIGKILL to a node agent, SIGKILL to a radio emulator,
a node "reboot" (its addresses, routes, rules, MPTCP endpoints and sysctls reset, its agent
killed), a node that is gone for good. The run in progress is recorded as failed (or invalid)
with the reason, the rig is restored, and the following runs are ok; what cannot be restored
stops the campaign resumably, and `--resume` runs exactly the missing runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from fixtures.cli import REPO, run_rig
from fixtures.faulted_campaign import (agent, campaign_file, campaign_text, cmdline, comm, connected, finish, ppid,
                                       recorded, recorded_runs, start, transfer_source, transfers_in, wait_for_transfer)
from rig.rigs.emulated import netns
from rig.rigs.emulated.emulated_rig import STATE_ROOT

pytestmark = pytest.mark.emulated

def _survived(code: int, log: Path, out: Path, lost: list[str]) -> tuple[Path, list[dict]]:
    """The campaign went on to its end: exit 0, every planned run recorded once (nothing lost,
    nothing twice), the rig restored after each lost component. Returns the runs not ok."""
    stderr = log.read_text()
    assert code == 0, stderr
    root, rows, plan_ids = recorded_runs(out)
    assert sorted(r["run_id"] for r in rows) == plan_ids
    for what in lost:
        assert f"restoring the rig ({what} lost)" in stderr, stderr
    return root, [r for r in rows if r["status"] != "ok"]


def test_killed_node_agents_fail_their_run_and_the_campaign_goes_on(tmp_path, emulator, rig_prefix):
    """SIGKILL to a sender's agent, later to a receiver's (whose transfer sink it leaves behind)."""
    proc, log = start(tmp_path, campaign_file(tmp_path, 5), rig_prefix, "--keep-up")
    try:
        first = wait_for_transfer(proc, rig_prefix)
        os.kill(agent(rig_prefix, "s1", proc.pid), signal.SIGKILL)
        wait_for_transfer(proc, rig_prefix, not_pid=first)
        os.kill(agent(rig_prefix, "r1", proc.pid), signal.SIGKILL)
    finally:
        code = finish(proc)
    root, failed = _survived(code, log, tmp_path / "results", ["node agent on s1", "node agent on r1"])
    assert sorted(r["reason"][:16] for r in failed) == ["node agent on r1", "node agent on s1"], failed
    assert all(r["status"] == "failed" and "SIGKILL" in r["reason"] for r in failed), failed
    status = json.loads((root / "runs" / failed[0]["run_id"] / "status.json").read_text())
    assert status["status"] == "failed" and status["failure"] == "agent_lost"
    # The killed agents' transfer processes were stopped; the last agents stopped their own.
    assert transfers_in(f"{rig_prefix}-r1") == [] and transfers_in(f"{rig_prefix}-s1") == []

    # The rig's faults say nothing of the network: --resume runs those runs again, their failed
    # records kept aside as attempts, never in the runs table.
    proc, log = start(tmp_path, campaign_file(tmp_path, 5), rig_prefix, "--resume")
    assert finish(proc) == 0, log.read_text()
    redone = sorted(r["run_id"] for r in failed)
    assert f"running again what the rig's faults failed: {', '.join(redone)}" in log.read_text()
    _, rows, plan_ids = recorded_runs(tmp_path / "results")
    assert sorted(r["run_id"] for r in rows) == plan_ids
    assert [(r["run_id"], r["reason"]) for r in rows if r["status"] != "ok"] == []
    kept = sorted(d.name for d in (root / "attempts").iterdir())
    assert kept == [f"{run_id}.1" for run_id in redone]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSTOP], ids=["broken", "unresponsive"])
def test_lost_ssh_session_is_re_established(tmp_path, emulator, rig_prefix, sig):
    """--transport ssh, as on the lab: the sshd serving s1's agent is killed (the TCP connection
    and every session on it end) or frozen (a node that stops answering: ssh gives up after its
    keepalives go unanswered); the runner opens a new SSH session and agent."""
    proc, log = start(tmp_path, campaign_file(tmp_path, 3), rig_prefix, "--transport", "ssh")
    sshd = None
    try:
        wait_for_transfer(proc, rig_prefix)
        # the agent's Python: not its forks, nor the shell and sudo that the runner's account starts it with
        agents = [pid for pid in netns.pids(f"{rig_prefix}-s1")
                  if any("rig_agent" in a for a in cmdline(pid)) and comm(pid).startswith("python")]
        assert len(agents) == 1, [(pid, comm(pid), cmdline(pid)[:4]) for pid in agents]
        [agent] = agents
        sshd = ppid(agent)
        while sshd and comm(sshd) != "sshd":  # a login shell and sudo may sit between them
            sshd = ppid(sshd)
        assert sshd, "the agent is not served by an sshd"
        os.kill(sshd, sig)
        code = finish(proc)
    finally:
        if proc.poll() is None:
            code = finish(proc)
        if sshd and sig == signal.SIGSTOP:
            os.kill(sshd, signal.SIGKILL)  # the frozen one is ours to end
    _, failed = _survived(code, log, tmp_path / "results", ["node agent on s1"])
    # "did not answer" a request under way, or "has exited" before the next one was sent
    assert len(failed) == 1 and failed[0]["reason"].startswith("node agent on s1 "), failed
    assert "SSH session lost" in failed[0]["reason"], failed


def test_killed_radio_emulator_is_restarted_before_the_next_run(tmp_path, emulator, rig_prefix):
    proc, log = start(tmp_path, campaign_file(tmp_path, 4), rig_prefix, "--keep-up")
    pid_file = STATE_ROOT / rig_prefix / "radios" / "ap1.pid"
    try:
        wait_for_transfer(proc, rig_prefix)
        killed = int(pid_file.read_text().split()[0])
        os.kill(killed, signal.SIGKILL)
    finally:
        code = finish(proc)
    root, spoiled = _survived(code, log, tmp_path / "results", ["radio emulator ap1"])
    assert len(spoiled) == 1, spoiled  # failed or invalid, by what the pair saw; the run says why
    status = json.loads((root / "runs" / spoiled[0]["run_id"] / "status.json").read_text())
    assert status["reason"] == "emulator for ap1 exited during the run", status
    restarted = int(pid_file.read_text().split()[0])
    assert restarted != killed and Path(f"/proc/{restarted}").exists()


DEFAULT_LIMITS = """
name: faults-default
setups: [I]
pairs: 1
repetitions: 6
seed: 7
factors:
  volume: [15MB]
  homing: [dual]
limits:
  max_lag_p99_ms: 200
"""


def _started(root: Path) -> list[tuple[float, str, dict]]:
    """Every recorded run's start (unix time), id and status.json, in the order they ran."""
    runs = []
    for d in (root / "runs").iterdir():
        status = json.loads((d / "status.json").read_text())
        runs.append((datetime.fromisoformat(status["started_at"]).timestamp(), d.name, status))
    return sorted(runs)


def _ticks_since_boot(pid: int | None = None) -> int:
    """When `pid` started (else: now), in clock ticks since boot (/proc/PID/stat's starttime)."""
    if pid is None:
        return int(float(Path("/proc/uptime").read_text().split()[0]) * os.sysconf("SC_CLK_TCK"))
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return -1


def _sending(proc: subprocess.Popen, prefix: str, log: Path, runs_before: int) -> int:
    """The transfer source of the run after the first `runs_before` ones (each failed, so none
    was prepared during the one before), started after they were recorded (not one of the failed
    run's, still being stopped), once its MPTCP connection is established."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and recorded(log) < runs_before:
        assert proc.poll() is None, "the campaign ended before the fault could be injected"
        time.sleep(0.02)
    recorded_at = _ticks_since_boot()
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the campaign ended before the fault could be injected"
        pid = transfer_source(prefix, "s1")
        if pid is not None and connected(prefix, "s1", pid) and _ticks_since_boot(pid) >= recorded_at:
            return pid
        time.sleep(0.02)
    pytest.fail("no transfer started")


def test_a_lost_part_ends_its_run_at_once_at_the_default_limits(tmp_path, emulator, rig_prefix):
    """The default run timeout (300 s): SIGKILL to a sender's agent, then a receiver's, then a
    radio emulator, then a sender's transfer source, each during a 15 MB transfer of its own run.
    Each hit run is recorded failed naming the lost part, and the next run starts seconds after
    the fault, not after the run timeout: the other nodes' programs were stopped at once
    (rig.run.watch). What each fault cost, from the fault to
    the next run's start, is printed (docs/measurements/2026-11-27-fault-cost.md)."""
    f = tmp_path / "faults-default.yaml"
    f.write_text(DEFAULT_LIMITS)
    proc, log = start(tmp_path, f, rig_prefix, "--keep-up")
    faults = []
    kill_agent = lambda host: os.kill(agent(rig_prefix, host, proc.pid), signal.SIGKILL)  # noqa: E731
    radio = lambda: os.kill(int((STATE_ROOT / rig_prefix / "radios" / "ap1.pid").read_text().split()[0]),  # noqa: E731
                            signal.SIGKILL)
    try:
        for n, (kind, inject) in enumerate((("sender's node agent", lambda pid: kill_agent("s1")),
                                            ("receiver's node agent", lambda pid: kill_agent("r1")),
                                            ("radio emulator", lambda pid: radio()),
                                            ("transfer source", lambda pid: os.kill(pid, signal.SIGKILL)))):
            pid = _sending(proc, rig_prefix, log, n)  # each fault in a run of its own
            faults.append((kind, time.time()))
            inject(pid)
    finally:
        code = finish(proc, timeout=600)
    root, spoiled = _survived(code, log, tmp_path / "results", ["node agent on s1", "node agent on r1", "radio emulator ap1"])
    runs = _started(root)
    for (kind, at), expected in zip(faults, ("node agent on s1", "node agent on r1", "emulator for ap1 exited",
                                               "transfer source on s1 killed by SIGKILL")):
        hit = max(i for i, (start, _, _) in enumerate(runs) if start <= at)
        _, run_id, status = runs[hit]
        assert status["status"] == "failed" and status["reason"].startswith(expected), status
        assert hit + 1 < len(runs), "the campaign did not go on after the fault"
        print(f"{kind}: {run_id} failed ({status['reason']}); the next run started "
              f"{runs[hit + 1][0] - at:.1f} s after the fault")
    assert len(spoiled) == 4, spoiled
    assert transfers_in(f"{rig_prefix}-r1") == [] and transfers_in(f"{rig_prefix}-s1") == []


# What a reboot takes from a node: addresses, routes, policy rules, MPTCP endpoints, sysctls.
REBOOT = """
for i in $(ls /sys/class/net); do [ "$i" = lo ] || { ip -4 addr flush dev "$i"; ip link set "$i" down; }; done
ip route flush table main
for t in $(ip rule show | sed -n 's/^\\([0-9]*\\):.*lookup \\([0-9][0-9]*\\).*/\\2/p'); do ip route flush table $t; done
for p in $(ip rule show | cut -d: -f1); do case $p in 0|32766|32767) ;; *) ip rule del pref $p;; esac; done
ip mptcp endpoint flush
ip mptcp limits set subflows 0 add_addr_accepted 0
sysctl -qw net.ipv4.tcp_notsent_lowat=4294967295
"""


def test_rebooted_receiver_gets_its_configuration_again(tmp_path, emulator, rig_prefix):
    proc, log = start(tmp_path, campaign_file(tmp_path, 4), rig_prefix, "--keep-up")
    ns = f"{rig_prefix}-r1"
    try:
        wait_for_transfer(proc, rig_prefix)
        for pid in netns.pids(ns):  # the node goes down: every process on it
            os.kill(pid, signal.SIGKILL)
        netns.sh(ns, REBOOT)
        assert "default" not in subprocess.run(["ip", "-n", ns, "route"], capture_output=True, text=True).stdout
    finally:
        code = finish(proc)
    _, failed = _survived(code, log, tmp_path / "results", ["node agent on r1"])
    assert len(failed) == 1 and failed[0]["reason"].startswith("node agent on r1"), failed
    # The runs after the reboot are ok (dual-homed: both paths, so routes and the B-side
    # announcement are back), and the node has its configuration again.
    ip = lambda *a: subprocess.run(["ip", "-n", ns, *a], capture_output=True, text=True).stdout  # noqa: E731
    assert "default" in ip("route") and "signal" in ip("mptcp", "endpoint")
    lowat = subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-n", "net.ipv4.tcp_notsent_lowat"],
                           capture_output=True, text=True).stdout.strip()
    assert lowat == "131072"


def test_node_that_cannot_be_restored_stops_the_nightly_resumably(tmp_path, emulator, rig_prefix):
    """s1 is gone for good (its namespace deleted): the campaign stops after its tries, the
    nightly exits 1 saying why, its OnFailure hook records it, and the next nightly resumes."""
    (tmp_path / "campaigns").mkdir()
    (tmp_path / "campaigns/faults.yaml").write_text(campaign_text(4))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RIG_")}
    env |= {"RIG_NIGHTLY_CAMPAIGNS": str(tmp_path / "campaigns"), "RIG_NIGHTLY_RESULTS": str(tmp_path / "results"),
            "RIG_NIGHTLY_EXPORTS": str(tmp_path / "exports"), "RIG_NIGHTLY_FAILURES": str(tmp_path / "failures"),
            "RIG_NIGHTLY_LOCK": str(tmp_path / "nightly.lock"), "RIG_INFLUX_CONFIG": str(tmp_path / "no-influx.toml"),
            "RIG_NIGHTLY_RUNNER": f"{sys.executable} -m rig campaign run --prefix {rig_prefix}", "PYTHONUNBUFFERED": "1"}
    (tmp_path / "no-influx.toml").write_text("")
    nightly = [sys.executable, "-m", "rig", "nightly", "faults"]

    first = subprocess.Popen(nightly, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_transfer(first, rig_prefix)
        ns = f"{rig_prefix}-s1"
        for pid in netns.pids(ns):
            os.kill(pid, signal.SIGKILL)
        netns.delete([ns])
        out, err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.terminate()
            first.communicate(timeout=120)
    assert first.returncode == 1, err
    assert "could not be restored after 4 tries" in err and "node agent on s1" in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: campaign run exited with status 1: the rig could not be restored"), last
    assert not (tmp_path / "exports").exists()
    root, rows, plan_ids = recorded_runs(tmp_path / "results")
    done_before = sorted(r["run_id"] for r in rows)
    assert 1 <= len(done_before) < len(plan_ids)
    assert [r["reason"][:16] for r in rows if r["status"] == "failed"] == ["node agent on s1"]

    hook = subprocess.run([*nightly[:-1], "--on-failure", "faults"], cwd=REPO, env=env, capture_output=True, text=True)
    assert hook.returncode == 0 and len(list((tmp_path / "failures").iterdir())) == 1

    second = subprocess.run(nightly, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    assert f"resuming {root}" in second.stderr
    # The run the lost node failed is the rig's fault: run again; every other recorded run is not.
    lost = [r["run_id"] for r in rows if r["status"] == "failed"]
    assert f"running again what the rig's faults failed: {', '.join(lost)}" in second.stderr
    for run_id in set(done_before) - set(lost):
        assert f"{run_id}:" not in second.stderr
    _, rows, _ = recorded_runs(tmp_path / "results")
    assert sorted(r["run_id"] for r in rows) == plan_ids
    assert sorted(d.name for d in (root / "runs").iterdir()) == plan_ids
    [export] = (tmp_path / "exports").iterdir()
    assert (export / "SHA256SUMS").is_file()
    assert not netns.with_prefix(rig_prefix)


def test_a_full_results_disk_is_one_line_and_resume_finishes_the_campaign(tmp_path, emulator, rig_prefix):
    """The results directory on a filesystem that fills up during the campaign (a tmpfs of 256 KB):
    one line naming the campaign directory, exit 1; the runs recorded before are whole, and with
    room again --resume records exactly the missing ones."""
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)], check=True)
    try:
        f = tmp_path / "small.yaml"
        f.write_text(campaign_text(12, volume="1MB"))
        out = disk / "results"
        full = run_rig("campaign", "run", str(f), "--out", str(out), "--prefix", rig_prefix)
        lines = [line for line in full.stderr.splitlines() if line.startswith("error:")]
        root = next(out.iterdir())
        assert full.returncode == 1 and len(lines) == 1, full.stderr
        assert lines[0].startswith(f"error: {root}: No space left on device; the runs recorded so far are kept")
        assert "Traceback" not in full.stderr
        kept = {d.name for d in (root / "runs").iterdir() if not d.name.startswith(".")}
        assert 0 < len(kept) < 12 and all((root / "runs" / r / "status.json").is_file() for r in kept)
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
        again = run_rig("campaign", "run", str(f), "--out", str(out), "--prefix", rig_prefix, "--resume", check=True)
        assert f"{len(kept)} already recorded, {12 - len(kept)} to run" in again.stderr
        rows = pq.read_table(root / "runs.parquet").to_pylist()
        assert sorted(r["run_id"] for r in rows) == sorted(json.loads((root / "plan.json").read_text())["runs"][i]["run_id"]
                                                           for i in range(12))
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
