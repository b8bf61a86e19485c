"""A rough duration estimate for `rig campaign plan`, from the radio profiles' capacities."""

from __future__ import annotations

from rig.campaign.plan import Plan, Run
from rig.profiles import lte_profile, wifi_profile

RUN_OVERHEAD_S = 0.6  # configure, schedule, collect and store one run (measured: docs/campaigns.md)
RADIO_REBUILD_S = 4.0  # restart the radio processes and re-address the nodes
TCP_EFFICIENCY = 0.85  # goodput / link rate, slow start and headers included


def _pair_rate_bps(run: Run, lte_name: str) -> float:
    wifi = wifi_profile(run.wifi_standard).emulation
    lte = lte_profile(lte_name).emulation
    n = run.pairs
    # Receivers' side: both interfaces on AP2 in Setup III, LTE hairpinned through the cell in Setup I.
    wifi_rate = min(wifi.rate_bps, wifi.medium_rate_bps / n / (2 if run.setup == "III" else 1))
    lte_rate = min(lte.rate_bps, lte.medium_rate_bps / n / (2 if run.setup == "I" else 1))
    if run.setup == "III":
        lte_rate = min(lte_rate, wifi.medium_rate_bps / n / 2)
    return {"dual": wifi_rate + lte_rate, "wifi": wifi_rate, "lte": lte_rate}[run.homing] * TCP_EFFICIENCY


def run_seconds(run: Run, lte_name: str) -> float:
    return run.volume_bytes * 8 / _pair_rate_bps(run, lte_name) + RUN_OVERHEAD_S


def plan_seconds(plan: Plan) -> float:
    total, radio = 0.0, None
    for run in plan.runs:
        if run.radio_key != radio:
            total += RADIO_REBUILD_S
            radio = run.radio_key
        total += run_seconds(run, plan.campaign.lte_profile)
    return total
