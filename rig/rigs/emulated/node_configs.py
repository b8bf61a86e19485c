"""Each emulated node's own configuration, as the node role writes it on a lab board
(/etc/rig/node.json, read by the node agent when it starts: nodes/agent/rig_node/radios.py).

Its radios are every interface the rig's topology can give an emulated node (a receiver's B side
is lte0 in Setup I and wlan1 in II and III, a sender has lte1 when a campaign gives it a second
modem: a setup or paths switch names them); the controller and the management
subnet are the emulated management network's. The agents the namespace transport forks read
`<state dir>/nodes/<host>.json`; an emulated node's sshd sees the same file as /etc/rig/node.json
in its own layer (mgmt.prepare_layer).
"""

from __future__ import annotations

import json
from pathlib import Path

from rig.model.topology import EMULATED_IFNAMES
from rig.rigs.emulated.mgmt import CONTROLLER_ADDRESS, MGMT_SUBNET


def node_config() -> dict:
    return {"radios": sorted(set(EMULATED_IFNAMES.values())), "controller": str(CONTROLLER_ADDRESS), "management": [MGMT_SUBNET]}


def write(node_dir: Path, hosts: list[str]) -> None:
    """The hosts' configurations in `node_dir`, each written whole (replaced, never half-written)."""
    node_dir.mkdir(parents=True, exist_ok=True)
    for host in hosts:
        tmp = node_dir / f".{host}.json.tmp"
        tmp.write_text(json.dumps(node_config()) + "\n")
        tmp.replace(node_dir / f"{host}.json")
