"""Errors the CLI turns into one clear line and an exit status."""


class InputError(Exception):
    """Bad user input (campaign file, inventory, flag): exit status 2.

    The message names the file, the field and the problem, on one line.
    """

    exit_code = 2

    def __init__(self, source: str, field: str, problem: str):
        self.source, self.field, self.problem = source, field, problem
        super().__init__(f"{source}: {field}: {problem}")


class RigError(Exception):
    """The rig could not do what was asked (a missing tool, a host that did not answer): exit 1."""

    exit_code = 1
