"""`rig paths`: every node's routing plan for a setup, as the node agent applies it.

The node role stores each board's plan from this command's output (and its interface-up hook
applies it), so the lab's boards and the emulated nodes are configured by one implementation.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from rig.model.topology import SETUPS, topology
from rig.rigs.lab import lab_topology, load_lab
from rig.model.routing import HOMINGS, node_plan


@click.command("paths")
@click.argument("rig_spec", metavar="INVENTORY|emulated")
@click.option("--setup", type=click.Choice(SETUPS), required=True)
@click.option("--homing", type=click.Choice(HOMINGS), default="dual", show_default=True, help="The senders' homing.")
@click.option("--pairs", type=click.IntRange(1, 9), default=None, help="Emulated: how many pairs (default 5); lab: all.")
def paths_cli(rig_spec: str, setup: str, homing: str, pairs: int | None) -> None:
    """Print {node: plan} as JSON for the lab of INVENTORY, or for the emulated rig."""
    if rig_spec == "emulated":
        topo = topology(setup, pairs or 5)  # type: ignore[arg-type]
    else:
        lab = load_lab(Path(rig_spec))
        topo = lab_topology(lab, setup, pairs or min(len(lab.senders), len(lab.receivers)))
    click.echo(json.dumps({host: node_plan(topo, host, homing) for host in topo.nodes}, indent=1, sort_keys=True))
