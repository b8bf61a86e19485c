"""Real campaigns on the emulated rig: kernel MPTCP in namespaces, iperf3, ns-3 radios.

Lag thresholds are relaxed here: these tests check the rig's mechanics and the seed's
directions, on a CI machine that may be busy; emulator fidelity is measured in benchmarks.
"""

from __future__ import annotations

import json
import signal
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from fixtures.cli import REPO, run_rig

pytestmark = pytest.mark.emulated

HEADER_OVERHEAD = 0.08  # Ethernet + IP + TCP with timestamps and the MPTCP DSS option, per 1448-byte segment
MSS = 1448


def _campaign(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "c.yaml"
    f.write_text(text)
    return f


def _only_dir(out: Path) -> Path:
    dirs = [d for d in out.iterdir() if not d.name.startswith(".")]
    assert len(dirs) == 1, dirs
    return dirs[0]


HOMING = """
name: homing
setups: [I, II]
pairs: 2
repetitions: 1
seed: 3
factors:
  volume: [2MB]
  homing: [dual, lte, wifi]
limits:
  run_timeout_s: 60
  max_lag_p99_ms: 200
"""


def test_campaign_records_paths_bytes_and_complete_transfers(tmp_path, emulator, rig_prefix):
    out = tmp_path / "results"
    p = run_rig("campaign", "run", str(_campaign(tmp_path, HOMING)), "--out", str(out), "--prefix", rig_prefix, check=True)
    assert "6 runs planned" in p.stderr
    root = _only_dir(out)
    plan = json.loads((root / "plan.json").read_text())
    rows = pq.read_table(root / "runs.parquet").to_pylist()
    assert sorted({r["run_id"] for r in rows}) == sorted(r["run_id"] for r in plan["runs"])
    assert len(rows) == 6 * 2

    for r in rows:
        assert r["status"] == "ok", r
        assert r["goodput_bps"] > 1e6 and r["duration_s"] > 0
        if r["homing"] == "dual":
            assert r["bytes_lte"] > 0 and r["bytes_wifi"] > 0, r
        elif r["homing"] == "lte":
            assert r["bytes_lte"] > 0 and r["bytes_wifi"] == 0, r
        else:
            assert r["bytes_wifi"] > 0 and r["bytes_lte"] == 0, r

        # Every byte arrived: the receiver read the volume, and the FCT runs from the sender's start
        # to the last byte read (volume x 8 / FCT is the goodput).
        doc = json.loads((root / "runs" / r["run_id"] / "transfers" / f"{r['sender']}.json").read_text())
        sent, received = r["bytes_sent"], r["bytes_received"]
        assert received == sent == r["volume_bytes"] == sum(c["bytes"] for c in doc["sink"]["connections"])
        assert r["fct_s"] == r["duration_s"] and abs(r["goodput_bps"] - received * 8 / r["fct_s"]) < 1
        assert r["started_at"] < r["first_byte_at"] <= r["last_byte_at"]
        # What left the sender's interfaces agrees: at least what the receiver read, at most what
        # the sender wrote plus what TCP sent twice, within 5 % + headers.
        on_wire = r["bytes_lte"] + r["bytes_wifi"]
        assert received * 0.95 <= on_wire, (r["run_id"], received, on_wire)
        if not r["reinjections"]:  # MPTCP reinjections re-send data on the other path: more on the wire
            resent = r["retrans_segs"] * MSS
            assert on_wire <= (sent + resent) * 1.05 * (1 + HEADER_OVERHEAD), (r["run_id"], sent, resent, on_wire)

    run_dir = root / "runs" / rows[0]["run_id"]
    ts = pq.read_table(run_dir / "timeseries" / "interfaces.parquet").to_pylist()
    per_iface = defaultdict(list)
    for row in ts:
        per_iface[(row["host"], row["interface"])].append(row["time"])
    times = per_iface[("s1", "wlan0")]
    assert len(times) >= 3 and statistics.median(b - a for a, b in zip(times, times[1:])) <= 0.1  # >= 10 Hz
    status = json.loads((run_dir / "status.json").read_text())
    assert status["start_spread_ms"] < 50 and set(status["lag"]) >= {"ap1", "ap2", "cell"}
    # the radio table (per second: a run shorter than a second may have none) has the stations'
    # rows and each network's own, without a host (a WiFi AP's busy share and queue), so that what
    # a network's own queues drop is in the run's data too
    radio = [row for f in sorted(root.glob("runs/*/timeseries/radio.parquet")) for row in pq.read_table(f).to_pylist()]
    assert any(r["host"] == "s1" for r in radio)
    own = [r for r in radio if r["host"] is None]
    assert {r["network"] for r in own} >= {"ap1", "ap2"} and all(r["interface"] is None for r in own)
    assert (root / "metadata.json").is_file() and (root / "campaign.yaml").read_text() == (tmp_path / "c.yaml").read_text()


# Seed 547 orders each setup's block so that a dual-homed run follows a WiFi-only one and an
# LTE-only one, and precedes each (the test checks that the plan still does).
ALTERNATING = """
name: alternating
setups: [I, II, III]
pairs: 2
repetitions: 2
seed: 547
factors:
  volume: [4MB]
  homing: [dual, wifi, lte]
limits:
  run_timeout_s: 60
  max_lag_p99_ms: 200
"""


def test_every_path_joins_whatever_homing_ran_before(tmp_path, emulator, rig_prefix):
    out = tmp_path / "results"
    run_rig("campaign", "run", str(_campaign(tmp_path, ALTERNATING)), "--out", str(out), "--prefix", rig_prefix, check=True)
    root = _only_dir(out)
    order = [(r["setup"], r["homing"]) for r in json.loads((root / "plan.json").read_text())["runs"]]
    for setup in ("I", "II", "III"):
        homings = [h for s, h in order if s == setup]
        assert {("wifi", "dual"), ("lte", "dual"), ("dual", "wifi"), ("dual", "lte")} <= set(zip(homings, homings[1:]))
    rows = pq.read_table(root / "runs.parquet").to_pylist()
    assert len(rows) == 18 * 2
    for r in rows:
        assert r["status"] == "ok", (r["run_id"], r["reason"])
        life = pq.read_table(root / "runs" / r["run_id"] / "timeseries" / "subflow_life.parquet").to_pylist()
        carried = {x["path"] for x in life if x["host"] == r["sender"] and x["first_data_s"] is not None}
        if r["homing"] == "dual":
            assert carried == {"wifi", "lte"}, (r["run_id"], life)
            assert r["subflows"] == 2 and r["join_s"] > 0 and r["mp_join_synack_rx"] >= 1, r
        else:
            assert carried == {r["homing"]}, (r["run_id"], life)
            assert r["subflows"] == 1 and r["join_s"] is None and r["mp_join_syn_tx"] == 0, r


FULL_MESH = """
name: full-mesh
setups: [I, II]
pairs: 1
seed: 9
factors:
  duration: [8s]
paths: {radios: [%s], mode: fullmesh}
limits:
  max_lag_p99_ms: 200  # what is checked is the mesh, not this host's punctuality (as for the campaigns above)
"""


@pytest.mark.parametrize("radios", ["lte, lte2", "wifi, lte"])
def test_a_full_mesh_has_every_radio_reach_every_receiver_address_each_carrying_data(tmp_path, emulator, rig_prefix,
                                                                                     radios):
    """Seed 004's two LTE modems in one cell, and seed 001's 4-path: four subflows a connection."""
    out = tmp_path / "results"
    run_rig("campaign", "run", str(_campaign(tmp_path, FULL_MESH % radios)), "--out", str(out), "--prefix", rig_prefix,
            check=True)
    root = _only_dir(out)
    rows = pq.read_table(root / "runs.parquet").to_pylist()
    assert len(rows) == 2
    one, two = (r.strip() for r in radios.split(","))
    for r in rows:
        assert r["status"] == "ok", (r["run_id"], r["reason"])
        assert r["subflows"] == 4 and r["mp_join_synack_rx"] >= 3, r
        life = pq.read_table(root / "runs" / r["run_id"] / "timeseries" / "subflow_life.parquet").to_pylist()
        carried = {x["path"] for x in life if x["first_data_s"] is not None and x["closed_s"] is None}
        assert carried == {f"{radio}-{side}" for radio in (one, two) for side in "ab"}, (r["run_id"], life)


SHARED_BOTTLENECK = """
name: bottleneck
setups: [I, III]
pairs: 5
repetitions: 2
seed: 4
factors:
  volume: [6MB]
  wifi_standard: [g]
limits:
  run_timeout_s: 90
  max_lag_p99_ms: 200
"""


@pytest.mark.slow
def test_setup_iii_shared_bottleneck_lowers_aggregate_goodput(tmp_path, emulator, rig_prefix):
    out = tmp_path / "results"
    run_rig("campaign", "run", str(_campaign(tmp_path, SHARED_BOTTLENECK)), "--out", str(out), "--prefix", rig_prefix, check=True)
    aggregate = defaultdict(float)
    setup_of = {}
    for r in pq.read_table(_only_dir(out) / "runs.parquet").to_pylist():
        assert r["status"] == "ok", r
        aggregate[r["run_id"]] += r["goodput_bps"]
        setup_of[r["run_id"]] = r["setup"]
    mean = {s: statistics.mean(v for k, v in aggregate.items() if setup_of[k] == s) for s in ("I", "III")}
    assert mean["III"] < mean["I"], mean


RESUME = """
name: resume
setups: [I]
pairs: 1
repetitions: 5
seed: 5
factors:
  volume: [3MB]  # the LTE subflow joins within the transfer (a 1 MB one can end first)
limits:
  run_timeout_s: 30
  max_lag_p99_ms: 200
"""


def test_killed_campaign_resumes_with_each_run_exactly_once(tmp_path, emulator, rig_prefix):
    out = tmp_path / "results"
    f = _campaign(tmp_path, RESUME)
    argv = [sys.executable, "-m", "rig", "campaign", "run", str(f), "--out", str(out), "--prefix", rig_prefix]
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            runs = out.glob("resume-*/runs/*/status.json")
            if len(list(runs)) >= 2:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the campaign recorded no runs")
    finally:
        proc.send_signal(signal.SIGKILL)  # a crash: no cleanup of any kind
        proc.wait()
    root = _only_dir(out)
    recorded_before = {d.name for d in (root / "runs").iterdir() if not d.name.startswith(".")}
    assert 2 <= len(recorded_before) < 5

    p = run_rig("campaign", "run", str(f), "--out", str(out), "--prefix", rig_prefix, "--resume", check=True)
    assert f"resuming {root}" in p.stderr
    assert _only_dir(out) == root
    plan_ids = sorted(r["run_id"] for r in json.loads((root / "plan.json").read_text())["runs"])
    recorded = sorted(d.name for d in (root / "runs").iterdir())
    assert recorded == plan_ids  # no partial leftovers, nothing twice
    rows = pq.read_table(root / "runs.parquet").to_pylist()
    assert sorted(r["run_id"] for r in rows) == plan_ids
    # nothing of the killed campaign (its programs, their ports and connections) spoils a resumed run
    assert [(r["run_id"], r["reason"]) for r in rows if r["status"] != "ok"] == []
    for run_id in recorded_before:  # finished runs were not redone
        assert f"{run_id}:" not in p.stderr

    # Resuming a finished campaign starts a new one rather than touching the finished one.
    status = run_rig("emu", "status", "--prefix", rig_prefix, check=True)
    assert "is down" in status.stdout


LAGGING = """
name: lagging
setups: [II]
pairs: 1
repetitions: 1
seed: 5
factors:
  volume: [3MB]  # the LTE subflow joins within the transfer (a 1 MB one can end first)
  homing: [dual]
limits:
  run_timeout_s: 60
  max_lag_p99_ms: 0.001  # no emulator is ever this punctual: every attempt counts as lagged
  lag_retries: 1
"""


def test_a_run_spoiled_only_by_emulator_lag_is_run_again_and_the_attempt_kept(tmp_path, emulator, rig_prefix):
    out = tmp_path / "results"
    p = run_rig("campaign", "run", str(_campaign(tmp_path, LAGGING)), "--out", str(out), "--prefix", rig_prefix, check=True)
    root = _only_dir(out)
    (run_id,) = [r["run_id"] for r in json.loads((root / "plan.json").read_text())["runs"]]
    assert f"{run_id}: emulator lagged" in p.stderr and "running it again" in p.stderr
    assert "1 attempts run again because the emulator lagged" in p.stdout
    attempt = root / "attempts" / f"{run_id}.1"
    first = json.loads((attempt / "status.json").read_text())
    assert first["status"] == "invalid" and first["lagged"] and (attempt / "transfers").is_dir()
    # the host's CPU time its hypervisor took over the run, read from /proc/stat, beside each network's lag
    steal = {n: s["host_steal"] for n, s in first["lag"].items()}
    assert len(set(steal.values())) == 1 and 0 <= next(iter(steal.values())) < 1, steal
    assert "of the host's CPU time)" in first["reason"] and "the hypervisor took" in p.stderr
    final = json.loads((root / "runs" / run_id / "status.json").read_text())
    assert final["status"] == "invalid" and final["lag_retries"] == 1  # retries used up: recorded as it is
    rows = pq.read_table(root / "runs.parquet").to_pylist()
    assert [(r["run_id"], r["lag_retries"]) for r in rows] == [(run_id, 1)]
    assert not list((root / "attempts").glob(".partial-*"))
    # A resume keeps it (the host's doing, not the rig's); --rerun-lagged runs it again, its
    # recorded attempt set aside, with its lag retries afresh.
    again = run_rig("campaign", "run", str(_campaign(tmp_path, LAGGING)), "--out", str(out), "--prefix", rig_prefix,
                    "--resume", "--rerun-lagged", check=True)
    assert f"resuming {root}" in again.stderr and "running again 1 runs an emulator's lag made invalid" in again.stderr
    assert "1 attempts run again because the emulator lagged" in again.stdout
    assert sorted(a.name for a in (root / "attempts").iterdir()) == [f"{run_id}.{n}" for n in (1, 2, 3)]
    final = json.loads((root / "runs" / run_id / "status.json").read_text())
    assert final["status"] == "invalid" and final["lag_retries"] == 3  # every lagged attempt, both sessions
    assert [r["lag_retries"] for r in pq.read_table(root / "runs.parquet").to_pylist()] == [3]


def test_a_block_change_restarts_only_the_radio_networks_that_change(emulator, rig_prefix):
    """Setup I -> II: AP1 (senders) and AP2 (receivers' A side in both) keep running with their
    TAPs; the cell (receivers' B side in Setup I only) restarts and AP3 starts, side by side;
    every station TAP is in its host under its name."""
    from rig.rigs.emulated import netns
    from rig.rigs.emulated.emulated_rig import EmulatedRig
    from rig.model.block import BlockSettings
    from rig.model.topology import GATEWAY_HOST

    rig = EmulatedRig(rig_prefix)
    first = BlockSettings("I", "n5", "band7-10mhz", 1, {})
    rig.up(first)
    pids = {n: p.pid for n, p in rig.radios.items()}
    rig.attach_radios(first)  # the same block again: nothing restarts
    assert {n: p.pid for n, p in rig.radios.items()} == pids
    rig.attach_radios(BlockSettings("II", "n5", "band7-10mhz", 1, {}))
    kept = {n for n, p in rig.radios.items() if pids.get(n) == p.pid}
    assert kept == {"ap1", "ap2"} and set(rig.radios) == {"ap1", "ap2", "ap3", "cell"}, (pids, rig.radios)
    for host, ifname in [*rig.stations.values(), *((GATEWAY_HOST[n], "radio0") for n in rig.radios)]:
        netns.ip("link", "show", ifname, netns=rig.ns(host))  # RigError if it is not there
