"""`rig campaign run FILE --rig INVENTORY`: the physical lab's path, exercised for real against
emulated nodes that play the lab (SSH on a management network, a lab-shaped inventory)."""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from fixtures.cli import REPO
from rig import congestion
from rig.rigs.emulated.inventory import emulated_inventory
from rig.rigs.emulated.emulated_rig import EmulatedRig
from rig.model.block import BlockSettings
from rig.agents.netns import AGENT

pytestmark = pytest.mark.emulated


@pytest.fixture
def lab(emulator, rig_prefix, tmp_path):
    """An emulated rig up with --ssh, and an inventory of it in the lab's shape."""
    rig = EmulatedRig(rig_prefix)
    rig.up(BlockSettings("II", "n5", "band7-10mhz", 1, {}), ssh=True)
    inv = tmp_path / "lab.ini"
    # The emulated cell's modems need a next hop (the lab's raw-IP modems do not); the agent is
    # this checkout's (the node role would have put it at /opt/rig/rig_agent.py).
    inv.write_text(emulated_inventory(rig, "II", 1) + f"lte_gateway=10.45.0.1\nnode_agent_path={AGENT}\n")
    yield rig, inv


def _run_in_mgmt(rig, *args, env=None):
    """The controller's view: inside the management network, like the lab's controller host."""
    argv = ["ip", "netns", "exec", rig.ns("mgmt"), sys.executable, "-m", "rig", *args]
    return subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=300, env={**os.environ, **(env or {})})


def test_campaign_on_an_inventory(lab, tmp_path):
    rig, inv = lab
    f = tmp_path / "c.yaml"
    f.write_text("name: lab\nsetups: [II]\npairs: 1\nfactors: {volume: [4MB], homing: [dual, wifi]}\n")
    p = _run_in_mgmt(rig, "campaign", "run", str(f), "--rig", str(inv), "--out", str(tmp_path / "out"))
    assert p.returncode == 0, p.stderr
    root = next((tmp_path / "out").glob("lab-*"))
    rows = pq.read_table(root / "runs.parquet").to_pylist()
    assert len(rows) == 2 and all(r["status"] == "ok" for r in rows), rows
    assert all(r["bytes_lte"] > 0 for r in rows if r["homing"] == "dual")
    assert (root / "metadata.json").read_text().count(str(inv)) == 1  # provenance names the lab


def test_several_setups_need_a_reconfigure_command(lab, tmp_path):
    rig, inv = lab
    f = tmp_path / "c.yaml"
    f.write_text("name: lab2\nsetups: [II, III]\npairs: 1\nfactors: {volume: [4MB]}\n")
    out = tmp_path / "out"
    p = _run_in_mgmt(rig, "campaign", "run", str(f), "--rig", str(inv), "--out", str(out))
    assert p.returncode == 2 and "setups" in p.stderr and "RIG_RECONFIGURE" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and not out.exists()

    # The lab's re-wiring (ansible-playbook setup.yml) is played here by re-building the emulated rig.
    rewire = f"{sys.executable} -m rig emu up --ssh --prefix {rig.prefix} --pairs 1 --setup {{setup}} --wifi {{wifi_standard}}"
    p = _run_in_mgmt(rig, "campaign", "run", str(f), "--rig", str(inv), "--out", str(out), env={"RIG_RECONFIGURE": rewire})
    assert p.returncode == 0, p.stderr
    rows = pq.read_table(next(out.glob("lab2-*")) / "runs.parquet").to_pylist()
    assert {r["setup"] for r in rows} == {"II", "III"} and all(r["status"] == "ok" for r in rows), rows


def test_doctor_lists_each_nodes_ccs_and_a_campaign_they_cannot_run_is_refused(lab, tmp_path):
    """The nodes' kernel is this host's here, so they can run what this host can."""
    rig, inv = lab
    p = _run_in_mgmt(rig, "doctor", "--rig", str(inv))
    here = congestion.available()
    coupled_ok = set(congestion.COUPLED) <= here
    assert p.returncode == (0 if coupled_ok else 1), p.stdout + p.stderr
    for host in ("s1", "r1"):
        can = next(line for line in p.stdout.splitlines() if line.startswith(f"{host}: can run ")).split()[3:]
        assert set(can) == here and can[:2] == ["cubic", "reno"], p.stdout
        for cc in set(congestion.COUPLED) - here:
            assert f"{host}: cannot run {cc}: not registered (run ansible-playbook ansible/nodes.yml)" in p.stdout

    f = tmp_path / "c.yaml"
    f.write_text("name: lab3\nsetups: [II]\npairs: 1\nfactors: {volume: [4MB], cc: [cubic, vegas]}\n")
    out = tmp_path / "out"
    p = _run_in_mgmt(rig, "campaign", "run", str(f), "--rig", str(inv), "--out", str(out))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert f"{f}: factors.cc[1]" in p.stderr and "'vegas' cannot run on s1" in p.stderr, p.stderr
    assert "does not provide it" in p.stderr and not out.exists()
