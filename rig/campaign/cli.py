"""`rig campaign plan FILE` and `rig campaign run FILE`."""

from __future__ import annotations

from pathlib import Path

import click


def _fmt_duration(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h {m:02d}m {s:02d}s" if h else f"{m}m {s:02d}s"


def host_cc_problems(c) -> list[tuple[str, str]]:
    """(field, problem) for each CC this host cannot run, which an emulated campaign (its nodes
    share this kernel) would refuse. Coupled CCs that `campaign run` registers itself are fine."""
    from rig import congestion

    out = []
    for i, cc in enumerate(c.factors.cc):
        why = congestion.explain(cc)
        if why is not None and why.cause is not congestion.Cause.NOT_REGISTERED:
            out.append((f"factors.cc[{i}]", f"{cc!r} cannot run on this host: {why}"))
    return out


def host_cc_warnings(c, source: str) -> list[str]:
    """Planning does not depend on the host, but a CC it cannot run is worth a word."""
    return [f"warning: {source}: {field}: {problem} (an emulated campaign would be refused; "
            f"a lab's senders are checked by campaign run --rig)" for field, problem in host_cc_problems(c)]


def _prefix(ctx: click.Context, param: click.Parameter, value: str) -> str:
    from rig.rigs.emulated.cli import check_prefix

    return check_prefix(ctx, param, value)


def _out_dir(ctx: click.Context, param: click.Parameter, value: Path) -> Path:
    if value.exists() and not value.is_dir():
        raise click.BadParameter(f"{value} exists and is not a directory", ctx, param)
    return value


@click.group()
def campaign() -> None:
    """Plan and run measurement campaigns."""


def _shard(ctx: click.Context, param: click.Parameter, value: str | None):
    from rig.campaign.shards import parse_shard
    from rig.core.errors import InputError

    if value is None:
        return None
    try:
        return parse_shard(value)
    except InputError as e:
        raise click.BadParameter(e.problem, ctx, param) from None


shard_option = click.option("--shard", callback=_shard, metavar="K/N",
                            help="Only shard K of N: a share of every block (docs/campaigns.md, \"Several hosts\").")


@campaign.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@shard_option
@click.option("--shards", type=click.IntRange(min=1), help="Print each of N shards' runs and estimate, not the runs.")
def plan(file: Path, as_json: bool, shard, shards: int | None) -> None:
    """Validate FILE, expand it into runs and estimate the duration."""
    import json

    from rig.campaign.estimate import plan_seconds, run_estimates
    from rig.campaign.shards import Shard, shard_runs
    from rig.core.errors import InputError
    from rig.model.campaign import load_campaign
    from rig.campaign.plan import Plan, expand

    if shards is not None and (shard is not None or as_json):
        raise InputError("command line", "--shards", "not with --shard or --json")
    c = load_campaign(file)
    p = expand(c, str(file))
    for line in host_cc_warnings(c, str(file)):
        click.echo(line, err=True)
    runs = shard_runs(p, shard) if shard else p.runs
    if as_json:
        doc = p.to_dict()
        if shard:
            doc.update(shard=str(shard), runs=[r.to_dict() for r in runs])
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(f"campaign {c.name}: {len(p.runs)} runs, seed {c.seed}, blocks by {', '.join(c.blocking) or 'none'}, "
               f"plan digest {p.digest}")
    estimates = run_estimates(p)  # the profiles are read once, not per run
    whole = plan_seconds(p, estimates)
    if shards is not None:
        by_run = dict(zip((r.run_id for r in p.runs), estimates))
        for k in range(1, shards + 1):
            part = shard_runs(p, Shard(k, shards))
            seconds = plan_seconds(Plan(c, part), [by_run[r.run_id] for r in part])
            click.echo(f"shard {k}/{shards}: {len(part)} runs, {len({r.block for r in part})} block(s), estimated "
                       f"{_fmt_duration(seconds)} ({seconds / whole:.1%} of the whole campaign's)")
        click.echo(f"whole campaign: estimated duration: {_fmt_duration(whole)}")
        return
    click.echo(f"{'#':>4}  {'run id':<44} {'block':<10} {'est.':>6}")
    shown = set(r.run_id for r in runs)
    for r, seconds in zip(p.runs, estimates):
        if r.run_id in shown:
            click.echo(f"{r.index + 1:>4}  {r.run_id:<44} {r.block:<10} {seconds:5.1f}s")
    if shard:
        by_run = dict(zip((r.run_id for r in p.runs), estimates))
        seconds = plan_seconds(Plan(c, runs), [by_run[r.run_id] for r in runs])
        click.echo(f"shard {shard}: {len(runs)} runs, estimated duration: {_fmt_duration(seconds)} "
                   f"(the whole campaign: {_fmt_duration(whole)})")
        return
    click.echo(f"estimated duration: {_fmt_duration(whole)}")


@campaign.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--rig", "rig_kind", default="emulated", show_default=True,
              help="'emulated', or the path of an inventory of a physical rig.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("results"), show_default=True, callback=_out_dir,
              help="Directory that holds the campaign directories.")
@click.option("--resume", is_flag=True, help="Finish the newest interrupted run of this campaign (a new one if none).")
@click.option("--rerun-lagged", is_flag=True, help="With --resume: run again, each with its lag retries afresh, the "
              "runs an emulator's lag alone made invalid (on a busier host or hour); their attempts are kept.")
@click.option("--prefix", default="rig", show_default=True, callback=_prefix,
              help="Name prefix of the emulated rig's namespaces.")
@click.option("--keep-up", is_flag=True, help="Leave the emulated rig up afterwards.")
@click.option("--transport", type=click.Choice(["netns", "ssh"]), default="netns", show_default=True,
              help="Reach the emulated nodes with ip netns exec, or over SSH on the management network.")
@click.option("--agent-path", default=None, help="With --transport ssh: the node agent's path on the nodes "
              "(default: this checkout's; /opt/rig/rig_agent.py once the Ansible node role installed it).")
@click.option("--use-running", is_flag=True, help="Run on the emulated rig already up with --prefix (e.g. provisioned "
              "with ansible/nodes.yml) and leave it up; fails if it is not up (with --ssh for --transport ssh).")
@shard_option
@click.option("--host-name", help="The name metadata.json records for this host (default: its hostname).")
def run(file: Path, rig_kind: str, out: Path, resume: bool, rerun_lagged: bool, prefix: str, keep_up: bool, transport: str,
        agent_path: str | None, use_running: bool, shard, host_name: str | None) -> None:
    """Execute the campaign in FILE and record every run."""
    from rig.model.campaign import load_campaign
    from rig.campaign.plan import expand
    from rig.core.errors import InputError

    if rig_kind != "emulated" and (transport != "netns" or use_running or keep_up or agent_path):
        raise InputError("command line", "--rig", "--transport, --agent-path, --use-running and --keep-up "
                                                  "are for the emulated rig only")
    if agent_path and transport != "ssh":
        raise InputError("command line", "--agent-path", "only with --transport ssh")
    if rerun_lagged and not resume:
        raise InputError("command line", "--rerun-lagged", "only with --resume")
    # A bad file is refused before the runner's machinery (Parquet, the emulator, InfluxDB) is
    # imported; the runner takes the plan and checks the rest before it writes.
    plan = expand(load_campaign(file), str(file))
    if shard:
        from rig.campaign.shards import shard_runs

        shard_runs(plan, shard)  # more shards than runs: refused here

    from rig.rigs.backends import EmulatedBackend, LabBackend
    from rig.campaign.runner import Stopped, run_campaign

    if rig_kind == "emulated":
        backend = EmulatedBackend(prefix, transport=transport, agent_path=agent_path, use_running=use_running, keep_up=keep_up)
    else:
        backend = LabBackend(Path(rig_kind))
    try:
        result = run_campaign(file, out, backend, resume=resume, plan=plan, shard=shard, host_name=host_name,
                              rerun_lagged=rerun_lagged)
    except Stopped as e:
        again = f"rig campaign run {file} --out {out}{f' --shard {shard}' if shard else ''} --resume"
        click.echo(f"stopped by {e}; recorded runs are kept. Continue with: {again}", err=True)
        raise SystemExit(130)
    c = result.counts
    overhead = (result.wall_s - result.transfer_s) / result.wall_s if result.ran and result.wall_s else 0.0
    click.echo(f"{result.store.root}: {c['ok']} ok, {c['invalid']} invalid, {c['stalled']} stalled, {c['failed']} failed"
               f" ({result.skipped} recorded earlier); {_fmt_duration(result.wall_s)} wall,"
               f" orchestration overhead {overhead:.1%}")
    if result.lag_retries:
        click.echo(f"{result.lag_retries} attempts run again because the emulator lagged (kept in {result.store.attempts_dir})")
    if result.start_spreads_ms:
        spreads = sorted(result.start_spreads_ms)
        click.echo(f"senders' start spread: median {spreads[len(spreads) // 2]:.2f} ms, max {spreads[-1]:.2f} ms")
    click.echo(f"runs table: {result.store.dir.runs_table_path}")


@campaign.command()
@click.argument("dirs", nargs=-1, required=True, type=click.Path(path_type=Path), metavar="DIR...")
@click.option("--to", "to", required=True, type=click.Path(path_type=Path),
              help="The merged campaign directory to make (it must not exist).")
@click.option("--partial", is_flag=True, help="Merge although planned runs are missing (they are listed); "
              "rig campaign run --resume runs them into the merge.")
def merge(dirs: tuple[Path, ...], to: Path, partial: bool) -> None:
    """Join campaign directories of one plan (shards run on several hosts) into one."""
    import time

    from rig.store.merge import merge as merge_dirs

    t = time.monotonic()
    result = merge_dirs(list(dirs), to, partial)
    twice = f"; {len(result.twice)} recorded twice alike, taken once" if result.twice else ""
    click.echo(f"{result.root}: {result.merged} of {result.planned} planned runs from {len(result.sources)} "
               f"directories{twice} ({time.monotonic() - t:.1f} s); metadata.json names each run's host")
    for s in result.sources:
        click.echo(f"  {s.dir.root}: {len(s.taken)} runs (shard {s.metadata.get('shard') or '-'}, host "
                   f"{s.metadata.get('host')})")
    if result.missing:
        click.echo(f"warning: {len(result.missing)} planned runs missing: {', '.join(result.missing[:5])}"
                   f"{' ...' if len(result.missing) > 5 else ''}", err=True)
