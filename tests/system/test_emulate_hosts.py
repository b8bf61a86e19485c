"""A campaign spread over three emulation "hosts" by ansible/emulate.yml, for real: the hosts are
this machine reached through Ansible's inventory (connection local), each with its own working
directory, checkout of the rig (the controller's commit, from the playbook's git bundle) and
emulated-rig prefix. One host's shard is killed mid-way (SIGKILL) and the playbook, run again,
resumes it and leaves the finished ones alone; the merge has every planned run once, the plan of
a single-host run, each run's host in its metadata, and InfluxDB takes it like any campaign.

The hosts' install (scripts/install.sh) is left out here: it would install into this machine's
/usr/local/bin and a venv per checkout; each checkout uses the test's Python and the built
emulator and congestion controls of this one (links, as a worktree does)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from fixtures.ansible_env import ANSIBLE, BIN, ansible_env
from fixtures.cli import REPO, run_rig
from rig.core.process import terminate
from rig.influx import Sink, server, sync
from rig.influx.config import InfluxConfig
from rig.rigs.emulated import netns
from rig.rigs.emulated.emulated_rig import STATE_ROOT, EmulatedRig
from rig.store.reader import CampaignDir

# 2 setups x 2 WiFi standards (4 blocks) x 8 repetitions = 32 short runs of one pair (the 100-run
# rehearsal, a benchmark: docs/measurements/2026-11-27-shards-and-merge.md).
RUNS = 32
CAMPAIGN = f"""name: spread
setups: [I, III]
pairs: 1
repetitions: {RUNS // 4}
seed: 32
factors: {{volume: [200KB], wifi_standard: [n5, ac]}}
limits: {{max_lag_p99_ms: 200}}
"""
HOSTS = ("e1", "e2", "e3")
KILL_AFTER = 3  # runs e2 has recorded when it is killed (of its 11)


@pytest.fixture
def hosts(tmp_path):
    """host -> its emulated-rig prefix; every rig is torn down afterwards, also on failure."""
    prefixes = {h: h + uuid.uuid4().hex[:5] for h in HOSTS}
    try:
        yield prefixes
    finally:
        for prefix in prefixes.values():
            EmulatedRig(prefix).down()
            assert netns.with_prefix(prefix) == [], "a rig left namespaces behind"


def inventory(tmp_path: Path, prefixes: dict[str, str]) -> Path:
    lines = ["[emulators]"] + [f"{h} ansible_connection=local emulator_prefix={p} emulator_dir={tmp_path / h}"
                               for h, p in prefixes.items()]
    lines += ["[emulators:vars]", f"ansible_python_interpreter={sys.executable}", "emulator_install=false",
              f"emulator_rig='{sys.executable} -m rig'", "emulator_poll_s=2"]
    f = tmp_path / "emulators.ini"
    f.write_text("\n".join(lines) + "\n")
    return f


def playbook(inv: Path, campaign: Path, tmp_path: Path, *extra: str) -> list[str]:
    return [str(BIN / "ansible-playbook"), "-i", str(inv), "emulate.yml", "-e", f"campaign={campaign}",
            "-e", f"emulator_collect={tmp_path / 'collect'}", "-e", f"emulate_controller_rig='{sys.executable} -m rig'",
            *extra]


def shard_dirs(tmp_path: Path, host: str) -> list[Path]:
    return sorted(d for d in (tmp_path / host).glob("spread-*/shard-*/spread-*") if d.is_dir())


def recorded(tmp_path: Path, host: str) -> int:
    return sum(len(CampaignDir(d).recorded_ids()) for d in shard_dirs(tmp_path, host))


@pytest.mark.emulated
def test_three_hosts_run_a_campaign_one_killed_and_resumed_merged_once(tmp_path, emulator, hosts):
    campaign = tmp_path / "spread.yaml"
    campaign.write_text(CAMPAIGN)
    plan = json.loads(run_rig("campaign", "plan", str(campaign), "--json", check=True).stdout)
    inv, env = inventory(tmp_path, hosts), ansible_env(tmp_path)

    # The install phase alone: each host gets the controller's commit; then the built emulator and
    # congestion controls of this machine, as a worktree links them.
    p = subprocess.run(playbook(inv, campaign, tmp_path, "--tags", "install"), cwd=ANSIBLE, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    for h in HOSTS:
        checkout = tmp_path / h / "rig"
        assert subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True,
                              text=True).stdout.strip() == commit
        for build in ("build", "nodes/bpf/build"):
            (checkout / build).symlink_to((REPO / build).resolve())

    # Every phase; e2's runner is killed once it has recorded a few runs.
    first = subprocess.Popen(playbook(inv, campaign, tmp_path), cwd=ANSIBLE, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        while recorded(tmp_path, "e2") < KILL_AFTER and first.poll() is None:
            time.sleep(0.5)
        assert first.poll() is None, "the playbook ended before e2 had recorded a run: " + first.stdout.read()[-3000:]
        runner = int((STATE_ROOT / f"{hosts['e2']}.lock").read_text())
        killed_at = time.time()
        os.kill(runner, signal.SIGKILL)
        out, _ = first.communicate(timeout=900)
    finally:
        terminate([first], 10, group=True)
    assert first.returncode != 0 and "e2" in out, out[-3000:]
    before = {d.name: CampaignDir(d).recorded_ids() for d in shard_dirs(tmp_path, "e2")}
    assert len(before) == 1 and KILL_AFTER <= sum(map(len, before.values())) < RUNS // 3 + 1, before
    # the merge refuses the missing shard with one line naming the runs missing
    assert "planned runs are recorded by none of the directories" in out and "they hold: 1/3, 3/3" in out, out[-3000:]

    # Again: e1 and e3 are only brought back, e2 resumes its directory.
    again = subprocess.run(playbook(inv, campaign, tmp_path), cwd=ANSIBLE, env=env, capture_output=True, text=True,
                           timeout=900)
    assert again.returncode == 0, again.stdout[-4000:] + again.stderr[-2000:]
    assert [d.name for d in shard_dirs(tmp_path, "e2")] == list(before)
    resumed = CampaignDir(shard_dirs(tmp_path, "e2")[0])
    for run_id in next(iter(before.values())):  # recorded before the kill: kept, not run again
        assert resumed.run(run_id).status()["finished_at"] < time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(killed_at + 1))
    for h in ("e1", "e3"):
        assert len(shard_dirs(tmp_path, h)) == 1  # not run a second time

    merged = CampaignDir(tmp_path / "collect" / f"spread-{plan['digest']}")
    ids = merged.recorded_ids()
    assert sorted(ids) == sorted(r["run_id"] for r in plan["runs"]) and len(ids) == RUNS
    assert merged.plan()["digest"] == plan["digest"] and merged.plan()["runs"] == plan["runs"]
    table = merged.runs_table()
    assert table.num_rows == RUNS and set(table.column("status").to_pylist()) <= {"ok", "invalid", "failed"}
    meta = merged.metadata()
    assert sorted(s["host"] for s in meta["shards"]) == list(HOSTS) and meta["host"] == "e1, e2, e3"
    by_shard = {s["shard"]: set(s["runs"]) for s in meta["shards"]}
    assert sum(map(len, by_shard.values())) == RUNS and set().union(*by_shard.values()) == set(ids)
    assert {s["git_commit"] for s in meta["shards"]} == {commit}
    for s in meta["shards"]:  # each host ran its shard on its own emulated rig
        assert s["rig"] == "emulated"

    # InfluxDB takes the merge like any campaign directory: every run once.
    with server.running(tmp_path / "influxd") as srv:
        server.create_database(srv.url, "merged")
        sink = Sink(InfluxConfig(url=srv.url, db="merged"))
        result = sync(merged.root, sink)
        assert result.ok and sorted(result.written) == sorted(ids), result.error
        assert sync(merged.root, sink).written == []
