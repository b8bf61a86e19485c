"""The corpus of malformed inputs in tests/bad_inputs/, run against every verb as a user runs it:
each gets exit status 2, exactly one line on stderr naming the file or flag, the field and the
problem, and nothing written (no campaign directory, no export, no report, no namespaces).

Each command is a fresh `python -m rig` process; the commands of one case (a bad campaign file
given to plan, run and nightly) run at the same time, so the case takes about as long as its
slowest command on a host with cores to spare. The corpus's campaign files that only a host's
`rig campaign run` refuses (as root): tests/system/test_bad_inputs_on_host.py."""

from __future__ import annotations

import shlex
import shutil

import pytest

from fixtures.bad_inputs import (CAMPAIGNS, DIRS, FINDINGS, INVENTORIES, Refusal, commands, expected,  # noqa: F401
                                 recorded, refuse_campaign_file, scratch)


# --- campaign files: plan, run (emulated), nightly ----------------------------------------------

@pytest.mark.parametrize("path", CAMPAIGNS, ids=lambda p: p.stem)
def test_bad_campaign_file(scratch, path):
    refuse_campaign_file(scratch, path)


# --- inventories: campaign run --rig, doctor --rig -----------------------------------------------

@pytest.mark.parametrize("path", INVENTORIES, ids=lambda p: p.stem)
def test_bad_inventory(scratch, path):
    expect = expected(path)
    scratch.refused(
        Refusal(["campaign", "run", str(scratch.good), "--rig", str(path), "--out", str(scratch.tmp / "results")],
                (expect, str(path))),
        Refusal(["doctor", "--rig", str(path)], (expect, str(path))))


# --- findings files: rig findings ----------------------------------------------------------------

@pytest.mark.parametrize("path", FINDINGS, ids=lambda p: p.stem)
def test_bad_findings_file(scratch, path):
    expect = expected(path)
    campaign = scratch.recorded_campaign()
    scratch.refused(Refusal(["findings", str(campaign), "--findings", str(path)], (expect, str(path))),
                    Refusal(["findings", str(campaign), "--findings", str(path), "--update", str(scratch.file)],
                            (expect, str(path))))


# --- command lines -------------------------------------------------------------------------------

@pytest.mark.parametrize("expect, args", commands(), ids=[a for _, a in commands()])
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
    assert len(CAMPAIGNS) + len(INVENTORIES) + len(FINDINGS) + len(commands()) + len(DIRS) >= 100
