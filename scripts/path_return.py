"""When a cut path carried data again after each restore, in a campaign's recorded runs.

    .venv/bin/python scripts/path_return.py results/seed004-cut-emulated-<id> [...]

For every restore (a `state: up` event, its earliest actual time over the radio and the node)
of a path that was cut, per pair: `data_again_s`, the time from the restore to the first sample
of the transfer's own series (timeseries/transfer_subflows) in which a subflow on that path had
more bytes acknowledged than at the restore; `subflow`, whether that subflow was `stalled` (it
existed before the cut: TCP's retransmission took it back) or `new` (a path manager opened it
after the restore); and `half_rate_s`, the time until the path was back at half its pre-cut rate
(analysis.metrics.recovery_times, 1 s intervals). Prints one line per restore and the
campaign's paths.manager; numbers only, nothing is asserted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.metrics import path_rates, recovery_times, run_t0, state_events  # noqa: E402
from rig.store.reader import CampaignDir  # noqa: E402


def data_again(subflows: list[dict], path: str, down: float, up: float) -> tuple[float | None, str | None]:
    """(seconds from `up` to the first sample with more acknowledged on `path`, stalled|new)."""
    rows = sorted((r for r in subflows if r["path"] == path), key=lambda r: r["time"])
    at_up: dict[str, int] = {}
    before_cut = {r["local"] for r in rows if r["time"] <= down}
    for r in rows:
        if r["time"] <= up:
            at_up[r["local"]] = r["bytes_acked"]
        elif r["bytes_acked"] > at_up.get(r["local"], 0):
            return r["time"] - up, "stalled" if r["local"] in before_cut else "new"
    return None, None


def restores(campaign: CampaignDir) -> list[dict]:
    runs = campaign.runs_rows()
    subflows = {run_id: t.to_pylist() for run_id, t in campaign.series_by_run("transfer_subflows")}
    events = [dict(e, run_id=run_id) for run_id, t in campaign.series_by_run("events") for e in t.to_pylist()]
    t0 = run_t0(runs, events)
    all_subflows = [dict(s, run_id=run_id) for run_id, rows in subflows.items() for s in rows]
    half = {(r["run_id"], r["pair"], r["path"], round(r["up_at_s"], 3)): r["recovery_s"]
            for r in recovery_times(path_rates(all_subflows, t0), events, t0)}
    out, cut_at = [], {}
    for e in state_events(events):
        key = (e["run_id"], e["pair"], e["path"])
        if e["state"] == "down":
            cut_at[key] = e["actual"]
        elif e["state"] == "up" and key in cut_at:
            down, up = cut_at.pop(key), e["actual"]
            mine = [s for s in subflows.get(e["run_id"], []) if e["pair"] in (None, s["pair"])]
            after, kind = data_again(mine, e["path"], down, up)
            out.append({"run_id": e["run_id"], "pair": e["pair"], "path": e["path"], "down_s": down - t0[e["run_id"]],
                        "up_s": up - t0[e["run_id"]], "data_again_s": after, "subflow": kind,
                        "half_rate_s": half.get((e["run_id"], e["pair"], e["path"], round(up - t0[e["run_id"]], 3)))})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("campaigns", nargs="+", type=Path)
    args = parser.parse_args()
    for root in args.campaigns:
        campaign = CampaignDir(root)
        print(f"{root.name}: path manager {(campaign.campaign().get('paths') or {}).get('manager', 'kernel')}")
        for r in restores(campaign):
            fmt = lambda x: "never" if x is None else f"{x:.2f} s"  # noqa: E731
            print(f"  {r['run_id']} pair {r['pair']} {r['path']}: cut {r['down_s']:.2f}-{r['up_s']:.2f} s, "
                  f"data again {fmt(r['data_again_s'])} after the restore ({r['subflow'] or '-'} subflow), "
                  f"half its pre-cut rate after {fmt(r['half_rate_s'])}")


if __name__ == "__main__":
    main()
