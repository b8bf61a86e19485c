"""Whose fault a failed run is, on the emulated rig (rig.store.failures): a run that lost a
node's agent keeps what every other node recorded, as a failed run's; a run the rig failed (its
receiver's port held by another process, so its sink could not start) is run again by
--resume, its failed attempt set aside; the network's results are kept."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from fixtures.faulted_campaign import agent, campaign_file, finish, recorded, recorded_runs, sending, start
from rig.rigs.emulated import netns

pytestmark = pytest.mark.emulated

# A listener holding a port in a namespace until its stdin closes, as a killed campaign's sink did.
HOLD_PORT = ("import socket, sys; s = socket.socket(); s.bind(('0.0.0.0', int(sys.argv[1]))); s.listen();"
             " print('held', flush=True); sys.stdin.read()")


def test_a_lost_agent_keeps_what_the_other_nodes_recorded(tmp_path, emulator, rig_prefix):
    """SIGKILL to s1's agent during a run of two pairs: the run is failed by the rig (agent_lost),
    and its store holds the reachable nodes' interface samples, s2's sockets, pair 2's bytes and
    what r2's sink read until it was stopped;
    --resume sets it aside whole (attempts/) and runs it again."""
    # 32 MB: pair 2 must still be sending when s1's agent is lost; the polling here and the
    # watch's 0.5 s slice can outlast an 8 MB transfer on a loaded host.
    f = campaign_file(tmp_path, 3, pairs=2, volume="32MB")
    proc, log = start(tmp_path, f, rig_prefix)
    try:
        sending(proc, rig_prefix, "s2")
        sending(proc, rig_prefix, "s1")
        os.kill(agent(rig_prefix, "s1", proc.pid), signal.SIGKILL)
    finally:
        code = finish(proc)
    assert code == 0, log.read_text()
    root, rows, plan_ids = recorded_runs(tmp_path / "results")
    assert sorted({r["run_id"] for r in rows}) == plan_ids
    [hit] = {r["run_id"] for r in rows if r["status"] != "ok"}
    run = root / "runs" / hit
    status = json.loads((run / "status.json").read_text())
    assert status["status"] == "failed" and status["failure"] == "agent_lost" and status["unreachable"] == ["s1"], status
    assert status["reason"].startswith("node agent on s1"), status
    hosts = set(pq.read_table(run / "timeseries" / "interfaces.parquet").column("host").to_pylist())
    assert hosts == {"s2", "r1", "r2"}, hosts  # every reachable node's samples; none of the lost one
    pair2 = next(p for p in json.loads((run / "pairs.json").read_text()) if p["sender"] == "s2")
    assert pair2["status"] != "ok" and pair2["bytes_wifi"] + pair2["bytes_lte"] > 0, pair2
    if (run / "timeseries" / "subflows.parquet").exists():  # sampled every 1 / subflow_hz: a fault may come first
        sampled = set(pq.read_table(run / "timeseries" / "subflows.parquet").column("host").to_pylist())
        assert sampled == {"s2"}, sampled  # the sockets s2's agent sampled
    sink = json.loads((run / "transfers" / "s2.json").read_text())["sink"]  # r2's sink, stopped: its report
    assert sink["stopped"] and sum(c["bytes"] for c in sink["connections"]) > 0, sink
    received = pq.read_table(run / "timeseries" / "received.parquet").to_pylist()
    assert "r2" in {r["host"] for r in received} <= {"r1", "r2"}, received  # r1's too: what s1 sent before
    assert sum(r["bytes"] for r in received if r["host"] == "r2") > 0
    assert "ok" not in {r["status"] for r in rows if r["run_id"] == hit}  # never a valid run's rows

    again = subprocess.run([sys.executable, "-m", "rig", "campaign", "run", str(f), "--out", str(tmp_path / "results"),
                            "--prefix", rig_prefix, "--resume"], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"running again what the rig's faults failed: {hit}" in again.stderr
    _, rows, _ = recorded_runs(tmp_path / "results")
    assert sorted(r["run_id"] for r in rows) == sorted(plan_ids * 2) and {r["status"] for r in rows} == {"ok"}
    kept = root / "attempts" / f"{hit}.1"
    assert json.loads((kept / "status.json").read_text())["failure"] == "agent_lost"
    assert (kept / "timeseries" / "interfaces.parquet").is_file()


def test_a_sink_that_could_not_start_is_the_rigs_fault_and_resume_runs_it_again(tmp_path, emulator, rig_prefix):
    """The first run's port (5301) is held in r1's namespace from its creation: the run's sink
    dies with `Address already in use` and the run fails as the rig's (program_died), whatever
    its sources saw (refused). The port is freed once it is recorded; the second run (on 5302)
    is ok and kept, and --resume runs exactly the first again, its failed attempt in attempts/."""
    f = campaign_file(tmp_path, 2)
    proc, log = start(tmp_path, f, rig_prefix)
    holder = None
    try:
        deadline = time.monotonic() + 120
        while f"{rig_prefix}-r1" not in netns.with_prefix(rig_prefix):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.002)
        holder = subprocess.Popen(["ip", "netns", "exec", f"{rig_prefix}-r1", sys.executable, "-c", HOLD_PORT, "5301"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert holder.stdout.readline().strip() == "held"
        while recorded(log) < 1:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.02)
    finally:
        if holder is not None:
            holder.kill()
            holder.wait()
        code = finish(proc)
    assert code == 0, log.read_text()
    root, rows, plan_ids = recorded_runs(tmp_path / "results")
    [failed] = [r for r in rows if r["status"] != "ok"]
    status = json.loads((root / "runs" / failed["run_id"] / "status.json").read_text())
    assert status["failure"] == "program_died", status
    assert status["reason"] == "transfer sink on r1 exited with status 1: OSError: [Errno 98] Address already in use", status
    stderr = (root / "runs" / failed["run_id"] / "logs" / "s1.stderr").read_text()  # the pair's programs' output
    assert "Traceback" in stderr and "Address already in use" in stderr, stderr
    [kept] = [r["run_id"] for r in rows if r["status"] == "ok"]

    again = subprocess.run([sys.executable, "-m", "rig", "campaign", "run", str(f), "--out", str(tmp_path / "results"),
                            "--prefix", rig_prefix, "--resume"], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"running again what the rig's faults failed: {failed['run_id']}" in again.stderr
    assert "1 already recorded, 1 to run" in again.stderr and f"{kept}:" not in again.stderr
    _, rows, _ = recorded_runs(tmp_path / "results")
    assert sorted(r["run_id"] for r in rows) == plan_ids and {r["status"] for r in rows} == {"ok"}
    assert sorted(d.name for d in (root / "attempts").iterdir()) == [f"{failed['run_id']}.1"]
