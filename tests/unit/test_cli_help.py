"""`rig --help` lists every command with its own first words, without importing the commands."""

from __future__ import annotations

import importlib
import subprocess
import sys

from rig.cli import COMMANDS

# `rig --help` in a fresh process; then, on stderr, the rig modules it loaded
HELP = """import runpy, sys
sys.argv = ["rig", "--help"]
try:
    runpy.run_module("rig", run_name="__main__")
except SystemExit:
    pass
print(" ".join(m for m in sys.modules if m.startswith("rig")), file=sys.stderr)
"""


def test_each_listed_line_is_how_its_commands_help_begins():
    for name, (target, line) in COMMANDS.items():
        module, attr = target.split(":")
        command = getattr(importlib.import_module(module), attr)
        assert " ".join(command.help.split()).startswith(line.removesuffix(".")), (name, line, command.help)


def test_help_lists_every_command_without_importing_them():
    p = subprocess.run([sys.executable, "-c", HELP], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    for name, (_, line) in COMMANDS.items():
        assert f"  {name} " in p.stdout and line.split()[0] in p.stdout, p.stdout
    loaded = set(p.stderr.split())
    assert not {target.split(":")[0] for target, _ in COMMANDS.values()} & loaded, loaded
