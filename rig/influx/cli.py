"""`rig sync` and `rig influx start|stop|status`."""

from __future__ import annotations

import re
from pathlib import Path

import click

from rig.core.errors import InputError, RigError
from rig.influx import server
from rig.influx.sync import sync as sync_campaign

state_dir_option = click.option("--state-dir", type=click.Path(path_type=Path, file_okay=False), show_default=True,
                                default=server.DEFAULT_STATE_DIR, help="config, data, pid file and log")
port_option = click.option("--port", type=click.IntRange(1, 65535), default=server.DEFAULT_PORT, show_default=True,
                           help="HTTP port on 127.0.0.1")


def _db_name(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}", value):
        raise click.BadParameter(f"{value!r}: letters, digits, '_', '.' and '-' only (at most 64)", ctx, param)
    return value


@click.command()
@click.argument("campaign_dir", type=click.Path(path_type=Path))
def sync(campaign_dir: Path) -> None:
    """Write the runs of CAMPAIGN_DIR that InfluxDB has not got yet (exactly once)."""
    from rig.store.inputs import campaign_dir as checked_campaign_dir
    from rig.store.reader import PLAN, RUNS

    checked_campaign_dir(campaign_dir, "CAMPAIGN_DIR", needs=(PLAN,))
    if not (campaign_dir / RUNS).is_dir():
        raise InputError(str(campaign_dir), RUNS, "missing: not a campaign directory")
    result = sync_campaign(campaign_dir)
    click.echo(f"written {len(result.written)} runs ({result.points} points), "
               f"{len(result.already)} already there, {len(result.unfinished)} unfinished")
    if result.error:
        raise RigError(f"sync stopped: {result.error}")


@click.group()
def influx() -> None:
    """The embedded InfluxDB (influxd 1.x on loopback) for the demo and the tests."""


@influx.command()
@state_dir_option
@port_option
@click.option("--db", default=server.DEFAULT_DB, show_default=True, callback=_db_name, help="database name")
def start(state_dir: Path, port: int, db: str) -> None:
    """Start influxd (daemonized, pid file in the state dir) and create the database."""
    srv = server.Server(state_dir.resolve(), port)
    pid = server.start(srv, db)
    click.echo(f"influxd running, pid {pid}; for the sink: RIG_INFLUX_URL={srv.url} RIG_INFLUX_DB={db}")


@influx.command()
@state_dir_option
@port_option
def stop(state_dir: Path, port: int) -> None:
    """Stop the influxd of this state dir."""
    stopped = server.stop(server.Server(state_dir.resolve(), port))
    click.echo("stopped" if stopped else "not running")


@influx.command()
@state_dir_option
@port_option
def status(state_dir: Path, port: int) -> None:
    """Whether the influxd of this state dir runs and answers; exit 1 if not."""
    st = server.status(server.Server(state_dir.resolve(), port))
    click.echo(" ".join(f"{k}={v}" for k, v in st.items()))
    if not st["responding"]:
        raise SystemExit(1)
