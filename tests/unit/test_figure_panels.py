"""The report's figures draw every panel of a factor (small multiples), never a silent drop."""

from __future__ import annotations

from analysis.factors import slices
from analysis.figures import goodput_figure, share_figure


def _rows() -> list[dict]:
    rows = []
    for setup in ("I", "II", "III"):
        for homing in ("dual", "lte", "wifi"):
            for connections in (1, 5):
                for cc in ("cubic", "lia"):
                    run_id = f"{setup}-{homing}-{connections}-{cc}"
                    rows.append({"run_id": run_id, "pair": 1, "cc": cc, "connections": connections, "setup": setup,
                                 "homing": homing, "duration_s": 10.0, "goodput_bps": 5e6 + connections * 1e5,
                                 "bytes_lte": 2_000_000, "bytes_wifi": 4_000_000})
    return rows


def test_nine_panels_all_drawn():
    rows = _rows()
    assert len(slices(rows, "connections")) == 9  # a panel per setup x homing
    for draw in (share_figure, goodput_figure):
        fig = draw(rows, "connections")
        drawn = [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]
        assert len(drawn) == 9
        assert len({ax.get_title() for ax in drawn}) == 9 and "not shown" not in fig._suptitle.get_text()
