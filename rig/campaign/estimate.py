"""A rough duration estimate for `rig campaign plan`, from the radio profiles' capacities.

Assumed: a volume run's pair gets its paths' profile rates (shared among the pairs on a radio
network), each capped by the run's `link_rate_bps` level when it has one (that cap is then the
bottleneck); the campaign's `impairments`, losses and events do not change the estimate."""

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
    if run.link_rate_bps is not None:  # both senders' links at this rate
        wifi_rate, lte_rate = min(wifi_rate, run.link_rate_bps), min(lte_rate, run.link_rate_bps)
    return {"dual": wifi_rate + lte_rate, "wifi": wifi_rate, "lte": lte_rate}[run.homing] * TCP_EFFICIENCY


def run_seconds(run: Run, lte_name: str) -> float:
    if run.time_based:
        return run.duration_s + RUN_OVERHEAD_S
    return run.volume_bytes * 8 / _pair_rate_bps(run, lte_name) + RUN_OVERHEAD_S


def run_estimates(plan: Plan) -> list[float]:
    """run_seconds of every run in plan order. The rate depends on a handful of factors only, so
    it is computed once per distinct (setup, homing, WiFi standard, pairs, link rate), not once per run."""
    lte_name = plan.campaign.lte_profile
    rates: dict[tuple, float] = {}
    out = []
    for run in plan.runs:
        if run.time_based:
            out.append(run.duration_s + RUN_OVERHEAD_S)
            continue
        key = (run.setup, run.homing, run.wifi_standard, run.pairs, run.link_rate_bps)
        rate = rates.get(key)
        if rate is None:
            rate = rates[key] = _pair_rate_bps(run, lte_name)
        out.append(run.volume_bytes * 8 / rate + RUN_OVERHEAD_S)
    return out


def plan_seconds(plan: Plan, estimates: list[float] | None = None) -> float:
    """The whole plan: its runs plus a radio rebuild wherever the radios change.
    `estimates`: run_estimates(plan) when the caller has them already."""
    total, radio = 0.0, None
    for run, seconds in zip(plan.runs, estimates if estimates is not None else run_estimates(plan)):
        if run.radio_key != radio:
            total += RADIO_REBUILD_S
            radio = run.radio_key
        total += seconds
    return total
