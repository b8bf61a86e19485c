"""When each join of a campaign's dual-homed connections could start, and how long it then took.

    .venv/bin/python scripts/bench_join_readiness.py results/<campaign-id> [...]

Recomputes every connection's subflow rows from the senders' reports (rig.run.joins, so older
campaigns count too) and prints, over all joins: `full` (the connection fully established, its
first data acknowledged, after its creation), `announced late` (joins whose remote address
arrived more than 1 s after full establishment: a lost ADD_ADDR waiting for its retransmission),
`after ready` (established after its path manager could open it) and `after creation` (what the
judge measured before it counted from readiness), with how many joins exceed the default bound
from each reference. Numbers only, nothing is asserted.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rig.model.spec import Limits  # noqa: E402
from rig.run.joins import connection_subflows, fully_established_s, join_bound_s  # noqa: E402
from rig.store.reader import CampaignDir  # noqa: E402


def spread(xs: list[float]) -> str:
    xs = sorted(xs)
    if not xs:
        return "none"
    at = lambda q: xs[min(len(xs) - 1, int(q * len(xs)))]  # noqa: E731
    return (f"median {statistics.median(xs):.3f}, p90 {at(0.9):.3f}, p99 {at(0.99):.3f}, max {xs[-1]:.3f} s "
            f"(n {len(xs)})")


def main(dirs: list[str]) -> None:
    limits = Limits()
    full, late, after_ready, after_created = [], 0, [], []
    over_ready = over_created = 0
    for d in dirs:
        for run in CampaignDir(Path(d)).recorded():
            for report in run.transfers().values():
                for conn in (report.get("source") or {}).get("connections") or []:
                    rows = connection_subflows(conn, {})
                    initial = next((r for r in rows if r["initial"]), None)
                    joins = [r for r in rows if not r["initial"] and r["established_s"] is not None]
                    if initial is None or not joins:
                        continue
                    established = fully_established_s(conn)
                    if established is not None:
                        full.append(established - initial["established_s"])
                    for r in joins:
                        bound = join_bound_s(conn, r["established_s"], limits, joined=r["local"])
                        after_ready.append(r["established_s"] - r["ready_s"])
                        after_created.append(r["established_s"] - initial["established_s"])
                        late += established is not None and r["ready_s"] - established > 1.0
                        over_ready += after_ready[-1] > bound
                        over_created += after_created[-1] > bound
    print(f"fully established after creation: {spread(full)}")
    print(f"joins whose address was announced over 1 s after full establishment: {late} of {len(after_ready)}")
    print(f"join after its path manager could open it: {spread(after_ready)}; over the bound: {over_ready}")
    print(f"join after the connection's creation: {spread(after_created)}; over the bound: {over_created}")


if __name__ == "__main__":
    main(sys.argv[1:])
