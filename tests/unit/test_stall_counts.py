"""Stalls counted per condition (analysis.stalls) and the stall bound (rig.run.watch): runs, not
pairs, are counted; the repetition is not part of a condition."""

from __future__ import annotations

from analysis.stalls import per_condition
from rig.run.watch import STALL_MIN_S, stall_bound_s


def _row(run_id: str, status: str, cc: str = "olia", rcvbuf: int = 1_000_000, rep: int = 1, pair: int = 1) -> dict:
    return {"run_id": run_id, "status": status, "cc": cc, "connections": 10, "volume_bytes": 15_000_000,
            "rcvbuf_bytes": rcvbuf, "repetition": rep, "pair": pair}


def test_a_run_with_a_stalled_pair_counts_once_in_its_condition():
    rows = [_row("a", "stalled", pair=1), _row("a", "stalled", pair=2), _row("a", "ok", pair=3),
            _row("b", "ok", rep=2), _row("c", "stalled", rep=3),
            _row("d", "ok", cc="cubic"), _row("e", "failed", rcvbuf=640_000)]
    [olia] = per_condition(rows)
    assert (olia["stalled"], olia["runs"]) == (2, 3)
    assert olia["condition"].startswith("cc=olia, connections=10, volume_bytes=15 MB, rcvbuf_bytes=1000 KB")
    assert per_condition([_row("d", "ok"), _row("e", "failed")]) == []


def test_the_stall_bound_is_seconds_and_grows_with_the_rto():
    assert stall_bound_s(None) == stall_bound_s(200) == STALL_MIN_S == 5.0
    assert stall_bound_s(1500) == 12.0  # 8 RTOs of a bufferbloated path
