"""The node role's rig-cc-register, run for real on this host's kernel as the role runs it on a
board: sources copied as the role copies them, a build directory and state of its own.

Fast (a few seconds). It registers lia/olia/balia/rig_reno on this kernel (struct_ops maps rig_<cc>, as
rig.congestion.ensure_registered does); if none was registered before, it unregisters them after.
"""

from __future__ import annotations

import os
import runpy
import shutil
import subprocess

import pytest
import yaml

from fixtures.ansible_env import ANSIBLE
from fixtures.cli import REPO, run_rig
from rig import congestion

SCRIPT = REPO / "nodes" / "bpf" / "rig-cc-register"
ROLE_DEFAULTS = ANSIBLE / "roles" / "node" / "defaults" / "main.yml"


@pytest.fixture
def node_dirs(tmp_path):
    """The role's layout: sources (*.c, *.h, Makefile of nodes/bpf), build and state directories."""
    src = tmp_path / "src"
    src.mkdir()
    for pattern in ("*.c", "*.h", "Makefile"):
        for f in (REPO / "nodes" / "bpf").glob(pattern):
            shutil.copy(f, src)
    had = set(congestion.RIG_CCS) & congestion.available()
    try:
        yield {"RIG_CC_SRC": str(src), "RIG_CC_BUILD": str(tmp_path / "build"), "RIG_CC_STATE": str(tmp_path / "state")}
    finally:
        if not had:
            congestion.unregister_all()


def register(env: dict, *ccs: str) -> subprocess.CompletedProcess:
    return subprocess.run([SCRIPT, *ccs], env={**os.environ, **env}, capture_output=True, text=True, timeout=300)


def outcome(p: subprocess.CompletedProcess) -> dict[str, str]:
    assert p.returncode == 0, p.stderr
    return {line.split()[0]: line.split()[1].rstrip(":") for line in p.stdout.splitlines()}


def in_use() -> dict[str, int]:
    return {name: map_id for name, map_id, state in congestion.struct_ops_maps() if state == "INUSE"}


def test_registers_then_changes_nothing_then_replaces_a_changed_object(node_dirs, tmp_path):
    assert outcome(register(node_dirs)) == {cc: "changed" for cc in congestion.RIG_CCS}
    assert set(congestion.RIG_CCS) <= congestion.available()
    first = in_use()
    state = {cc: (tmp_path / "state" / cc).read_text().split()[1] for cc in congestion.RIG_CCS}
    assert {cc: str(first[cc]) for cc in congestion.RIG_CCS} == state  # the maps rig.congestion sees

    assert outcome(register(node_dirs)) == {cc: "unchanged" for cc in congestion.RIG_CCS}
    # Rebuilt from a touched source, the object is the same bytes: nothing to replace.
    (tmp_path / "src" / "lia.bpf.c").touch()
    assert outcome(register(node_dirs)) == {cc: "unchanged" for cc in congestion.RIG_CCS}

    # An object that did change (one more global) replaces lia's registration, and only lia's.
    lia = tmp_path / "src" / "lia.bpf.c"
    original = lia.read_text()
    lia.write_text(original + "\nconst volatile int rig_test_variant = 1;\n")
    assert outcome(register(node_dirs)) == {"lia": "changed", "olia": "unchanged", "balia": "unchanged",
                                            "rig_reno": "unchanged"}
    now = in_use()
    assert now["lia"] != first["lia"] and {cc: now[cc] for cc in ("olia", "balia", "rig_reno")} == \
        {cc: first[cc] for cc in ("olia", "balia", "rig_reno")}
    assert set(congestion.RIG_CCS) <= congestion.available()
    congestion.ensure_registered(congestion.RIG_CCS)  # the API's view: nothing missing
    assert in_use() == now

    lia.write_text(original)  # back to the repository's lia for whoever uses this kernel next
    assert outcome(register(node_dirs))["lia"] == "changed"


def test_clear_failures(node_dirs, tmp_path):
    p = register({**node_dirs, "RIG_CC_BTF": str(tmp_path / "no-btf")})
    assert p.returncode == 1 and "kernel has no BTF" in p.stderr, p.stderr
    (tmp_path / "btf").write_bytes(b"\x9f\xeb not a kernel with tcp_congestion_ops")
    p = register({**node_dirs, "RIG_CC_BTF": str(tmp_path / "btf")})
    assert p.returncode == 1 and "no BPF struct_ops tcp_congestion_ops" in p.stderr, p.stderr
    p = register(node_dirs, "cubic")
    assert p.returncode == 2 and "not one of the rig's congestion controls: cubic" in p.stderr
    assert not (tmp_path / "build").exists()


def test_module_names_agree():
    """The role, its script and rig.congestion name the same out-of-tree modules."""
    role = yaml.safe_load(ROLE_DEFAULTS.read_text())
    script = runpy.run_path(str(SCRIPT))
    assert role["node_cc_modules"] == script["OUT_OF_TREE_MODULES"] == congestion.OUT_OF_TREE_MODULES
    assert tuple(role["node_coupled_ccs"]) == congestion.COUPLED


Cause = congestion.Cause


@pytest.mark.parametrize("facts, cause, reason", [
    (dict(out_of_tree=True, modules=frozenset({"mptcp_olia"})), Cause.MODULE_NOT_LOADED,
     "module mptcp_olia not loaded (FIX)"),
    (dict(out_of_tree=True), Cause.NO_MODULE, "out-of-tree MPTCP kernel without module mptcp_olia"),
    (dict(), Cause.NO_MPTCP, "kernel has no MPTCP"),
    (dict(mptcp=True), Cause.NO_BTF, "kernel has no BTF"),
    (dict(mptcp=True, btf=True, release="6.1.0-18-arm64"), Cause.OLD_KERNEL,
     "kernel 6.1.0-18-arm64 is older than 6.2, which the rig's BPF congestion controls need"),
    (dict(mptcp=True, btf=True, release="6.18.0"), Cause.NO_STRUCT_OPS, "no BPF struct_ops tcp_congestion_ops"),
    (dict(mptcp=True, btf=True), Cause.NO_STRUCT_OPS, "no BPF struct_ops tcp_congestion_ops"),
    (dict(mptcp=True, btf=True, struct_ops=True, missing_tools=("clang",)), Cause.NO_BUILD_TOOLS,
     "clang missing to build it (FIX)"),
    (dict(mptcp=True, btf=True, struct_ops=True), Cause.NOT_REGISTERED, "not registered (FIX)"),
])
def test_why_not_a_node_can_run_olia(facts, cause, reason):
    why = congestion.why_not("olia", congestion.KernelFacts(frozenset({"cubic"}), **facts), "FIX")
    assert why.cause is cause and reason in why.message and str(why) == why.message


def test_why_not_rig_reno_on_the_out_of_tree_kernel():
    why = congestion.why_not("rig_reno", congestion.KernelFacts(frozenset({"reno"}), out_of_tree=True), "FIX")
    assert why.cause is Cause.BPF_ONLY and "out-of-tree MPTCP kernel cannot run" in why.message
    assert congestion.why_not("rig_reno", congestion.KernelFacts(frozenset({"rig_reno"})), "FIX") is None


def test_facts_script_reads_this_host():
    facts = congestion.local_facts()
    assert facts.available == congestion.available() and facts.mptcp and not facts.out_of_tree
    assert facts.btf == congestion.BTF.exists()
    assert congestion.why_not("cubic", facts, "FIX") is None


def test_emulated_campaign_checks_this_hosts_ccs(tmp_path):
    """On the emulated rig the nodes' kernel is this host's: the runner checks (and registers) here."""
    f = tmp_path / "c.yaml"
    f.write_text("name: x\nsetups: [I]\npairs: 1\nfactors: {volume: [3MB], cc: [cubic, vegas]}\n")
    p = run_rig("campaign", "run", str(f), "--out", str(tmp_path / "out"), "--prefix", "hcnone")
    assert p.returncode == 2 and p.stderr.strip().endswith(
        f"{f}: factors.cc[1]: 'vegas' cannot run on this host: vegas is not in tcp_available_congestion_control "
        "and the rig does not provide it"), p.stderr
    assert not (tmp_path / "out").exists()
