"""What one run is, apart from the campaign that planned it: its parameters (Run) and the
settings it runs under (Limits, the events on its clock, the path policy's and TCP's settings,
the impairments of the emulated rig's hops). The campaign model is built from these; the run,
the store and the backends read them without knowing about campaigns.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Path_ = Literal["wifi", "lte", "lte2"]  # a sender's radio (the address plan's sender sides): the path through it


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Impairment(StrictModel):
    """What a campaign puts on one hop of the emulated rig, in place of the radio profile's link
    values, in the direction(s) named: `up` is node -> AP / eNodeB, `down` the reverse. Delay and
    jitter are one-way, in each direction named (rig.rigs.emulated.impairments: which hops a path crosses)."""

    direction: Literal["up", "down", "both"] = "up"
    rate_bps: float | None = Field(default=None, gt=0)
    delay_ms: float | None = Field(default=None, ge=0)
    jitter_ms: float | None = Field(default=None, ge=0)
    loss_pct: float | None = Field(default=None, ge=0, le=100)
    # The hop's queue in packets (default ~1.5 x its bandwidth-delay product, at least 50): what
    # a slow link's RTT grows to under load.
    queue_packets: int | None = Field(default=None, ge=2, le=100_000)


class Event(StrictModel):
    """Something that happens to a path of the senders `at_s` seconds after a run's T0: it goes
    down or comes back up (`state`), its impairment changes (the Impairment fields), or its rate
    follows a Mahimahi trace from then on (`trace`). On the emulated rig it acts on the radio
    model's station link and, for `state`, on the node's interface; on the lab, on the node."""

    at_s: float = Field(ge=0)
    path: Path_
    pairs: list[int] | None = None  # pair indices (1..pairs); None: every pair
    state: Literal["up", "down"] | None = None
    direction: Literal["up", "down", "both"] = "both"
    rate_bps: float | None = Field(default=None, gt=0)
    delay_ms: float | None = Field(default=None, ge=0)
    jitter_ms: float | None = Field(default=None, ge=0)
    loss_pct: float | None = Field(default=None, ge=0, le=100)
    trace: str | None = None  # a file in radio-configs/traces (name with or without .mahi) or a path

    @model_validator(mode="after")
    def _one_kind(self) -> "Event":
        impairs = any(v is not None for v in (self.rate_bps, self.delay_ms, self.jitter_ms, self.loss_pct))
        kinds = [k for k, given in (("state", self.state is not None), ("an impairment", impairs),
                                    ("trace", self.trace is not None)) if given]
        if len(kinds) != 1:
            raise ValueError("give exactly one of state, an impairment (rate_bps, delay_ms, jitter_ms, loss_pct) "
                             f"or trace{'' if not kinds else ', not ' + ' and '.join(kinds)}")
        return self

    @property
    def kind(self) -> str:
        return "state" if self.state is not None else ("trace" if self.trace is not None else "impairment")


class LossAware(StrictModel):
    """The loss-aware policy: a path goes to backup while its loss over the last window is at or
    above its threshold, and back once it falls below."""

    threshold_pct: dict[Path_, float] = {"wifi": 0.1, "lte": 1.0}  # seed 003's thresholds
    window_s: float = Field(default=1.0, ge=0.1, le=60)
    # What a path's loss is: its subflows' retransmitted / sent bytes (what any sender knows; a
    # full queue's drops count too), or what its own link dropped at random (seed 003's
    # assumption that the device knows its wireless link's loss: rig_node.linkloss).
    measure: Literal["retransmissions", "link"] = "retransmissions"

    @field_validator("threshold_pct")
    @classmethod
    def _pct(cls, v: dict) -> dict:
        if any(not 0 < x <= 100 for x in v.values()):
            raise ValueError("each threshold must be in (0, 100] percent")
        return v


class Tcp(StrictModel):
    no_metrics_save: bool = True  # runs must not inherit cached ssthresh/RTT from earlier runs
    # A fixed initial ssthresh in packets (the rig's BPF congestion controls; docs/congestion-control.md).
    initial_ssthresh: int | None = Field(default=None, ge=2, le=1_000_000)
    # false: each receiver socket's buffer is the run's rcvbuf from the start and stays so
    # (net.ipv4.tcp_moderate_rcvbuf=0), as on seed 003's machines; docs/campaigns.md, "Receive buffers".
    rcvbuf_autotuning: bool = True


class Limits(StrictModel):
    # At most an hour: with the longest duration (4 h) and the sink's grace, a run's wait stays
    # within what a node agent waits for at most (nodes/agent/rig_node/ops.py MOST_WAIT_S, 6 h).
    run_timeout_s: float = Field(default=300, gt=0, le=3600)
    max_lag_p99_ms: float = Field(default=1.0, gt=0)  # emulator lag above this makes a run invalid
    # A run invalid only because the emulator lagged (a host hiccup, not the network under test)
    # is run again up to this many times; the lagged attempts are kept under attempts/.
    lag_retries: int = Field(default=2, ge=0, le=10)
    sample_hz: float = Field(default=20, ge=1, le=200)
    # The transfer's own per-interval series: the receivers' reads and the senders' subflows.
    series_hz: float = Field(default=10, ge=1, le=100)
    subflow_hz: float = Field(default=2, ge=0, le=20)  # senders' per-subflow cwnd/RTT/CC snapshots; 0 = off
    # A subflow cwnd above this is a corrupted window, not a measurement (docs/congestion-control.md)
    max_cwnd_packets: int = Field(default=100_000, gt=0)
    # Every connection has a subflow established on each path of its homing within
    # max(join_min_s, join_rtts x its RTT) of when its path manager could open it (plus the
    # timeouts of retransmitted SYNs), or the run is invalid, however short the transfer
    # (rig.run.joins): a real client opens its paths within a few round trips.
    join_min_s: float = Field(default=0.5, gt=0)
    join_rtts: float = Field(default=3.0, gt=0)
    # With a share > 0, a dual-homed run where a path carried less than that share of the bytes is
    # invalid too (short transfers over a slow path legitimately carry little, so the default
    # does not demand it).
    min_path_share: float = Field(default=0.0, ge=0, lt=0.5)


@dataclass(frozen=True)
class Run:
    run_id: str
    index: int  # position in the campaign's execution order
    block: str
    setup: str
    homing: str
    cc: str
    connections: int
    volume_bytes: int | None  # None: a time-based run
    rcvbuf_bytes: int
    wifi_standard: str
    repetition: int
    pairs: int
    duration_s: float | None = None  # time-based runs: how long each sender sends
    backup: str = "none"  # the path flagged MPTCP backup at the start
    policy: str = "none"  # the node-side path policy
    # Seed 003's grid (factors link_rate_bps, wifi_loss_pct, lte_loss_pct): both senders' links at
    # this rate (their wifi and lte impairments), and a path's uplink loss from T0 (an event the
    # run's timeline derives: rig.run.timeline.run_events). None: as the rest of the campaign sets it.
    link_rate_bps: float | None = None
    wifi_loss_pct: float | None = None
    lte_loss_pct: float | None = None

    def to_dict(self) -> dict:
        # asdict() deep-copies field by field; every field is a str or number, so this is the same
        # dict. The later fields are left out at their defaults: plans (and their digests, which
        # --resume compares) of campaigns that do not use them stay what they were.
        return {name: getattr(self, name) for name in _RUN_FIELDS
                if name not in _OPTIONAL or getattr(self, name) != _OPTIONAL[name]}

    @property
    def time_based(self) -> bool:
        return self.duration_s is not None

    @property
    def radio_key(self) -> tuple:
        """What the radios must be (re)built for: changing it restarts the emulator (the links'
        rate is part of the hops the radios are built with)."""
        return (self.setup, self.wifi_standard, self.link_rate_bps)


_RUN_FIELDS = tuple(f.name for f in fields(Run))
_OPTIONAL = {"duration_s": None, "backup": "none", "policy": "none", "link_rate_bps": None, "wifi_loss_pct": None,
             "lte_loss_pct": None}


