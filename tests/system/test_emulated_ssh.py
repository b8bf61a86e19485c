"""Emulated nodes reached like the lab's: SSH over a management network, private filesystems."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from fixtures.cli import run_rig
from fixtures.etc_fingerprint import etc_fingerprint
from rig.rigs.emulated.emulated_rig import EmulatedRig
from rig.model.block import BlockSettings

pytestmark = pytest.mark.emulated


def test_ssh_reaches_nodes_whose_writes_stay_private(emulator, rig_prefix):
    before = etc_fingerprint()
    rig = EmulatedRig(rig_prefix)
    rig.up(BlockSettings("II", "n5", "band7-10mhz", 1, {}), ssh=True)
    t = rig.ssh_transport(provisioning=True)  # the key that gets a shell (the runner's gets only the agent)
    p = subprocess.run(t.argv("s1", ["sh", "-c", "echo node > /etc/rig-node-file && cat /etc/rig-node-file && ip -br addr show mgmt0"]),
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("node") and "10.0.0.21/24" in p.stdout
    other = subprocess.run(t.argv("r1", ["cat", "/etc/rig-node-file"]), capture_output=True, text=True, timeout=30)
    assert other.returncode != 0  # each node has its own layer
    assert not Path("/etc/rig-node-file").exists()
    rig.down()
    assert etc_fingerprint() == before


def test_campaign_over_ssh_transport(tmp_path, emulator, rig_prefix):
    before = etc_fingerprint()
    f = tmp_path / "c.yaml"
    f.write_text("name: ssh\nsetups: [III]\npairs: 2\nfactors: {volume: [3MB]}\nlimits: {max_lag_p99_ms: 200}\n")
    out = tmp_path / "results"
    run_rig("campaign", "run", str(f), "--out", str(out), "--prefix", rig_prefix, "--transport", "ssh", check=True)
    rows = pq.read_table(next(out.glob("ssh-*")) / "runs.parquet").to_pylist()
    assert len(rows) == 2 and all(r["status"] == "ok" and r["bytes_lte"] > 0 and r["bytes_wifi"] > 0 for r in rows), rows
    assert etc_fingerprint() == before
