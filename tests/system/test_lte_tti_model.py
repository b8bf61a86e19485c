"""The TTI-scheduled LTE cell (emulator kind lte_tti) with real TCP between namespaces.

Each test starts the real emulator binary with the kind in a throw-away namespace, moves the
UE TAPs into node namespaces and the gateway TAP into a gateway namespace (the cell bridges
Ethernet frames like `links`), and measures iperf3 uploads; the TCP ACKs take the cell's
downlink. The cell's per-second stats log says what the scheduler granted.
"""

from __future__ import annotations

import statistics
import time

import pytest

from fixtures.on_time import on_time
from fixtures.radio_net import star
from fixtures.radio_traffic import NO_IMPAIRMENT, TCP_PAYLOAD_SHARE, goodputs_bps
from rig.rigs.emulated.radiospec import LteTtiCell, RadioNetworkSpec, Station
from rig.model.profiles import lte_profile

pytestmark = pytest.mark.emulated

PROFILE = lte_profile("band7-5mhz")  # 25 PRB: one UE alone at MCS 20 -> TBS 10680 bits per TTI


def cell_spec(n: int, **cell) -> RadioNetworkSpec:
    stations = tuple(Station(f"ltt{i}", NO_IMPAIRMENT, NO_IMPAIRMENT) for i in range(n))
    return RadioNetworkSpec("ltt", "lttgw", stations, kind="lte_tti",
                            lte_tti=LteTtiCell(prb=PROFILE.prb, **cell))


def busy_rows(radio, since: float, until: float) -> list[dict]:
    """Per-station stats seconds fully inside the transfer in which the UE was granted."""
    return [r for r in radio.station_stats(since + 1.5, until - 1) if r["ul_grants"] > 0]


def test_single_ue_uplink_runs_at_the_profiles_reference_rate(emulator, netns, tmp_path):
    reference = PROFILE.emulation.rate_bps * TCP_PAYLOAD_SHARE
    low, high = 0.8 * reference, 1.1 * reference
    radio, gw, nodes = star(cell_spec(1), netns, tmp_path)

    def upload() -> tuple[float, list[dict]]:
        t0 = time.time()
        (goodput,) = goodputs_bps(netns, gw, nodes, seconds=6)
        return goodput, busy_rows(radio, t0, time.time())

    def whole_band(rows: list[dict]) -> list[dict]:
        # A second with a grant short of the whole band (the UE's buffer ran low) is not one.
        return [r for r in rows if r["ul_prbs"] == PROFILE.prb]

    with radio:
        goodput, rows = on_time([radio], upload, late=lambda m: m[0] <= low or not whole_band(m[1]))
    assert low < goodput < high, goodput
    assert rows, "no stats second with grants"
    # MCS 20 on the whole band: 36.213's TBS for I_TBS 19 and 25 PRBs.
    full = whole_band(rows)
    assert full and all(r["ul_mcs"] == 20 for r in full)
    assert any(r["ul_tb_bits"] == 10680 * r["ul_grants"] for r in full)
    assert sum(r["dl_grants"] for r in rows) > 0  # the ACKs went down the cell's downlink
    assert all(r["ul_harq_retx"] == 0 for r in rows)  # target BLER 0: no retransmissions


def test_five_ues_share_the_cell_round_robin(emulator, netns, tmp_path):
    alone_radio, alone_gw, alone_nodes = star(cell_spec(1, scheduler="rr", ul_scheduler="rr"), netns, tmp_path / "one")
    with alone_radio:
        (alone,) = goodputs_bps(netns, alone_gw, alone_nodes, seconds=4)
    radio, gw, nodes = star(cell_spec(5, scheduler="rr", ul_scheduler="rr"), netns, tmp_path / "five")
    with radio:
        shares = goodputs_bps(netns, gw, nodes, seconds=6)
    aggregate = sum(shares)
    # The cell's capacity stays (TCP keeps every UE backlogged); each UE gets about a fifth.
    assert 0.8 * alone < aggregate < 1.1 * alone, (alone, shares)
    for share in shares:
        assert 0.6 * aggregate / 5 < share < 1.4 * aggregate / 5, shares
    assert statistics.pstdev(shares) < 0.25 * statistics.mean(shares), shares


def test_harq_retransmissions_at_the_target_bler_are_counted(emulator, netns, tmp_path):
    radio, gw, nodes = star(cell_spec(1, target_bler=0.2), netns, tmp_path)
    with radio:
        t0 = time.time()
        (goodput,) = goodputs_bps(netns, gw, nodes, seconds=4)
        rows = busy_rows(radio, t0, time.time())
    grants = sum(r["ul_grants"] for r in rows)
    retx = sum(r["ul_harq_retx"] for r in rows)
    assert grants > 0
    # A fifth of the first transmissions fail; their retransmissions (8 ms later) are counted.
    assert 0.1 * grants < retx < 0.35 * grants, (grants, retx)
    assert sum(r["ul_harq_failed"] for r in rows) <= 0.01 * grants  # retransmissions fail at BLER / 10
    assert goodput > 0.5 * PROFILE.emulation.rate_bps * TCP_PAYLOAD_SHARE


def test_per_ue_sinr_and_sinr_trace_set_the_mcs(emulator, netns, tmp_path):
    from rig.rigs.emulated.radiospec import LteTtiUe

    # ltt0 at 8 dB all along (MCS 8); ltt1 at the cell's 18.8 dB (MCS 20), 8 dB from 4 s on.
    ues = {"ltt0": LteTtiUe(ul_sinr_db=8.0), "ltt1": LteTtiUe(ul_sinr_trace=((0.0, 18.8), (4.0, 8.0)))}
    radio, gw, nodes = star(cell_spec(2, ues=ues), netns, tmp_path)
    with radio:
        t0 = time.time()
        low, traced = goodputs_bps(netns, gw, nodes, seconds=6)
        rows = busy_rows(radio, t0, time.time())
    by_station = {tap: [r["ul_mcs"] for r in rows if r["station"] == tap] for tap in ("ltt0", "ltt1")}
    assert by_station["ltt0"] and all(m == 8 for m in by_station["ltt0"]), by_station
    assert 20 in by_station["ltt1"] and 8 in by_station["ltt1"], by_station
    assert low < traced, (low, traced)
