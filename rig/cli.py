"""The `rig` command line. Each area has its own click group or command, listed in COMMANDS."""

from __future__ import annotations

import importlib
import os
import sys

import click

from rig.core.errors import DISK_FULL, InputError, RigError

# name -> ("module:attribute", its one line in `rig --help`). Imported when invoked, so that a
# command does not pay for the others' imports (pyarrow, pydantic models, matplotlib, ...) and one
# broken area does not hide the rest; `rig --help` lists the lines without importing any of them
# (tests/unit/test_cli_help.py checks that each line, but its full stop, is how its command's help begins).
COMMANDS = {
    "campaign": ("rig.campaign.cli:campaign", "Plan and run measurement campaigns."),
    "cc": ("rig.congestion:cc_cli", "The rig's congestion controls on this host."),
    "doctor": ("rig.ops.doctor:doctor", "Report what this host (or each node of --rig) can do for the rig."),
    "emu": ("rig.rigs.emulated.cli:emu", "Bring the emulated rig up, tear it down, or show it."),
    "export": ("rig.export.cli:export", "Export a campaign as a dataset."),
    "findings": ("rig.findings.cli:findings", "Check the studies' claims on the valid runs of campaign directories."),
    "influx": ("rig.influx.cli:influx", "The embedded InfluxDB (influxd 1.x on loopback)."),
    "nightly": ("rig.ops.nightly:nightly", "Run campaign CAMPAIGN_NAME unattended."),
    "paths": ("rig.ops.paths_cli:paths_cli", "Print {node: plan} as JSON."),
    "report": ("rig.report.cli:report", "Write CAMPAIGN_DIR/report/index.html."),
    "sync": ("rig.influx.cli:sync", "Write the runs of CAMPAIGN_DIR that InfluxDB has not got yet."),
}


class _Commands(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attr = COMMANDS[name][0].split(":")
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, line) for name, (_, line) in sorted(COMMANDS.items())])


# click >= 8.2 raises this for a group called without a command (its message is the help text)
_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


@click.group(cls=_Commands)
@click.version_option(package_name="mptcp-rig")
def cli() -> None:
    """Lab rig for uplink MPTCP experiments over LTE + WiFi."""


def main() -> None:
    try:
        cli(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except _NO_ARGS_IS_HELP as e:  # `rig` or `rig campaign` alone: the help, as click shows it
        e.show()
        sys.exit(2)
    except click.ClickException as e:  # bad flags: one line naming the command and the flag, exit 2
        where = e.ctx.command_path if getattr(e, "ctx", None) else "rig"
        click.echo(f"error: {where}: {' '.join(e.format_message().split())}", err=True)
        sys.exit(2)
    except InputError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(e.exit_code)
    except RigError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(e.exit_code)
    except OSError as e:
        if e.errno not in DISK_FULL:
            raise  # anything else is a bug: its traceback says where
        where = f"{os.path.dirname(os.path.abspath(e.filename))}: " if e.filename else ""
        click.echo(f"error: {where}{os.strerror(e.errno)}; everything written before is kept: free space, then run "
                   "the command again", err=True)
        sys.exit(1)
