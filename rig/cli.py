"""The `rig` command line. Each area registers its own click group or command here."""

from __future__ import annotations

import sys

import click

from rig.errors import InputError, RigError


@click.group()
@click.version_option(package_name="mptcp-rig")
def cli() -> None:
    """Lab rig for uplink MPTCP experiments over LTE + WiFi."""


def _register() -> None:
    # Imported here so that `rig --help` stays fast and one broken area does not hide the rest.
    from rig.campaign.cli import campaign
    from rig.congestion import cc_cli
    from rig.doctor import doctor
    from rig.emu.cli import emu
    from rig.export.cli import export
    from rig.influx.cli import influx, sync
    from rig.nightly import nightly
    from rig.report.cli import report

    for command in (campaign, cc_cli, doctor, emu, export, influx, nightly, report, sync):
        cli.add_command(command)


def main() -> None:
    _register()
    try:
        cli(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as e:  # bad flags: one line, exit 2
        e.show()
        sys.exit(2)
    except InputError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(e.exit_code)
    except RigError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(e.exit_code)
