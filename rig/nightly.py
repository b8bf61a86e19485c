"""`rig nightly CAMPAIGN_NAME` (work in progress)."""

from __future__ import annotations

import click


@click.command()
@click.argument("campaign_name")
def nightly(campaign_name: str) -> None:
    """Run a named campaign unattended (work in progress)."""
    raise click.ClickException("not implemented yet")
