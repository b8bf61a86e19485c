"""The campaign file: a typed model, and loading that reports bad input as one line.

A campaign is a full-factorial matrix (setups x factors) repeated `repetitions` times. Its
`blocking` factors group runs so expensive reconfigurations (re-wiring receivers for another
setup, restarting radios for another WiFi standard) happen once per block, while the order
of runs inside a block is shuffled with the recorded `seed`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from rig.congestion.kernel import KNOWN_CCS, LINUX_CCS, RIG_CCS
from rig.model.traces import load_trace, trace_path
from rig.core.errors import InputError
from rig.model.inputfile import parse_model, read_input
from rig.model.spec import Event, Impairment, Limits, LossAware, StrictModel, Tcp
from rig.model.topology import DEFAULT_RADIOS, RADIOS, SETUPS, Setup, check_paths
from rig.core.units import parse_duration, parse_size

Homing = Literal["dual", "lte", "wifi"]
FACTOR_NAMES = ("setup", "homing", "cc", "connections", "volume", "duration", "rcvbuf", "wifi_standard", "backup",
                "policy", "link_rate_bps", "wifi_loss_pct", "lte_loss_pct")
# Factors that are not one unless given: absent, each run is as the rest of the campaign sets it.
GRID_FACTORS = ("link_rate_bps", "wifi_loss_pct", "lte_loss_pct")


def _cc_name(name: str) -> str:
    if not name.isidentifier() or len(name) > 15:
        raise ValueError(f"{name!r} is not a congestion control name")
    if name not in KNOWN_CCS:
        raise ValueError(f"{name!r} is no congestion control Linux or the rig has "
                         f"(Linux: {', '.join(LINUX_CCS)}; the rig's: {', '.join(RIG_CCS)})")
    return name


CcName = Annotated[str, AfterValidator(_cc_name)]


class Factors(StrictModel):
    """Each factor lists the levels to try; the matrix is their full product."""

    cc: list[CcName] = Field(default=["cubic"], min_length=1)
    connections: list[int] = Field(default=[1], min_length=1)
    volume: list[int] = Field(default=[15_000_000], min_length=1)
    rcvbuf: list[int] = Field(default=[1_000_000], min_length=1)
    wifi_standard: list[str] = Field(default=["n5"], min_length=1)
    homing: list[Homing] = Field(default=["dual"], min_length=1)
    # Time-based runs: each sender sends for this long. Given, runs are time-based and `volume`
    # must not be given.
    duration: list[float] = []
    # The path whose MPTCP endpoint carries the backup flag at a run's start (seed 003's standby mode).
    backup: list[Literal["none", "wifi", "lte", "lte2"]] = Field(default=["none"], min_length=1)
    # A node-side path policy: loss-aware sets a path to backup while its loss is above the
    # campaign's loss_aware threshold (seed 003's loss-aware switching).
    policy: list[Literal["none", "loss-aware"]] = Field(default=["none"], min_length=1)
    # Seed 003's grid: both senders' links (the wifi and lte impairments' rate_bps) at each rate, bit/s ...
    link_rate_bps: list[float] = []
    # ... and one path's loss, % of what the senders send on it from T0 (as an event at 0 s, direction up)
    wifi_loss_pct: list[float] = []
    lte_loss_pct: list[float] = []

    @field_validator("volume", "rcvbuf", mode="before")
    @classmethod
    def _sizes(cls, v: object) -> object:
        if isinstance(v, list):
            return [parse_size(x) for x in v]
        return v

    @field_validator("duration", mode="before")
    @classmethod
    def _durations(cls, v: object) -> object:
        if isinstance(v, list):
            return [parse_duration(x) for x in v]
        return v

    @field_validator("duration")
    @classmethod
    def _duration_range(cls, v: list[float]) -> list[float]:
        if any(not 0.5 <= d <= 4 * 3600 for d in v):  # a node agent waits 6 h at most (rig.model.spec.Limits)
            raise ValueError("each level must be 0.5 s .. 4 h")
        return v

    @field_validator("*")
    @classmethod
    def _levels_unique(cls, v: list) -> list:
        repeated = next((x for i, x in enumerate(v) if x in v[:i]), None)
        if repeated is not None:
            raise ValueError(f"lists the level {repeated!r} twice")
        return v

    @field_validator("link_rate_bps")
    @classmethod
    def _rates(cls, v: list[float]) -> list[float]:
        if any(not 0 < x <= 100e9 for x in v):
            raise ValueError("each level must be a rate in bit/s above 0 (e.g. 10.0e6), at most 100e9")
        return v

    @field_validator("wifi_loss_pct", "lte_loss_pct")
    @classmethod
    def _losses(cls, v: list[float]) -> list[float]:
        if any(not 0 <= x <= 100 for x in v):
            raise ValueError("each level must be a loss of 0..100 %")
        return v

    @model_validator(mode="after")
    def _one_lossy_path(self) -> "Factors":
        if self.wifi_loss_pct and self.lte_loss_pct:
            raise ValueError("give wifi_loss_pct or lte_loss_pct, not both: a campaign varies one path's loss "
                             "(seed 003's grid); a second path's loss is an event or an impairment")
        return self

    @model_validator(mode="after")
    def _volume_or_duration(self) -> "Factors":
        if self.duration and "volume" in self.model_fields_set:
            raise ValueError("give volume (runs that send a data volume) or duration (runs that send for a time), "
                             "not both")
        return self

    @field_validator("connections")
    @classmethod
    def _connections(cls, v: list[int]) -> list[int]:
        if any(c < 1 or c > 128 for c in v):
            raise ValueError("each level must be 1..128")
        return v

    @field_validator("volume", "rcvbuf")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if any(x <= 0 for x in v):
            raise ValueError("each level must be a positive size")
        return v




class Paths(StrictModel):
    """The senders' radios (the address plan's sender sides, in this order), how a connection's
    subflows are made: paired (the i-th radio to the receiver's i-th side) or fullmesh (every
    radio in use to every side), and which path manager makes them."""

    radios: list[str] = Field(default=list(DEFAULT_RADIOS))
    mode: Literal["paired", "fullmesh"] = "paired"
    # What opens a connection's subflows and reopens a path that comes back (docs/campaigns.md,
    # "Path managers"): upstream's in-kernel path manager, or mptcpd with the rig's plugin on the
    # senders (nodes/mptcpd). The rig itself never announces or renews.
    manager: Literal["kernel", "userspace"] = "kernel"

    @field_validator("radios")
    @classmethod
    def _radios(cls, v: list[str]) -> list[str]:
        check_paths(tuple(v))  # with the mode: check_radios
        return v


class Campaign(StrictModel):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,47}$")
    description: str = ""
    setups: list[Setup] = Field(default=list(SETUPS), min_length=1)
    pairs: int = Field(default=5, ge=1, le=9)  # host ids 10+i (senders) and 20+i (receivers)
    repetitions: int = Field(default=1, ge=1, le=1000)
    seed: int = Field(default=1, ge=0)
    blocking: list[str] = Field(default=["setup", "wifi_standard"])
    factors: Factors = Factors()
    lte_profile: str = "band7-10mhz"
    # models: the rig's per-frame 802.11 DCF media and TTI-scheduled LTE cell (docs/emulator.md);
    # links: per-path pipes + one FIFO medium per radio network (controlled links, traces);
    # simulated: ns-3 LTE cell (LENA) and 802.11 BSSs (docs/emulator.md for what runs in real time)
    radios: Literal["links", "simulated", "models"] = "models"
    # links radios: each radio network's stations share one FIFO medium at the profile's
    # medium_rate_bps (a BSS's or cell's capacity, both directions); false: none, each path is its
    # own pair of pipes, as shaped wired links are.
    shared_medium: bool = True
    # The hop each impairment acts on: the senders' WiFi (wifi) or LTE (lte) access link, or the
    # receivers' side A (receiver_a) or side B (receiver_b) access link.
    impairments: dict[Literal["wifi", "lte", "lte2", "receiver_a", "receiver_b"], Impairment] = {}
    links: None = None  # the old name: refused with a pointer to `impairments`
    events: list[Event] = []
    loss_aware: LossAware = LossAware()
    paths: Paths = Paths()
    tcp: Tcp = Tcp()
    limits: Limits = Limits()

    @field_validator("links", mode="before")
    @classmethod
    def _links_renamed(cls, v: object) -> None:
        if v is not None:
            raise ValueError("replaced by 'impairments', whose entries name the hop they act on (wifi, lte: the "
                             "senders' access links; receiver_a, receiver_b) and the direction (docs/campaigns.md)")
        return None

    @field_validator("setups")
    @classmethod
    def _unique_setups(cls, v: list[Setup]) -> list[Setup]:
        if len(set(v)) != len(v):
            raise ValueError("setups are listed twice")
        return v

    @field_validator("blocking")
    @classmethod
    def _blocking(cls, v: list[str]) -> list[str]:
        for name in v:
            if name not in FACTOR_NAMES:
                raise ValueError(f"{name!r} is not a factor (one of {', '.join(FACTOR_NAMES)})")
        return v

    @field_validator("events")
    @classmethod
    def _events_in_order(cls, v: list[Event]) -> list[Event]:
        if any(b.at_s < a.at_s for a, b in zip(v, v[1:])):
            raise ValueError("list events in the order of their at_s")
        return v


def parse_campaign(text: str, source: str) -> Campaign:
    campaign = parse_model(Campaign, text, source, "campaign")
    check_events(campaign, source)
    check_radios(campaign, source)
    if not campaign.shared_medium and campaign.radios != "links":
        raise InputError(source, "shared_medium", f"only the links radios have one (radios: {campaign.radios} "
                         "simulates the radio itself)")
    if campaign.loss_aware.measure == "link" and campaign.radios != "links":
        raise InputError(source, "loss_aware.measure", f"link reads the links radios' per-hop loss counters, which "
                         f"radios: {campaign.radios} does not log")
    return campaign


def differing_setting(a: Campaign, b: Campaign) -> str | None:
    """The first setting (a top-level field) in which two campaigns differ, None if none does:
    runs of the two cannot share a directory. Only `description` may differ."""
    da, db = a.model_dump(exclude={"description"}), b.model_dump(exclude={"description"})
    return next((k for k in da if da[k] != db.get(k)), None)


def check_radios(campaign: Campaign, source: str) -> None:
    """The radios and the mode go together (check_paths), and every path a campaign names is a
    radio its senders have: the single homings, the backup path, the events' and impairments' paths."""
    radios = campaign.paths.radios
    try:
        check_paths(tuple(radios), campaign.paths.mode)
    except ValueError as e:
        raise InputError(source, "paths.radios", str(e)) from None
    for i, homing in enumerate(campaign.factors.homing):
        if homing != "dual" and homing not in radios:
            raise InputError(source, f"factors.homing[{i}]", f"{homing}: the senders have no {homing} radio "
                             f"(paths.radios: {', '.join(radios)})")
    for i, backup in enumerate(campaign.factors.backup):
        if backup != "none" and backup not in radios:
            raise InputError(source, f"factors.backup[{i}]", f"{backup}: not one of the senders' radios "
                             f"(paths.radios: {', '.join(radios)})")
    for i, policy in enumerate(campaign.factors.policy):
        if policy == "loss-aware" and campaign.paths.manager == "userspace":
            # its switches change the endpoints' backup flag, which only the kernel's path manager applies
            raise InputError(source, f"factors.policy[{i}]", "loss-aware switches paths through the in-kernel "
                             "path manager's endpoints: with paths.manager userspace use policy none")
    for i, event in enumerate(campaign.events):
        if event.path not in radios:
            raise InputError(source, f"events[{i}].path", f"{event.path}: not one of the senders' radios "
                             f"(paths.radios: {', '.join(radios)})")
    for hop in campaign.impairments:
        if hop in RADIOS and hop not in radios:
            raise InputError(source, f"impairments.{hop}", f"not one of the senders' radios "
                             f"(paths.radios: {', '.join(radios)})")


def check_events(campaign: Campaign, source: str) -> None:
    """What the models cannot check alone: pair indices in range, traces that parse, a fixed
    initial ssthresh only with congestion controls that honour it, a path's loss from 0 s given
    once (an event or a loss factor)."""

    if campaign.tcp.initial_ssthresh is not None:
        other = [cc for cc in campaign.factors.cc if cc not in RIG_CCS]
        if other:
            raise InputError(source, "tcp.initial_ssthresh", f"{other[0]} does not honour it (the rig's "
                             f"{', '.join(RIG_CCS)} do: docs/congestion-control.md)")

    for i, event in enumerate(campaign.events):
        factor = f"{event.path}_loss_pct"
        if event.at_s == 0 and event.loss_pct is not None and getattr(campaign.factors, factor):
            raise InputError(source, f"events[{i}].loss_pct", f"the {event.path} path's loss from 0 s is "
                             f"factors.{factor} already: give one of them")
        bad = [n for n in event.pairs or [] if not 1 <= n <= campaign.pairs]
        if bad:
            raise InputError(source, f"events[{i}].pairs", f"pair {bad[0]} does not exist (pairs: 1..{campaign.pairs})")
        if event.trace is not None:
            try:
                load_trace(trace_path(event.trace))
            except InputError as e:
                raise InputError(source, f"events[{i}].trace", str(e)) from None


def load_campaign(path: Path) -> Campaign:
    return parse_campaign(read_input(path), str(path))
