"""`rig cc`: what the node role and lab staff run by hand."""

from __future__ import annotations

import json

import click

from rig.congestion.kernel import RIG_CCS, check_name, explain
from rig.congestion.registry import register, repairs, unregister_all
from rig.congestion.ss import subflow_ccs


@click.group("cc")
def cc_cli() -> None:
    """The rig's congestion controls on this host: coupled lia, olia, balia; uncoupled rig_reno."""


@cc_cli.command("status")
def cc_status() -> None:
    """Which of the rig's CCs can run here, and why not."""
    for name in RIG_CCS:
        why = explain(name)
        click.echo(f"{name:8} {'ok' if why is None else why}")


@cc_cli.command("repairs")
def cc_repairs() -> None:
    """Runaway windows (a kernel 6.18 problem) each of the rig's CCs has put back so far."""
    for name, count in repairs().items():
        click.echo(f"{name:8} {count}")


@cc_cli.command("register")
@click.argument("names", nargs=-1)
def cc_register(names: tuple[str, ...]) -> None:
    """Build and register NAMES (default: all four); ones whose object changed are registered again."""
    for name in names:
        check_name(name)
    click.echo(register(sorted(set(names or RIG_CCS))))


@cc_cli.command("unregister")
def cc_unregister() -> None:
    """Remove the rig's BPF congestion controls."""
    unregister_all()
    click.echo("unregistered")


@cc_cli.command("subflows")
@click.option("--netns", default=None, help="namespace to look into (default: this one)")
def cc_subflows(netns: str | None) -> None:
    """Established TCP sockets and the CC each one runs (JSON lines)."""
    for sock in subflow_ccs(netns):
        click.echo(json.dumps(sock))
