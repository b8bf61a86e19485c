"""Where the repository's own files are, for the code that reads them: one place, so that moving
a module never changes what it finds."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RADIO_CONFIGS = REPO / "radio-configs"
NODE_AGENT_DIR = REPO / "nodes" / "agent"
BPF_DIR = REPO / "nodes" / "bpf"
