#!/usr/bin/env python3
"""Dataset export of a campaign with more than a million time-series samples: time and size.

    .venv/bin/python scripts/bench_export.py                 # a few seconds on a 2-core host
    .venv/bin/python scripts/bench_export.py --samples 40    # default-campaign-sized runs

It synthesizes a campaign in the run store's format (rig/store/synthetic.py): 27 runs x 10 hosts
x 3 interfaces x 1240 samples = 1,004,400 interface samples, plus the lag and subflow series of
the same runs; then exports it (rig export) and verifies the bundle (rig export --verify).
Numbers are printed, never asserted; what --verify finds is printed with them.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rig.export import export_campaign, verify  # noqa: E402
from rig.store.synthetic import write_campaign  # noqa: E402


def measure(root: Path, samples: int) -> dict:
    campaign = write_campaign(root / "results", samples_per_series=samples, sample_interval_s=0.1)
    t0 = time.perf_counter()
    bundle = export_campaign(campaign.path, root / "bundle")
    export_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    problems = verify(bundle)
    verify_s = time.perf_counter() - t0
    src = sum(p.stat().st_size for p in campaign.path.rglob("*.parquet"))
    size = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file())
    samples = campaign.interface_samples + campaign.lag_samples + campaign.subflow_samples
    return {"samples": samples, "interface_samples": campaign.interface_samples,
            "export_s": round(export_s, 2), "verify_s": round(verify_s, 2),
            "bundle_mb": round(size / 1e6, 1), "source_parquet_mb": round(src / 1e6, 1),
            "problems": problems}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=1240, help="samples per series")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-export-") as d:
        print(json.dumps(measure(Path(d), args.samples), indent=1))


if __name__ == "__main__":
    main()
