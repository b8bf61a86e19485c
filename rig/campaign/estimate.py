"""A duration estimate for `rig campaign plan`, from the radio profiles and the campaign's links.

A volume run takes round trips for the handshake and for its window to grow (slow start, then
one packet a round above a fixed `tcp.initial_ssthresh`) until it fills the path, then the rest at
the path's rate; a dual-homed one sends over its first path alone or splits the volume by the
paths' rates, whichever ends sooner. A time run takes its duration. Each run adds a per-run
overhead. Per path: the profile's `emulation` rate shared among the pairs on its radio networks,
capped by the campaign's `impairments` and the run's `link_rate_bps` level, and on a lossy path
by TCP's loss-limited rate (Mathis et al.: 1.22 MSS / (RTT sqrt(p))). The round trip is twice
the one-way delay plus jitter of the sender's and the receiver's hops (an impairment's values
replace its hop's profile values on `links`; on the radio models they come on top of the
model's own timing, and the WiFi capacity is the DCF model's calibrated saturation throughput).
Not modelled: events after t = 0, and attempts run again because the emulator lagged.
"""

from __future__ import annotations

import math

from rig.model.campaign import Campaign
from rig.campaign.plan import Plan, Run
from rig.model.profiles import lte_profile, wifi_profile
from rig.model.spec import Impairment
from rig.model.topology import radio_kind

# Per run: configure, launch, T0 lead, collect, judge (docs/measurements, overhead budget):
# 19, 21 and 37 ms at 1, 5 and 9 pairs on an idle 2-core host.
RUN_OVERHEAD_S, RUN_OVERHEAD_PER_PAIR_S = 0.015, 0.0025
RADIO_REBUILD_S = 0.2  # restart the block's changed radio processes and route the receivers
TCP_EFFICIENCY = 0.85  # goodput / link rate, headers included
MSS_BYTES, INITIAL_WINDOW = 1448, 10
HANDSHAKE_RTTS = 1.5  # SYN / SYN-ACK, then the last byte's half round trip
# The radio models' (and ns-3's) own capacity and timing, where the profiles' `emulation` figures
# (the `links` radios') do not apply: a BSS's saturated throughput with 5 stations, by standard,
# and a hop's one-way delay at light load (docs/measurements: wifi and lte calibration).
DCF_SATURATION_BPS = {"g": 29.5e6, "a": 29.7e6, "n24": 102e6, "n5": 103e6, "ac": 275e6}
RADIO_ONE_WAY_MS = {"wifi": 0.5, "lte": 8.0}


def _receiver_hop(path: str, setup: str) -> tuple[str, str]:
    """(campaign hop, profile kind) of the receiver's side that `path` leads to."""
    if path == "wifi":
        return "receiver_a", "wifi"
    return "receiver_b", ("lte" if setup == "I" else "wifi")


def _path(run: Run, radio: str, campaign: Campaign) -> tuple[float, float]:
    """(rate bps, round trip s) of one path of a pair: the one through the sender's `radio`."""
    path = radio_kind(radio)
    wifi = wifi_profile(run.wifi_standard).emulation
    lte = lte_profile(campaign.lte_profile).emulation
    links = campaign.radios == "links"
    if links and not campaign.shared_medium:  # no medium: each path is only its own hops
        wifi_medium = lte_medium = math.inf
    else:
        wifi_medium = wifi.medium_rate_bps if links else DCF_SATURATION_BPS.get(run.wifi_standard, wifi.medium_rate_bps)
        lte_medium = lte.medium_rate_bps
    wifi_alone = wifi.rate_bps if links else wifi_medium
    n = run.pairs
    # Receivers' side: both interfaces on AP2 in Setup III; in Setup I the LTE data crosses the
    # cell twice, which halves it where both directions share one medium (`links` radios).
    hairpin = 2 if run.setup == "I" and links else 1
    # A pair's share of a receivers' BSS: AP2 for the WiFi path; past the core, Setup II brings
    # LTE's data to AP3 and Setup III to AP2, which both paths then share.
    receivers_bss = min(wifi_alone, wifi_medium / n / (2 if run.setup == "III" else 1))
    if path == "wifi":
        rate = receivers_bss
    else:
        rate = min(lte.rate_bps, lte_medium / n / hairpin)
        if run.setup != "I":
            rate = min(rate, receivers_bss)
    profiles = {"wifi": wifi, "lte": lte}
    rtt_ms, loss = 0.0, 0.0
    for hop, kind in ((radio, path), _receiver_hop(path, run.setup)):
        imp: Impairment | None = campaign.impairments.get(hop)
        # Jitter is drawn per frame and frames leave in order, so a stream waits about its maximum.
        # On `links` an impairment replaces the hop's profile values; on the radio models it comes
        # on top of the radio's own timing.
        base_ms = profiles[kind].delay_ms + profiles[kind].jitter_ms if links else RADIO_ONE_WAY_MS[kind]
        if imp is None:
            rtt_ms += 2 * base_ms
            continue
        rate = min(rate, imp.rate_bps or math.inf)
        if links:
            changed = (imp.delay_ms if imp.delay_ms is not None else profiles[kind].delay_ms) + (
                imp.jitter_ms if imp.jitter_ms is not None else profiles[kind].jitter_ms)
        else:
            changed = base_ms + (imp.delay_ms or 0) + (imp.jitter_ms or 0)
        rtt_ms += 2 * changed if imp.direction == "both" else changed + base_ms
        loss += (imp.loss_pct or 0) / 100
    if run.link_rate_bps is not None:  # both senders' links at this rate
        rate = min(rate, run.link_rate_bps)
    loss += (getattr(run, f"{path}_loss_pct") or 0) / 100
    rtt = max(rtt_ms / 1e3, 1e-3)
    rate *= TCP_EFFICIENCY
    if loss > 0:
        rate = min(rate, 1.22 * MSS_BYTES * 8 / (rtt * math.sqrt(loss)))
    return rate, rtt


def _window_seconds(packets: float, rate: float, rtt: float, ssthresh: float) -> float:
    """Sending `packets` over one path: a window per round trip, doubled in slow start, one packet
    more a round above ssthresh, until it fills the path (then the rest at the path's rate)."""
    full = max(1.0, rate * rtt / 8 / MSS_BYTES)
    cwnd, seconds = float(INITIAL_WINDOW), rtt * HANDSHAKE_RTTS
    while packets > 0 and cwnd < full:
        packets -= cwnd
        seconds += rtt
        cwnd = cwnd * 2 if cwnd < ssthresh else cwnd + 1
    return seconds + max(packets, 0) * MSS_BYTES * 8 / rate


def _volume_seconds(run: Run, campaign: Campaign) -> float:
    paths = campaign.paths.radios if run.homing == "dual" else (run.homing,)
    measured = [_path(run, p, campaign) for p in paths]
    total = sum(rate for rate, _ in measured)
    ssthresh = campaign.tcp.initial_ssthresh or math.inf
    packets = run.volume_bytes / run.connections / MSS_BYTES
    # The first path alone (a short transfer ends before the second subflow helps), or each path
    # its share of the volume by rate, ending with the slower one: whichever is sooner.
    first = _window_seconds(packets, measured[0][0] / run.connections, measured[0][1], ssthresh)
    split = max(_window_seconds(packets * rate / total, rate / run.connections, rtt, ssthresh)
                for rate, rtt in measured)
    return min(first, split)


def run_seconds(run: Run, campaign: Campaign) -> float:
    overhead = RUN_OVERHEAD_S + RUN_OVERHEAD_PER_PAIR_S * run.pairs
    if run.time_based:
        return run.duration_s + overhead
    return _volume_seconds(run, campaign) + overhead


def run_estimates(plan: Plan) -> list[float]:
    """run_seconds of every run in plan order. It depends on a handful of fields only, so it is
    computed once per distinct combination of them, not once per run."""
    cache: dict[tuple, float] = {}
    out = []
    for run in plan.runs:
        key = (run.setup, run.homing, run.wifi_standard, run.pairs, run.volume_bytes, run.duration_s,
               run.connections, run.link_rate_bps, run.wifi_loss_pct, run.lte_loss_pct)
        seconds = cache.get(key)
        if seconds is None:
            seconds = cache[key] = run_seconds(run, plan.campaign)
        out.append(seconds)
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
