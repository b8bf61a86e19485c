"""Each pair's subflow bytes against what its receiver read, recomputed from campaign directories'
own subflow series with rig.store.path_stats (also for runs recorded before runs.parquet had the
columns); prints one line per pair: campaign, run, pair, subflow_excess, subflow_mismatch, and a
summary of the dual-homed pairs. Numbers printed, never asserted.

    PYTHONPATH=. .venv/bin/python scripts/subflow_bytes.py results/<campaign>-<id> ...
"""

from __future__ import annotations

import sys

from rig.store.path_stats import pair_path_stats
from rig.store.reader import CampaignDir


def main(dirs: list[str]) -> None:
    dual = []
    for d in dirs:
        campaign = CampaignDir(d)
        for run in campaign.recorded():
            series = run.series("transfer_subflows")
            rows = series.to_pylist() if series is not None else []
            homing = run.params().get("homing")
            for p in run.pairs():
                s = pair_path_stats([r for r in rows if r["pair"] == p["pair"]], p.get("bytes_received"))
                if s["subflow_excess"] is None:
                    continue
                print(campaign.root.name, run.run_id, p["pair"], f"{s['subflow_excess']:.4f}", s["subflow_mismatch"])
                if homing == "dual":
                    dual.append(s["subflow_excess"])
    if dual:
        dual.sort()
        print(f"dual-homed pairs {len(dual)}: excess min {dual[0]:.4f}, median {dual[len(dual) // 2]:.4f}, "
              f"max {dual[-1]:.4f}; above 1 % {sum(x > 0.01 for x in dual)}, above 5 % {sum(x > 0.05 for x in dual)}, "
              f"above 10 % {sum(x > 0.10 for x in dual)}, short {sum(x < 0 for x in dual)}")


if __name__ == "__main__":
    main(sys.argv[1:])
