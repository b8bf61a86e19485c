"""Errors the CLI turns into one clear line and an exit status."""

from __future__ import annotations

import errno

DISK_FULL = (errno.ENOSPC, errno.EDQUOT)  # a write that found no room: the user's to fix, not a bug


def one_line(text: object) -> str:
    """A message on one line: its lines joined, white space folded (a run's reason, an input error)."""
    return " ".join(str(text).split())


class InputError(Exception):
    """Bad user input (campaign file, inventory, flag): exit status 2.

    The message names the file, the field and the problem, on one line. A YAML syntax error has
    no field: its source is `file:line:col` and the field is left empty.
    """

    exit_code = 2

    def __init__(self, source: str, field: str, problem: str):
        self.source, self.field, self.problem = one_line(source), one_line(field), one_line(problem)
        super().__init__(f"{self.source}: {self.field}: {self.problem}" if self.field else f"{self.source}: {self.problem}")


class RigError(Exception):
    """The rig could not do what was asked (a missing tool, a host that did not answer): exit 1."""

    exit_code = 1
