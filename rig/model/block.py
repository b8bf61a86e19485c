"""A block's settings: what the runs of one block share and a backend (rig.rigs) builds the rig
from before the block's first run. The campaign loop derives them from each run; a new block
starts where they change."""

from __future__ import annotations

from dataclasses import dataclass

from rig.model.campaign import Campaign
from rig.model.spec import Run


@dataclass(frozen=True)
class BlockSettings:
    """What a block of runs shares, and a backend builds its radios and nodes from: the run's
    setup and WiFi standard, the campaign's LTE profile, pairs, impairments, radio kind, paths and
    whether `links` radios share a medium."""

    setup: str
    wifi_standard: str
    lte_profile: str
    pairs: int
    impairments: dict  # hop (wifi, lte, receiver_a, receiver_b) -> the campaign's Impairment fields
    # links: per-path pipes + shared medium; simulated: ns-3 LTE cell and WiFi BSSs; models: the
    # rig's own per-frame 802.11 DCF media and TTI-scheduled LTE cell
    model: str = "links"
    radios: tuple[str, ...] = ("wifi", "lte")  # the senders' radios (campaign paths.radios)
    mode: str = "paired"  # how subflows are made (campaign paths.mode)
    shared_medium: bool = True  # links radios: a FIFO medium per radio network (campaign shared_medium)


def with_link_rate(impairments: dict[str, dict], rate_bps: float | None) -> dict[str, dict]:
    """The campaign's impairments (hop -> Impairment fields) with both senders' links, `wifi` and
    `lte`, at `rate_bps` (a run's link_rate_bps level; None: as they are). A sender hop the
    campaign does not name gets {rate_bps, direction: both}; one it names keeps its direction."""
    if rate_bps is None:
        return impairments
    return {**impairments, **{hop: {**impairments.get(hop, {"direction": "both"}), "rate_bps": rate_bps}
                              for hop in ("wifi", "lte")}}


def block_settings(campaign: Campaign, run: Run) -> BlockSettings:
    hops = with_link_rate({k: v.model_dump() for k, v in campaign.impairments.items()}, run.link_rate_bps)
    return BlockSettings(run.setup, run.wifi_standard, campaign.lte_profile, campaign.pairs, hops, campaign.radios,
                         tuple(campaign.paths.radios), campaign.paths.mode, campaign.shared_medium)
