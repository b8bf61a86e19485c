"""Where the repository's own files are, for the code that reads them: one place, so that moving
a module never changes what it finds."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RADIO_CONFIGS = REPO / "radio-configs"
NODE_AGENT_DIR = REPO / "nodes" / "agent"
BPF_DIR = REPO / "nodes" / "bpf"
MPTCPD_PLUGIN_DIR = REPO / "nodes" / "mptcpd"  # the rig's mptcpd plugin; built into its build/


def node_package() -> None:
    """Makes the node agent's package `rig_node` importable here, as on a node (the agent runs
    with its directory on the path): the controller uses the node's own definitions where both
    sides must agree (the routing plan's schema, the agent protocol's version)."""
    if str(NODE_AGENT_DIR) not in sys.path:
        sys.path.insert(0, str(NODE_AGENT_DIR))
