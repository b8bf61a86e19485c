"""What the calibration scripts (calibrate_lte.py, calibrate_wifi.py) share: the emulator they
run, and the loop that runs every scenario in a reference model and in the rig's model, in
simulated time (`radio-emulator FLAG SCENARIO.json` prints one JSON line).

RIG_RADIO_EMULATOR=/path/to/radio-emulator runs that build instead of building the repository's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rig.rigs.emulated.build import build  # noqa: E402


def emulator() -> Path:
    """RIG_RADIO_EMULATOR (another build, e.g. a copy that others' rebuilds do not touch), or
    the repository's build."""
    return Path(os.environ.get("RIG_RADIO_EMULATOR") or build())


def run_scenario(binary: Path, flag: str, scenario: dict) -> dict:
    """One scenario in simulated time: the emulator's result line."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(scenario, f)
        f.flush()
        out = subprocess.run([str(binary), flag, f.name], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def run_cases(flag: str, cases: Iterable[tuple[dict, dict[str, dict]]],
              json_path: Path | None = None) -> Iterator[tuple[dict, dict[str, dict]]]:
    """Runs each case's scenarios ({model: scenario}, in that order) and yields the case with
    {model: result} as soon as it is done; once all are, writes every case with its results to
    `json_path` (one object per case: the case's fields, then one member per model)."""
    binary = emulator()
    done = []
    for case, scenarios in cases:
        results = {model: run_scenario(binary, flag, scenario) for model, scenario in scenarios.items()}
        done.append({**case, **results})
        yield case, results
    if json_path is not None:
        json_path.write_text(json.dumps(done, indent=1))
