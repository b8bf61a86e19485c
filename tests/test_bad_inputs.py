"""The corpus of malformed inputs in tests/bad_inputs/, run against every verb as a user runs it:
each gets exit status 2, exactly one line on stderr naming the file or flag, the field and the
problem, and nothing written (no campaign directory, no export, no report, no namespaces).

Each command is a fresh `python -m rig` process; the commands of one case (a bad campaign file
given to plan, run and nightly) run at the same time, so the case takes about as long as its
slowest command on a host with cores to spare."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
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
FINDINGS = sorted((CORPUS / "findings").glob("*.yaml"))
DIRS = yaml.safe_load((CORPUS / "campaign_dirs.yaml").read_text())


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) + ("/" if p.is_dir() else f" {p.stat().st_size}")
                  for p in root.rglob("*"))


def _namespaces(prefix: str) -> list[str]:
    return [n for n in os.listdir("/run/netns") if n.startswith(prefix + "-")] if os.path.isdir("/run/netns") else []


@dataclass
class Refusal:
    """A command line and what it must answer: exit `status` and one `kind:` line holding each of `expect`."""

    argv: list[str]
    expect: tuple[str, ...]
    env: dict = field(default_factory=dict)
    status: int = 2
    kind: str = "error"


class Scratch:
    """A scratch directory whose every file and directory must be the same after refused commands."""

    def __init__(self, root: Path, recorded: Path):
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
        self._recorded = recorded

    def recorded_campaign(self) -> Path:
        """A copy of a recorded campaign directory, under the scratch directory."""
        return Path(shutil.copytree(self._recorded, self.root / "recorded" / self._recorded.name))

    def refused(self, *refusals: Refusal) -> None:
        """Each command is refused as its Refusal says, and none of them writes anything or makes a
        namespace. The commands run at the same time, each in a fresh process as from a shell."""
        before = _tree(self.root)
        procs = [subprocess.Popen([sys.executable, "-m", "rig", *r.argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, cwd=REPO, env={**os.environ, "PYTHONUNBUFFERED": "1", **r.env})
                 for r in refusals]
        try:
            outputs = [p.communicate(timeout=120) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            leftover = _namespaces(self.prefix)
            if leftover:  # a command that got through: tear down what it built
                from rig.rigs.emulated.emulated_rig import EmulatedRig
                EmulatedRig(self.prefix).down()
        shown = []
        for r, p, (out, err) in zip(refusals, procs, outputs):
            what = f"rig {shlex.join(r.argv)}\nexit {p.returncode}\nstdout: {out[-500:]}\nstderr: {err[-1500:]}"
            shown.append(what)
            lines = err.splitlines()
            assert p.returncode == r.status, what
            assert len(lines) == 1 and lines[0].startswith(f"{r.kind}: "), what
            for words in r.expect:
                assert words in lines[0], f"{words!r} not in the {r.kind} line\n{what}"
        assert _tree(self.root) == before, "something was written by one of\n" + "\n".join(shown)
        assert not leftover, f"namespaces were created: {leftover}\n" + "\n".join(shown)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """A campaign directory in the run store's format, written once; cases that need one copy it."""
    return write_campaign(tmp_path_factory.mktemp("recorded")).path


@pytest.fixture
def scratch(tmp_path, recorded):
    return Scratch(tmp_path, recorded)


# --- campaign files: plan, run (emulated), nightly ----------------------------------------------

@pytest.mark.parametrize("path", CAMPAIGNS, ids=lambda p: p.stem)
def test_bad_campaign_file(scratch, path):
    expect = _expect(path)
    bad = scratch.root / "in" / path.name
    bad.parent.mkdir()
    shutil.copy(path, bad)
    nightly_name = path.stem.replace("_", "-")
    shutil.copy(path, scratch.campaigns / f"{nightly_name}.yaml")
    if b"\n# plan: warns" in path.read_bytes():  # planning is host-independent: a warning, the plan printed
        plan = Refusal(["campaign", "plan", str(bad)], (expect, str(bad)), status=0, kind="warning")
    else:
        plan = Refusal(["campaign", "plan", str(bad)], (expect, str(bad)))
    scratch.refused(
        plan,
        Refusal(["campaign", "run", str(bad), "--out", str(scratch.tmp / "results"), "--prefix", scratch.prefix],
                (expect, str(bad))),
        Refusal(["nightly", nightly_name, "--campaigns", str(scratch.campaigns), "--results", str(scratch.tmp / "r"),
                 "--exports", str(scratch.tmp / "e"), "--failures", str(scratch.tmp / "f"),
                 "--lock", str(scratch.tmp / "lock")], (expect,)))


# --- inventories: campaign run --rig, doctor --rig -----------------------------------------------

@pytest.mark.parametrize("path", INVENTORIES, ids=lambda p: p.stem)
def test_bad_inventory(scratch, path):
    expect = _expect(path)
    scratch.refused(
        Refusal(["campaign", "run", str(scratch.good), "--rig", str(path), "--out", str(scratch.tmp / "results")],
                (expect, str(path))),
        Refusal(["doctor", "--rig", str(path)], (expect, str(path))))


# --- findings files: rig findings ----------------------------------------------------------------

@pytest.mark.parametrize("path", FINDINGS, ids=lambda p: p.stem)
def test_bad_findings_file(scratch, path):
    expect = _expect(path)
    campaign = scratch.recorded_campaign()
    scratch.refused(Refusal(["findings", str(campaign), "--findings", str(path)], (expect, str(path))),
                    Refusal(["findings", str(campaign), "--findings", str(path), "--update", str(scratch.file)],
                            (expect, str(path))))


# --- command lines -------------------------------------------------------------------------------

@pytest.mark.parametrize("expect, args", _commands(), ids=[a for _, a in _commands()])
def test_bad_command_line(scratch, expect, args):
    subs = {"{tmp}": str(scratch.tmp), "{file}": str(scratch.file), "{empty}": str(scratch.empty),
            "{good}": str(scratch.good), "{campaigns}": str(scratch.campaigns), "{prefix}": scratch.prefix}
    if "{campaign}" in expect + args:
        subs["{campaign}"] = str(scratch.recorded_campaign())
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
    scratch.refused(Refusal(argv, (expect,), env))


# --- recorded campaign directories, broken: export, report, sync ---------------------------------

@pytest.mark.parametrize("case", DIRS, ids=[c["name"] for c in DIRS])
def test_bad_campaign_directory(scratch, case):
    campaign = scratch.recorded_campaign()
    for name in case.get("remove", []):
        target = campaign / name
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    for name, text in case.get("write", {}).items():
        (campaign / name).write_text(text)
    verbs = {"export": ["export", str(campaign), "--to", str(scratch.tmp / "dataset")],
             "report": ["report", str(campaign)],
             "sync": ["sync", str(campaign)]}
    scratch.refused(*(Refusal(verbs[verb], (case["expect"],), {"RIG_INFLUX_URL": "http://127.0.0.1:9"})
                      for verb in case["verbs"]))


def test_corpus_size():
    """About a hundred malformed inputs; every one must pass the tests above."""
    assert len(CAMPAIGNS) + len(INVENTORIES) + len(FINDINGS) + len(_commands()) + len(DIRS) >= 100
