"""`rig findings RESULTS_DIR... [--findings FILE ...] [--markdown] [--update FILE]`."""

from __future__ import annotations

import os
from pathlib import Path

import click

from rig.findings.block import BEGIN, END, kept_from, read_block


def _checked_dir(path: Path) -> Path:
    from rig.store.inputs import campaign_dir

    if (path / "datapackage.json").is_file() and (path / "data" / "runs.parquet").is_file():
        return path  # an exported dataset
    return campaign_dir(path, "RESULTS_DIR", needs=("runs.parquet",), optional=("plan.json", "metadata.json"))


@click.command()
@click.argument("results_dirs", nargs=-1, type=click.Path(path_type=Path))
@click.option("--findings", "files", multiple=True, type=click.Path(path_type=Path),
              help="a findings file (repeatable; default: every file in campaigns/findings/)")
@click.option("--markdown", is_flag=True, help="print the Markdown tables of docs/studies.md, with this command line")
@click.option("--update", type=click.Path(path_type=Path),
              help="write the Markdown tables into this file, between its findings:begin and findings:end lines")
def findings(results_dirs: tuple[Path, ...], files: tuple[Path, ...], markdown: bool, update: Path | None) -> None:
    """Check the studies' claims on the valid runs of campaign directories (RESULTS_DIR...: campaign
    directories or exports): held, not held or inconclusive, with the effect, its 95 % interval and n
    (docs/findings.md)."""
    from rig.findings.model import load_findings, shipped

    dirs = [_checked_dir(d) for d in results_dirs]
    paths = list(files) or shipped()
    loaded = [(str(p), load_findings(p)) for p in paths]
    block = read_block(update) if update is not None else None
    from rig.findings.data import CampaignData  # pyarrow, numpy and the analysis: only for input that passed
    from rig.findings.evaluate import evaluate
    from rig.findings.render import markdown as to_markdown, text_table

    data = CampaignData.read(dirs)
    verdicts = evaluate(loaded, data)
    if markdown or update is not None:
        kept = kept_from(block.body).without(set(data)) if block else None
        argv = [*(kept.directories() if kept else []), *map(str, results_dirs),
                *(x for f in files for x in ("--findings", str(f))),
                *(["--update", str(update)] if update is not None else ["--markdown"])]
        text = to_markdown(verdicts, {f.study: f.title for _, f in loaded}, argv, kept)
        if update is not None:
            tmp = update.with_name(f".{update.name}.tmp{os.getpid()}")
            tmp.write_text(f"{block.head}{BEGIN}\n{text}\n{END}{block.tail}")
            os.replace(tmp, update)
            if kept and kept.dirs:
                click.echo(f"findings: kept as written the rows of {len(kept.dirs)} campaigns not given: "
                           f"{', '.join(kept.dirs)}", err=True)
            click.echo(f"findings: {update}")
        else:
            click.echo(text)
    else:
        click.echo(text_table(verdicts), nl=False)
    for name, campaign in data.items():  # a stall is the network's result: how often, per condition
        for c in campaign.stalls:
            click.echo(f"{name}: {c['stalled']} of {c['runs']} runs stalled: {c['condition']}", err=markdown or update is not None)
