"""How often each condition of a campaign stalled: a stall is a result of the network under
test (rig.run.watch), so it is counted per condition, never averaged into the goodput."""

from __future__ import annotations

from collections import Counter

from analysis.factors import FACTORS, fmt

# A condition: every factor of a run but its repetition.
CONDITION = ("cc", *FACTORS)


def condition(row: dict) -> str:
    return ", ".join(f"{k}={fmt(k, row[k])}" for k in CONDITION if row.get(k) is not None)


def per_condition(rows: list[dict]) -> list[dict]:
    """Each condition with a stalled run: {"condition", "stalled", "runs"}, from runs.parquet's
    rows or the runs' outcomes (a run, not a pair, is counted: a run stalled if a pair of it did)."""
    runs: dict[str, dict] = {}
    for r in rows:
        seen = runs.setdefault(r["run_id"], {"condition": condition(r), "stalled": False})
        seen["stalled"] |= r.get("status") == "stalled"
    total = Counter(r["condition"] for r in runs.values())
    stalled = Counter(r["condition"] for r in runs.values() if r["stalled"])
    return [{"condition": c, "stalled": n, "runs": total[c]} for c, n in sorted(stalled.items())]
