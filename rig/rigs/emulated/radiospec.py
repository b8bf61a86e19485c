"""What a radio network is, and the emulator's config for it (the process: rig/rigs/emulated/radio.py).

A radio network is a WiFi BSS behind its AP, the LTE cell behind the EPC (ns-3's, or the rig's
TTI model), or a star of plain links: one gateway TAP and N station TAPs, each station with a
pipe up and a pipe down. emulator_config() checks a spec and renders the JSON the emulator reads.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rig.core.errors import RigError

ETHERNET_FRAME_BYTES = 1514
MIN_QUEUE_PACKETS = 50


@dataclass(frozen=True)
class Pipe:
    """One direction of a station's link. queue_packets None: ~1.5 x BDP, at least 50."""

    rate_bps: float
    delay_s: float
    jitter_s: float = 0.0
    loss: float = 0.0
    queue_packets: int | None = None


@dataclass(frozen=True)
class Station:
    tap: str  # <= 15 characters
    up: Pipe  # station -> gateway (kinds lte/wifi: impairment on top of the radio; Pipe(0, 0): none)
    down: Pipe  # gateway -> station
    address: str | None = None  # kind lte: the node's address on this interface, "a.b.c.d/n" (the UE's IP)
    # Where the emulator opens the TAP: the network namespace (as `ip netns` names it) and the
    # interface name there; None: in the emulator's own namespace, named `tap`. `tap` names the
    # station either way (control, stats).
    netns: str | None = None
    ifname: str | None = None


@dataclass(frozen=True)
class WifiBss:
    """kind "wifi": the BSS's PHY, named as in radio-configs/wifi/*.yaml."""

    standard: str  # g | a | n | ac
    band_ghz: float  # 2.4 | 5
    width_mhz: int  # 20 | 40 | 80
    channel: int | None = None  # primary 20 MHz channel; None: 6 (2.4 GHz) / 36 (5 GHz)
    distance_m: float = 5.0  # stations on a circle of this radius around the AP


@dataclass(frozen=True)
class LteCell:
    """kind "lte": the cell, named as in radio-configs/lte/*.yaml (band 7 FDD by default)."""

    prb: int  # 25 | 50 | 75 | 100
    sgi_address: str  # the PGW's address on the gateway TAP, "a.b.c.d/n"
    sgi_gateway: str  # the EPC namespace's address on that link: the PGW's default route
    dl_earfcn: int = 3350
    ul_earfcn: int | None = None  # None: dl_earfcn + 18000 (FDD)
    # UEs on a circle of this radius around the eNodeB. None: 2000 m x sqrt(25 / prb), which
    # gives one UE using all PRBs at 23 dBm an uplink SINR ~19 dB, MCS 20, at any bandwidth:
    # the srsRAN single-UE reference rates (docs/emulator.md).
    distance_m: float | None = None
    ue_tx_power_dbm: float = 23.0  # fixed (no uplink power control)
    cqi_period_ms: int = 40  # downlink CQI reports, as the profile's rr.conf period (ns-3's own: every 1 ms)


@dataclass(frozen=True)
class LteTtiUe:
    """kind "lte_tti": one UE's radio where it differs from the cell's (None: the cell's)."""

    ul_sinr_db: float | None = None
    dl_sinr_db: float | None = None
    ul_sinr_trace: tuple[tuple[float, float], ...] = ()  # (seconds since start, dB) steps
    dl_sinr_trace: tuple[tuple[float, float], ...] = ()


@dataclass(frozen=True)
class LteTtiCell:
    """kind "lte_tti": the TTI-scheduled LTE cell (docs/emulator.md). Defaults: calibrated to
    kind lte (scripts/calibrate_lte.py)."""

    prb: int  # as radio-configs/lte/*.yaml
    scheduler: str = "pf"  # downlink: rr | pf
    ul_scheduler: str = "rr"
    pf_whole_band: bool = True  # pf: the TTI's best UE takes every free PRB (ns-3's PF); False: what it needs
    ul_sinr_db: float = 18.8  # MCS 20 (kind lte's single-UE uplink)
    dl_sinr_db: float = 25.0  # MCS 28
    target_bler: float = 0.0  # first transmissions that fail (HARQ retransmits 8 ms later)
    max_harq_tx: int = 4
    sr_period_ms: int = 1  # scheduling request opportunities (srsRAN's rr.conf: sr_cnfg period)
    sr_to_bsr_ms: int = 7  # SR sent -> the eNodeB knows the buffer
    rlc_buffer_bytes: int = 256 * 1024
    processing_delay_s: float = 0.0
    ues: dict[str, LteTtiUe] = field(default_factory=dict)  # by station TAP


def lte_tti_config(cell: LteTtiCell) -> dict:
    """The emulator's "lte_tti" config member (per-UE entries only with what they set)."""
    config = {k: v for k, v in asdict(cell).items() if k != "ues"}
    config["ues"] = {tap: {k: v for k, v in asdict(ue).items() if v not in (None, ())} for tap, ue in cell.ues.items()}
    return config


@dataclass(frozen=True)
class RadioNetworkSpec:
    name: str
    gateway_tap: str
    stations: tuple[Station, ...]
    kind: str = "links"
    medium_rate_bps: float = 0.0  # 0: no shared medium; else one FIFO server for all frames
    seed: int = 1
    medium_queue_packets: int | None = None  # None: ~1.5 x BDP of the medium, at least 50
    lag_interval_s: float = 0.001
    # SCHED_FIFO priority of the emulator's threads (0: normal scheduling). On a busy host it
    # cuts p99 lag from several ms to well under 1 ms; see docs/emulator.md.
    realtime_priority: int = 10
    # Where the gateway's TAP is opened (as Station.netns, Station.ifname).
    gateway_netns: str | None = None
    gateway_ifname: str | None = None
    # The emulator sleeps until the next event is at most this late, so nearby events share a
    # wake-up (fewer context switches; the lag log counts the lateness). docs/emulator.md.
    wake_slack_s: float = 50e-6
    wifi: WifiBss | None = None  # required for kinds "wifi" and "dcf"
    lte: LteCell | None = None  # required for kind "lte"
    lte_tti: LteTtiCell | None = None  # required for kind "lte_tti"


def _queue_for(rate_bps: float, rtt_s: float) -> int:
    bdp_packets = rate_bps * rtt_s / 8 / ETHERNET_FRAME_BYTES
    return max(MIN_QUEUE_PACKETS, math.ceil(1.5 * bdp_packets))


def _pipe_config(pipe: Pipe, rtt_s: float) -> dict:
    config = asdict(pipe)
    if pipe.queue_packets is None:
        config["queue_packets"] = _queue_for(pipe.rate_bps, rtt_s)
    return config


def _wifi_channel(bss: WifiBss) -> dict:
    """ns-3 numbers a 40/80 MHz channel by its centre; profiles give the primary 20 MHz one."""
    primary = bss.channel or (6 if bss.band_ghz < 3 else 36)
    if bss.width_mhz == 20:
        return {"channel_number": primary, "primary20": 0}
    if bss.band_ghz < 3:  # HT40+: the secondary channel is above the primary
        return {"channel_number": primary + 2, "primary20": 0}
    span = bss.width_mhz // 5  # channel numbers covered
    start = 36 + (primary - 36) // span * span
    return {"channel_number": start + span // 2 - 2, "primary20": (primary - start) // 4}


def _radio_config(spec: RadioNetworkSpec) -> dict:
    if spec.kind in ("wifi", "dcf"):  # dcf: the same BSS as a per-frame DCF medium (docs/emulator.md)
        if spec.wifi is None:
            raise RigError(f"radio network {spec.name}: kind {spec.kind} needs a WifiBss (field wifi)")
        return {"wifi": {**asdict(spec.wifi), **_wifi_channel(spec.wifi)}}
    if spec.kind == "lte":
        if spec.lte is None:
            raise RigError(f"radio network {spec.name}: kind lte needs an LteCell (field lte)")
        missing = [s.tap for s in spec.stations if not s.address]
        if missing:
            raise RigError(f"radio network {spec.name}: kind lte needs an address for stations {missing}")
        cell = asdict(spec.lte)
        cell["ul_earfcn"] = spec.lte.ul_earfcn or spec.lte.dl_earfcn + 18000
        if spec.lte.distance_m is None:
            cell["distance_m"] = 2000.0 * math.sqrt(25 / spec.lte.prb)
        return {"lte": cell}
    if spec.kind == "lte_tti":
        if spec.lte_tti is None:
            raise RigError(f"radio network {spec.name}: kind lte_tti needs an LteTtiCell (field lte_tti)")
        return {"lte_tti": lte_tti_config(spec.lte_tti)}
    return {}


def _check_spec(spec: RadioNetworkSpec) -> None:
    taps = [spec.gateway_tap, *(s.tap for s in spec.stations)]
    names = [spec.gateway_ifname, *(s.ifname for s in spec.stations)]
    for tap in taps + [n for n in names if n is not None]:
        if not 1 <= len(tap) <= 15:
            raise RigError(f"radio network {spec.name}: TAP name {tap!r} must be 1-15 characters")
    if len(set(taps)) != len(taps):
        raise RigError(f"radio network {spec.name}: TAP names repeat: {taps}")
    opened = [(ns, name or tap) for ns, name, tap in
              [(spec.gateway_netns, spec.gateway_ifname, spec.gateway_tap), *((s.netns, s.ifname, s.tap) for s in spec.stations)]]
    if len(set(opened)) != len(opened):
        raise RigError(f"radio network {spec.name}: two TAPs with one name in one namespace: {opened}")
    for s in spec.stations:
        for direction, pipe in (("up", s.up), ("down", s.down)):
            if pipe.rate_bps < 0 or pipe.delay_s < 0 or pipe.jitter_s < 0 or not 0 <= pipe.loss <= 1:
                raise RigError(f"radio network {spec.name}: station {s.tap} {direction}: bad pipe {pipe}")


def _opened_in(key: str, netns: str | None, ifname: str | None) -> dict:
    """Where the emulator opens a TAP ("<key>netns": the namespace's path, "<key>ifname");
    nothing for its own namespace and the TAP's name."""
    return {**({f"{key}netns": f"/run/netns/{netns}"} if netns else {}), **({f"{key}ifname": ifname} if ifname else {})}


def emulator_config(spec: RadioNetworkSpec, workdir: Path) -> dict:
    """The JSON config the emulator reads: the spec with every default resolved."""
    _check_spec(spec)
    rtts = [s.up.delay_s + s.down.delay_s + s.up.jitter_s + s.down.jitter_s for s in spec.stations]
    medium_queue = spec.medium_queue_packets or _queue_for(spec.medium_rate_bps, max(rtts, default=0.0))
    return {
        "name": spec.name,
        "kind": spec.kind,
        "seed": spec.seed,
        "gateway_tap": spec.gateway_tap,
        **_opened_in("gateway_", spec.gateway_netns, spec.gateway_ifname),
        "lag_log": str(workdir / f"{spec.name}.lag.jsonl"),
        "stats_log": str(workdir / f"{spec.name}.stats.jsonl"),
        "control_fifo": str(workdir / f"{spec.name}.control"),
        "events_log": str(workdir / f"{spec.name}.events.jsonl"),
        "lag_interval_s": spec.lag_interval_s,
        "realtime_priority": spec.realtime_priority,
        "wake_slack_s": spec.wake_slack_s,
        "medium": {"rate_bps": spec.medium_rate_bps, "queue_packets": medium_queue},
        "stations": [
            {"tap": s.tap, "address": s.address, "up": _pipe_config(s.up, rtt), "down": _pipe_config(s.down, rtt),
             **_opened_in("", s.netns, s.ifname)}
            for s, rtt in zip(spec.stations, rtts)
        ],
        **_radio_config(spec),
    }
