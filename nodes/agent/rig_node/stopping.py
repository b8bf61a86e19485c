"""A transfer the agent stops (SIGTERM: a run ended early, or at its timeout) unwinds and still
prints its report, marked `stopped`: what its receiver read and its sender sampled until then is
the run's, kept as a failed run's (the runner's rig.run.watch stops every node's program when a
part of the run is lost)."""

from __future__ import annotations

import signal

STOPPED_RC = 143  # 128 + SIGTERM, as a shell reports a program SIGTERM ended
STOPPED_ERROR = "stopped before its end"


class Stopped(BaseException):
    """Raised in the main thread by SIGTERM; a BaseException, so no `except Exception` of the
    transfer's own swallows it."""


def _raise(signum, frame) -> None:
    raise Stopped()


def stop_on_sigterm() -> None:
    signal.signal(signal.SIGTERM, _raise)
