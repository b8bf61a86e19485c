"""The corpus of malformed inputs in tests/bad_inputs/, run against every verb as a user runs it:
each gets exit status 2, exactly one line on stderr naming the file or flag, the field and the
problem, and nothing written (no campaign directory, no export, no report, no namespaces)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from fixtures.cli import REPO
from fixtures.campaign_dir import write_campaign

CORPUS = REPO / "tests" / "bad_inputs"
GOOD = "name: good\nsetups: [I]\npairs: 1\nfactors:\n  cc: [cubic]\n  volume: [1MB]\n  homing: [dual]\n"


def _expect(path: Path) -> str:
    first = path.read_bytes().split(b"\n", 1)[0].decode()
    assert first.startswith("# expect: "), f"{path}: first line must be '# expect: FIELD'"
    return first.removeprefix("# expect: ")


def _commands() -> list[tuple[str, str]]:
    out = []
    for line in (CORPUS / "commands.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            expect, _, args = line.partition(" | ")
            out.append((expect.strip(), args.strip()))
    return out


CAMPAIGNS = sorted((CORPUS / "campaigns").glob("*.yaml"))
INVENTORIES = sorted((CORPUS / "inventories").glob("*.ini"))
DIRS = yaml.safe_load((CORPUS / "campaign_dirs.yaml").read_text())


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) + ("/" if p.is_dir() else f" {p.stat().st_size}")
                  for p in root.rglob("*"))


def _namespaces(prefix: str) -> list[str]:
    return [n for n in os.listdir("/run/netns") if n.startswith(prefix + "-")] if os.path.isdir("/run/netns") else []


class Scratch:
    """A scratch directory whose every file and directory must be the same after a refused command."""

    def __init__(self, root: Path):
        self.root = root
        self.prefix = "b" + uuid.uuid4().hex[:6]
        self.file = root / "a-file.txt"
        self.file.write_text("not a directory\n")
        self.empty = root / "empty"
        self.empty.mkdir()
        self.campaigns = root / "campaigns"
        self.campaigns.mkdir()
        self.good = self.campaigns / "good.yaml"
        self.good.write_text(GOOD)
        self.tmp = root / "tmp"
        self.tmp.mkdir()

    def run(self, argv: list[str], env: dict | None = None) -> tuple[subprocess.CompletedProcess, list[str]]:
        try:
            p = subprocess.run([sys.executable, "-m", "rig", *argv], capture_output=True, text=True, timeout=120,
                               cwd=REPO, env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
        finally:
            leftover = _namespaces(self.prefix)
            if leftover:  # a case that got through: tear down what it built
                from rig.emu.rig import EmulatedRig
                EmulatedRig(self.prefix).down()
        return p, leftover

    def refused(self, argv: list[str], *expect: str, env: dict | None = None, status: int = 2,
                kind: str = "error") -> None:
        """argv exits with `status` and one `kind:` line on stderr holding each of `expect`, writing nothing."""
        before = _tree(self.root)
        p, leftover = self.run(argv, env)
        shown = f"rig {shlex.join(argv)}\nexit {p.returncode}\nstdout: {p.stdout[-500:]}\nstderr: {p.stderr[-1500:]}"
        lines = p.stderr.splitlines()
        assert p.returncode == status, shown
        assert len(lines) == 1 and lines[0].startswith(f"{kind}: "), shown
        for words in expect:
            assert words in lines[0], f"{words!r} not in the {kind} line\n{shown}"
        assert _tree(self.root) == before, f"something was written\n{shown}"
        assert not leftover, f"namespaces were created: {leftover}\n{shown}"


@pytest.fixture
def scratch(tmp_path):
    return Scratch(tmp_path)


# --- campaign files: plan, run (emulated), nightly ----------------------------------------------

@pytest.mark.parametrize("path", CAMPAIGNS, ids=lambda p: p.stem)
def test_bad_campaign_file(scratch, path):
    expect = _expect(path)
    bad = scratch.root / "in" / path.name
    bad.parent.mkdir()
    shutil.copy(path, bad)
    if b"\n# plan: warns" in path.read_bytes():  # planning is host-independent: a warning, the plan printed
        scratch.refused(["campaign", "plan", str(bad)], expect, str(bad), status=0, kind="warning")
    else:
        scratch.refused(["campaign", "plan", str(bad)], expect, str(bad))
    scratch.refused(["campaign", "run", str(bad), "--out", str(scratch.tmp / "results"), "--prefix", scratch.prefix],
                    expect, str(bad))
    nightly_name = path.stem.replace("_", "-")
    shutil.copy(path, scratch.campaigns / f"{nightly_name}.yaml")
    scratch.refused(["nightly", nightly_name, "--campaigns", str(scratch.campaigns), "--results", str(scratch.tmp / "r"),
                     "--exports", str(scratch.tmp / "e"), "--failures", str(scratch.tmp / "f"),
                     "--lock", str(scratch.tmp / "lock")], expect)


# --- inventories: campaign run --rig, doctor --rig -----------------------------------------------

@pytest.mark.parametrize("path", INVENTORIES, ids=lambda p: p.stem)
def test_bad_inventory(scratch, path):
    expect = _expect(path)
    scratch.refused(["campaign", "run", str(scratch.good), "--rig", str(path), "--out", str(scratch.tmp / "results")],
                    expect, str(path))
    scratch.refused(["doctor", "--rig", str(path)], expect, str(path))


# --- command lines -------------------------------------------------------------------------------

@pytest.mark.parametrize("expect, args", _commands(), ids=[a for _, a in _commands()])
def test_bad_command_line(scratch, expect, args):
    campaign = write_campaign(scratch.root / "recorded").path
    subs = {"{tmp}": str(scratch.tmp), "{file}": str(scratch.file), "{empty}": str(scratch.empty),
            "{campaign}": str(campaign), "{good}": str(scratch.good), "{campaigns}": str(scratch.campaigns),
            "{prefix}": scratch.prefix}
    for k, v in subs.items():
        expect = expect.replace(k, v)
    env, argv = {}, []
    for word in shlex.split(args):
        for k, v in subs.items():
            word = word.replace(k, v)
        if not argv and "=" in word and word.split("=", 1)[0].isupper():
            env[word.split("=", 1)[0]] = word.split("=", 1)[1]
        else:
            argv.append(word)
    scratch.refused(argv, expect, env=env)


# --- recorded campaign directories, broken: export, report, sync ---------------------------------

@pytest.mark.parametrize("case", DIRS, ids=[c["name"] for c in DIRS])
def test_bad_campaign_directory(scratch, case):
    campaign = write_campaign(scratch.root / "recorded").path
    for name in case.get("remove", []):
        target = campaign / name
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    for name, text in case.get("write", {}).items():
        (campaign / name).write_text(text)
    verbs = {"export": ["export", str(campaign), "--to", str(scratch.tmp / "dataset")],
             "report": ["report", str(campaign)],
             "sync": ["sync", str(campaign)]}
    for verb in case["verbs"]:
        scratch.refused(verbs[verb], case["expect"], env={"RIG_INFLUX_URL": "http://127.0.0.1:9"})


def test_corpus_size():
    """About a hundred malformed inputs; every one must pass the tests above."""
    assert len(CAMPAIGNS) + len(INVENTORIES) + len(_commands()) + len(DIRS) >= 100
