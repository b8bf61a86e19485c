"""`rig export CAMPAIGN_DIR --to DIR` and `rig export --verify DIR`."""

from __future__ import annotations

import time
from pathlib import Path

import click

from rig.core.errors import InputError, RigError
from rig.store.inputs import bundle_dir
from rig.store.inputs import campaign_dir as checked_campaign_dir


@click.command()
@click.argument("campaign_dir", required=False, type=click.Path(path_type=Path))
@click.option("--to", type=click.Path(path_type=Path), help="new directory for the dataset bundle")
@click.option("--verify", "verify_dir", type=click.Path(path_type=Path),
              help="check an exported bundle against its SHA256SUMS instead")
def export(campaign_dir: Path | None, to: Path | None, verify_dir: Path | None) -> None:
    """Export a campaign as a dataset (Parquet, datapackage.json, SHA256SUMS, README)."""
    from rig.export.bundle import SUMS, export_campaign, verify

    if verify_dir is not None:
        if campaign_dir or to:
            raise InputError("command line", "--verify", "takes only the bundle directory")
        bundle_dir(verify_dir, SUMS)
        problems = verify(verify_dir)
        for p in problems:
            click.echo(p, err=True)
        if problems:
            raise RigError(f"{verify_dir}: {len(problems)} problem(s), first: {problems[0]}")
        click.echo(f"{verify_dir}: ok")
        return
    if campaign_dir is None or to is None:
        raise InputError("command line", "CAMPAIGN_DIR/--to", "give both, or --verify DIR")
    checked_campaign_dir(campaign_dir, "CAMPAIGN_DIR")
    if to.exists() and not (to.is_dir() and not any(to.iterdir())):
        raise InputError(str(to), "--to", "exists and is not empty; exports are never overwritten")
    if to.resolve().is_relative_to(campaign_dir.resolve()):
        raise InputError(str(to), "--to", f"is inside the campaign directory {campaign_dir}")
    started = time.monotonic()
    out = export_campaign(campaign_dir, to)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    click.echo(f"exported {campaign_dir} to {out}: {size / 1e6:.1f} MB in {time.monotonic() - started:.1f} s")
