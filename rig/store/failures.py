"""Why a run did not count, one kind per cause, and whose fault each kind is. This table is the
one rule for what `--resume` runs again: a run the rig failed (a part of it lost or dead) or did
not run as configured (the judge found it invalid) says nothing of the network under test and
is set aside and run again; a run the network failed (a transfer that stalled, timed out or did
not complete) is a result and is kept. A run's kind is `failure` in its status.json (docs/campaigns.md, "Whose
fault a failed run is")."""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    rigs: bool  # the rig's fault: --resume sets the run aside (attempts/) and runs it again
    restore: bool  # the rig is restored (agents, emulators, every node configured) before the next run
    what: str


KINDS: dict[str, Kind] = {
    "agent_lost": Kind(True, True, "a node agent or its SSH session was lost"),
    "emulator_exited": Kind(True, True, "a radio emulator exited during the run"),
    "program_died": Kind(True, False, "a transfer program was killed by a signal, or ended without its report "
                                      "(it crashed: e.g. its port held by another process), or its own sampling "
                                      "or path policy failed"),
    "rig_error": Kind(True, True, "another error of the rig during the run (e.g. a configuration command that failed)"),
    "transfer_error": Kind(False, False, "a transfer program reported its connection's error (reset, refused, timed out)"),
    "timed_out": Kind(False, False, "a transfer did not end within the run timeout"),
    "incomplete": Kind(False, False, "a receiver read less than the sender wrote"),
    "stalled": Kind(False, False, "a transfer made no progress for the stall bound"),
    "lagged": Kind(False, False, "invalid only because an emulator lagged: run again at once, up to "
                                 "limits.lag_retries; by --resume only with --rerun-lagged"),
    "invalid": Kind(True, False, "the judge found the run not as configured (fallback, a path not joined, "
                                 "another CC, a cwnd over the limit): no evidence of the network"),
}
# Errors a transfer program reports of its own machinery, not of its connections.
OWN_ERRORS = ("sampler:", "loss-aware policy:")


def rigs(status: dict) -> bool:
    """Whether a recorded run (its status.json) failed by the rig's fault. A run recorded before
    the kinds were recorded says so with `lost_component`."""
    kind = KINDS.get(status.get("failure") or "")
    return kind.rigs if kind else bool(status.get("lost_component"))


def lagged(status: dict) -> bool:
    """Whether a recorded run is invalid only because an emulator lagged, its lag retries spent:
    the host's doing, not the network's (`--resume --rerun-lagged` runs it again)."""
    return status.get("failure") == "lagged"


def restores(kind: str | None) -> bool:
    return kind is not None and KINDS[kind].restore


def of_program(rc: int, stdout: str) -> str:
    """The kind of a transfer program that ended with status `rc` (non-zero) and printed `stdout`:
    a report with its connection's error is the network's; a signal, no report (a traceback), a
    report of a program stopped (`stopped`: not by its run's end) or an error of its own
    machinery is the rig's."""
    if rc < 0:
        return "program_died"
    try:
        report = json.loads(stdout or "")
        error = str(report.get("error") or "")
    except (json.JSONDecodeError, AttributeError):
        return "program_died"
    ours = report.get("stopped") or error.startswith(OWN_ERRORS)
    return "transfer_error" if error and not ours else "program_died"


def of_run(status: str, ended_by: str | None, emulator_dead: bool, timed_out: bool, lagged: bool) -> str | None:
    """A judged run's kind (None when it is ok): a dead emulator first, then what ended the run
    early on every node (rig.run.watch), then the judge's status."""
    if status == "ok":
        return None
    if emulator_dead:
        return "emulator_exited"
    if ended_by is not None:
        return ended_by
    if status == "failed":
        return "timed_out" if timed_out else "incomplete"
    if status == "invalid":
        return "lagged" if lagged else "invalid"
    return status  # stalled
