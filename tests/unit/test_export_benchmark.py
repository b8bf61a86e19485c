"""Benchmark: export of a campaign with >= 1 million time-series samples (time and size).

Measured and printed, never asserted as a timing. Run it alone:
    .venv/bin/pytest -s -m slow tests/unit/test_export_benchmark.py
or  .venv/bin/python tests/unit/test_export_benchmark.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from rig.store.synthetic import write_campaign  # noqa: E402

from rig.export import export_campaign, verify  # noqa: E402


def measure(root: Path) -> dict:
    # 27 runs x 10 hosts x 3 interfaces x 1240 samples = 1,004,400 interface samples,
    # plus the lag and subflow series of the same runs.
    campaign = write_campaign(root / "results", samples_per_series=1240, sample_interval_s=0.1)
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


@pytest.mark.slow
def test_export_one_million_samples(tmp_path):
    result = measure(tmp_path)
    print("\nexport benchmark:", result)
    assert result["interface_samples"] >= 1_000_000 and result["problems"] == []


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        print(measure(Path(d)))
