"""The nightly entry point (lock, deadline, export, retention, failure hook) and its systemd units."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fixtures.cli import REPO
from rig.export import verify

RIG = str(Path(sys.executable).with_name("rig"))
STAND_IN = f"{sys.executable} {REPO / 'tests/fixtures/stand_in_runner.py'}"
UNITS = ("rig-nightly@.service", "rig-nightly@.timer", "rig-nightly-failure@.service")


@pytest.fixture
def lab(tmp_path):
    (tmp_path / "campaigns").mkdir()
    (tmp_path / "campaigns/nightly-test.yaml").write_text("name: nightlytest\nrepetitions: 2\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RIG_", "STAND_IN_"))}
    env |= {"RIG_NIGHTLY_CAMPAIGNS": str(tmp_path / "campaigns"),
            "RIG_NIGHTLY_RESULTS": str(tmp_path / "results"), "RIG_NIGHTLY_EXPORTS": str(tmp_path / "exports"),
            "RIG_NIGHTLY_FAILURES": str(tmp_path / "failures"), "RIG_NIGHTLY_LOCK": str(tmp_path / "nightly.lock"),
            "RIG_NIGHTLY_RUNNER": STAND_IN, "STAND_IN_LOG": str(tmp_path / "runner.json"),
            "RIG_INFLUX_CONFIG": str(tmp_path / "no-influx.toml")}
    (tmp_path / "no-influx.toml").write_text("")
    return tmp_path, env


def nightly(env, *args, **extra):
    return subprocess.run([RIG, "nightly", *args], capture_output=True, text=True, timeout=120,
                          env={**env, **extra})


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_nightly_runs_exports_reports_and_keeps_n(lab):
    root, env = lab
    exports = root / "exports"
    for old in ("nightly-test-20240101-013000", "nightly-test-20240102-013000", "nightly-test-20240103-013000"):
        (exports / old).mkdir(parents=True)
        (exports / old / "SHA256SUMS").write_text("")
    (exports / "other-20240101-013000").mkdir()
    (exports / "other-20240101-013000/SHA256SUMS").write_text("")
    (exports / "nightly-test-20240104-013000").mkdir()  # incomplete (no SHA256SUMS): left alone

    done = nightly(env, "nightly-test", "--keep", "2")
    assert done.returncode == 0, done.stderr
    runner = json.loads((root / "runner.json").read_text())
    assert runner["argv"][0].endswith("campaigns/nightly-test.yaml")
    assert runner["argv"][1:] == ["--out", str(root / "results"), "--resume", "--rig", "emulated"]

    left = sorted(p.name for p in exports.iterdir())
    new = [n for n in left if n.startswith("nightly-test-2") and n[13:21] > "20240104"]
    assert len(new) == 1 and verify(exports / new[0]) == []
    assert left == sorted(["nightly-test-20240103-013000", "nightly-test-20240104-013000",
                           "other-20240101-013000", new[0]])
    [campaign_dir] = (root / "results").iterdir()
    assert (campaign_dir / "report/index.html").is_file()
    assert not (root / "nightly.lock").read_text()  # released


def test_lock_refuses_an_overlapping_nightly(lab):
    root, env = lab
    first = subprocess.Popen([RIG, "nightly", "nightly-test"], env={**env, "STAND_IN_SLEEP": "6"},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (root / "runner.json").exists():  # the first one holds the lock by now
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.1)
        second = nightly({**env, "STAND_IN_LOG": str(root / "second.json")}, "nightly-test")
        assert second.returncode == 1 and "another nightly is running (pid" in second.stderr
        assert not (root / "second.json").exists()  # the runner was never started
        assert first.wait(timeout=60) == 0
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()


def test_deadline_stops_the_whole_campaign_process_group(lab):
    root, env = lab
    started = time.monotonic()
    result = nightly(env, "nightly-test", "--max-runtime", "2", STAND_IN_SLEEP="120")
    assert result.returncode == 1 and "exceeded the maximum runtime of 2 s" in result.stderr
    assert time.monotonic() - started < 60
    pids = json.loads((root / "runner.json").read_text())
    assert not alive(pids["pid"]) and not alive(pids["child"])
    assert not (root / "exports").exists()  # nothing exported from a stopped campaign


def test_failures_exit_1_bad_names_exit_2(lab):
    root, env = lab
    failed = nightly(env, "nightly-test", STAND_IN_EXIT="3")
    assert failed.returncode == 1 and "campaign run exited with status 3" in failed.stderr
    missing = nightly(env, "absent")
    assert missing.returncode == 2 and "absent.yaml: -: no such campaign file" in missing.stderr
    assert nightly(env, "../etc/passwd").returncode == 2


def test_on_failure_hook_records_and_notifies(lab):
    root, env = lab
    hook = nightly(env, "--on-failure", "nightly-test",
                   RIG_NIGHTLY_NOTIFY=f'echo "$RIG_NIGHTLY_CAMPAIGN $RIG_NIGHTLY_FAILURE" > {root}/notified')
    assert hook.returncode == 0, hook.stderr
    [note] = (root / "failures").iterdir()
    assert note.read_text().startswith("rig-nightly@nightly-test.service failed")
    assert (root / "notified").read_text().split() == ["nightly-test", str(note)]


def test_units_pass_systemd_analyze_verify(tmp_path):
    exe = Path("/usr/local/bin/rig")
    assert os.access(exe, os.X_OK), f"{exe} missing: scripts/install.sh links it (the units' ExecStart)"
    for unit in UNITS:
        shutil.copy(REPO / "systemd" / unit, tmp_path / unit)
    instances = [str(tmp_path / u.replace("@.", "@nightly-test.")) for u in UNITS]
    ok = subprocess.run(["systemd-analyze", "verify", *instances], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and ok.stderr == "", ok.stderr

    service = (REPO / "systemd/rig-nightly@.service").read_text()
    assert "OnFailure=rig-nightly-failure@%i.service" in service and "RuntimeMaxSec=7h" in service
    assert "ExecStart=/usr/local/bin/rig nightly %i" in service
    assert "Persistent=true" in (REPO / "systemd/rig-nightly@.timer").read_text()

    # The check is real: a mistake in a unit fails it.
    broken = tmp_path / "rig-nightly@.service"
    broken.write_text(service.replace("Type=exec", "Type=exec\nExecStart=rig nightly %i"))
    bad = subprocess.run(["systemd-analyze", "verify", instances[0]], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0
