#!/usr/bin/env python3
"""`rig findings` over 10,000 runs: seed 002's campaign files (the runs shared among them, their
factor matrices repeated) written as synthetic campaign directories in the run store's format
(rig/findings/synthetic.py) in a temporary directory, then evaluated against every
shipped findings file.

    .venv/bin/python scripts/bench_findings.py              # 10,000 runs
    .venv/bin/python scripts/bench_findings.py --runs 2000  # fewer

It prints the time of `rig findings DIR...` as a user runs it (a fresh process: imports, reading
the directories, every claim) and of the evaluation alone, best of --repeat; numbers are printed,
never asserted. Say the host's load (`uptime`) beside them.
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

CAMPAIGNS = tuple(sorted(p.stem for p in (ROOT / "campaigns").glob("seed002-*.yaml") if not p.stem.endswith("-emulated")))


def _cells(name: str) -> list[dict]:
    from rig.model.campaign import load_campaign

    c = load_campaign(ROOT / "campaigns" / f"{name}.yaml")
    f = c.factors
    return [dict(setup=s, cc=cc, connections=n, volume_bytes=v, rcvbuf_bytes=b, wifi_standard=w, homing=h)
            for s, cc, n, v, b, w, h in itertools.product(c.setups, f.cc, f.connections, f.volume, f.rcvbuf,
                                                          f.wifi_standard, f.homing)]


def build(root: Path, runs: int) -> list[Path]:
    import numpy as np

    from rig.findings.synthetic import run, write_findings_campaign

    rng = np.random.default_rng(0)
    dirs = []
    for name in CAMPAIGNS:
        cells = _cells(name)
        rows = []
        for i in range(runs // len(CAMPAIGNS)):
            cell = cells[i % len(cells)]
            share = {"lte": 1.0, "wifi": 0.0}.get(cell["homing"], 0.3 + 0.05 * rng.standard_normal())
            rows.append(run(8e6 * (1 + 0.1 * rng.standard_normal()), lte_share=share, pairs=5,
                            status="ok" if rng.random() > 0.03 else "invalid", **cell))
        dirs.append(write_findings_campaign(root, name, rows))
    return dirs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.monotonic()
        dirs = build(Path(tmp), args.runs)
        print(f"built {args.runs} runs (5 pairs each) in {len(dirs)} campaign directories in {time.monotonic() - started:.1f} s")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        cli = []
        for _ in range(args.repeat):
            t = time.monotonic()
            out = subprocess.run([sys.executable, "-m", "rig", "findings", *map(str, dirs)], cwd=ROOT, env=env,
                                 capture_output=True, text=True, check=True).stdout
            cli.append(time.monotonic() - t)
        rows = out.splitlines()[1:]
        verdicts = {v: sum(f"  {v}  " in r for r in rows) for v in ("held", "not held", "inconclusive", "not evaluated")}
        print(f"rig findings: {len(rows)} rows {verdicts}; best {min(cli):.2f} s of {', '.join(f'{x:.2f}' for x in cli)}")
        from rig.findings.data import CampaignData
        from rig.findings.evaluate import evaluate
        from rig.findings.model import load_findings, shipped

        loaded = [(str(f), load_findings(f)) for f in shipped()]
        inner = []
        for _ in range(args.repeat):
            t = time.monotonic()
            evaluate(loaded, CampaignData.read(dirs))
            inner.append(time.monotonic() - t)
        print(f"read + evaluate in process: best {min(inner):.2f} s of {', '.join(f'{x:.2f}' for x in inner)}")
        print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    main()
