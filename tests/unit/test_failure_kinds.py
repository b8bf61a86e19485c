"""Whose fault a failed run is (rig.store.failures): the rig's own transfer program ending badly
on loopback (a port held by another socket, a connection refused, a signal), and what `--resume`
sets aside in a real run store."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys

import pytest

from fixtures.cli import REPO
from fixtures.run_record import SMALL_CAMPAIGN, run_record
from rig.campaign.plan import expand
from rig.model.campaign import parse_campaign
from rig.store import failures
from rig.store.writer import CampaignStore

TRANSFER = [sys.executable, str(REPO / "nodes" / "agent" / "rig_transfer.py")]


def _transfer(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*TRANSFER, *args, "--tcp"], capture_output=True, text=True, timeout=30)


def test_a_sink_whose_port_is_held_died_by_the_rigs_fault():
    """A killed campaign's sink left on the port: the next sink cannot bind, ends with a traceback
    and no report."""
    with socket.socket() as held:
        held.bind(("0.0.0.0", 0))
        held.listen()
        sink = _transfer("sink", "--port", str(held.getsockname()[1]), "--connections", "1", "--timeout", "2")
    assert sink.returncode == 1 and "Address already in use" in sink.stderr and not sink.stdout
    assert failures.of_program(sink.returncode, sink.stdout) == "program_died"


def test_a_refused_connection_is_the_networks():
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    source = _transfer("source", "--target", "127.0.0.1", "--port", str(port), "--bytes", "1000", "--sample-ms", "0")
    assert source.returncode == 1 and "ConnectionRefusedError" in source.stdout, source
    assert failures.of_program(source.returncode, source.stdout) == "transfer_error"


def test_a_killed_program_and_its_own_machinery_are_the_rigs():
    sink = subprocess.Popen([*TRANSFER, "sink", "--port", "0", "--connections", "1", "--timeout", "30", "--tcp"],
                            stdout=subprocess.PIPE, text=True)
    sink.send_signal(signal.SIGKILL)
    out, _ = sink.communicate(timeout=30)
    assert failures.of_program(sink.returncode, out) == "program_died"
    assert failures.of_program(1, '{"error": "sampler: OSError: [Errno 24] Too many open files"}') == "program_died"


@pytest.mark.parametrize("status, ended_by, dead, timed_out, lagged, kind", [
    ("ok", None, False, False, False, None),
    ("failed", "agent_lost", False, False, False, "agent_lost"),
    ("invalid", None, True, False, False, "emulator_exited"),  # every transfer done before it was seen
    ("failed", "program_died", True, False, False, "emulator_exited"),  # its sources died with it
    ("stalled", "stalled", False, False, False, "stalled"),
    ("failed", None, False, True, False, "timed_out"),
    ("failed", None, False, False, False, "incomplete"),
    ("invalid", None, False, False, True, "lagged"),
    ("invalid", None, False, False, False, "invalid"),
])
def test_a_judged_runs_kind(status, ended_by, dead, timed_out, lagged, kind):
    assert failures.of_run(status, ended_by, dead, timed_out, lagged) == kind


def test_resume_sets_aside_exactly_the_rigs_failures(tmp_path):
    plan = expand(parse_campaign(SMALL_CAMPAIGN, "t"))
    store = CampaignStore.create(tmp_path, plan, SMALL_CAMPAIGN, {})
    kinds = {"program_died": True, "emulator_exited": True, "stalled": False, "timed_out": False, "invalid": True}
    for run, kind in zip(plan.runs, kinds):
        record = run_record(run, "stalled" if kind == "stalled" else "invalid" if kind == "invalid" else "failed")
        record.details["failure"] = kind
        store.write_run(record)
    legacy = run_record(plan.runs[5], "failed")  # recorded before the kinds were
    legacy.details["lost_component"] = True
    store.write_run(legacy)
    rigs = sorted([r.run_id for r, k in zip(plan.runs, kinds) if kinds[k]] + [plan.runs[5].run_id])
    assert CampaignStore.find_resumable(tmp_path, plan).root == store.root  # every run recorded, some the rig's
    assert sorted(store.set_aside_rig_faults()) == rigs
    assert store.finished_ids() == {r.run_id for r in plan.runs} - set(rigs)
    assert sorted(d.name for d in store.attempts_dir.iterdir()) == sorted(f"{r}.1" for r in rigs)
    assert all(kind in failures.KINDS for kind in kinds)


def test_a_lagged_run_is_set_aside_only_when_asked(tmp_path):
    """An emulator's lag alone (its retries spent) is the host's doing: kept by --resume, run
    again by --resume --rerun-lagged."""
    plan = expand(parse_campaign(SMALL_CAMPAIGN, "t"))
    store = CampaignStore.create(tmp_path, plan, SMALL_CAMPAIGN, {})
    lagged = run_record(plan.runs[0], "invalid")
    lagged.details.update(failure="lagged", lagged=True)
    store.write_run(lagged)
    for run in plan.runs[1:]:
        store.write_run(run_record(run, "ok"))
    assert CampaignStore.find_resumable(tmp_path, plan) is None  # finished, as far as --resume goes
    assert CampaignStore.find_resumable(tmp_path, plan, lagged=True).root == store.root
    assert store.set_aside_rig_faults() == []
    assert store.set_aside_rig_faults(lagged=True) == [plan.runs[0].run_id]
    assert store.finished_ids() == {r.run_id for r in plan.runs[1:]}
    assert store.lagged_attempts(plan.runs[0].run_id) == 1


def test_a_rig_error_outside_the_transfer_is_one_line_and_whole_in_the_logs(tmp_path):
    """A configuration command that failed with its output: the run's reason is one line, the
    error whole in its logs/; an agent lost is its own kind."""
    from rig.agents.client import AgentLost
    from rig.campaign.runner import _failed_record
    from rig.core.errors import RigError
    from rig.model.topology import topology
    from rig.run.execute import RunContext, RunSettings

    plan = expand(parse_campaign(SMALL_CAMPAIGN, "t"))
    store = CampaignStore.create(tmp_path, plan, SMALL_CAMPAIGN, {})
    ctx = RunContext(topology("I", 1), agents=None, settings=RunSettings())
    error = RigError("s1: paths: CalledProcessError: ip route replace failed:\nError: Nexthop has invalid gateway.\n")
    record = _failed_record(ctx, plan.runs[0], error, "2026-11-27T04:00:00.000+00:00", store)
    assert record.reason == "s1: paths: CalledProcessError: ip route replace failed: Error: Nexthop has invalid gateway."
    assert record.details["failure"] == "rig_error" and record.logs == {"rig-error.txt": str(error)}
    store.write_run(record)
    assert (store.runs_dir / plan.runs[0].run_id / "logs" / "rig-error.txt").read_text() == str(error)
    lost = _failed_record(ctx, plan.runs[1], AgentLost("node agent on s1 has exited"), "2026-11-27T04:00:00.000+00:00", store)
    assert lost.details["failure"] == "agent_lost" and lost.logs == {}
    assert store.set_aside_rig_faults() == [plan.runs[0].run_id]
