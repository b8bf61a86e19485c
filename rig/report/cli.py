"""`rig report CAMPAIGN_DIR`."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("campaign_dir", type=click.Path(path_type=Path))
def report(campaign_dir: Path) -> None:
    """Write CAMPAIGN_DIR/report/index.html with share, goodput and failure figures."""
    from rig.report.page import write_report

    out = write_report(campaign_dir)
    click.echo(f"report: {out}")
