"""`rig report CAMPAIGN_DIR`."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("campaign_dir", type=click.Path(path_type=Path))
@click.option("--include-invalid", is_flag=True,
              help="also plot runs that completed but failed validation (marked on the page)")
def report(campaign_dir: Path, include_invalid: bool) -> None:
    """Write CAMPAIGN_DIR/report/index.html with share, goodput and failure figures (and the studies'
    figures where the data has them, docs/studies.md)."""
    from rig.store.inputs import campaign_dir as checked_campaign_dir
    from rig.store.reader import METADATA, PLAN, RUNS_TABLE

    checked_campaign_dir(campaign_dir, "CAMPAIGN_DIR", needs=(RUNS_TABLE,), optional=(PLAN, METADATA))
    from rig.report.page import write_report  # matplotlib and the analysis: only for a directory that passed

    out = write_report(campaign_dir, include_invalid)
    click.echo(f"report: {out}")
