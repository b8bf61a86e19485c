"""Radio profiles: one YAML file per WiFi standard / LTE cell in radio-configs/.

The same file renders the real radio's configuration (hostapd.conf, srsRAN enb/rr/sib.conf,
through the Ansible roles) and parameterises the emulated radio (ns-3 and the per-path
`emulation` model), so hardware and emulation are configured from one source.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rig.core.errors import InputError
from rig.core.repo import RADIO_CONFIGS



class _Strict(BaseModel):
    # A misspelt key in a profile is an error, not a silently ignored line.
    model_config = ConfigDict(extra="forbid", frozen=True)


class LinkEmulation(_Strict):
    """The emulated rig's per-path model of this radio (until ns-3 radios replace it).

    delay_ms and jitter_ms are ONE-WAY values for the radio hop (the emulator adds them to
    each direction, so the hop's RTT contribution is twice delay_ms).
    """

    rate_bps: float = Field(gt=0, description="one station's / UE's uplink rate")
    medium_rate_bps: float = Field(gt=0, description="capacity shared by all stations of the BSS / cell")
    delay_ms: float = Field(ge=0)
    jitter_ms: float = Field(default=0, ge=0)
    loss_pct: float = Field(default=0, ge=0, le=100)

    @model_validator(mode="after")
    def _station_fits_medium(self) -> LinkEmulation:
        if self.rate_bps > self.medium_rate_bps:
            raise ValueError("rate_bps exceeds medium_rate_bps (one station cannot beat the shared medium)")
        return self


# Channels each (standard, band) may use and the channel groups that form 40 / 80 MHz blocks.
_CHANNELS_24 = range(1, 14)
_CHANNELS_5 = (36, 40, 44, 48, 52, 56, 60, 64, 100, 104, 108, 112, 116, 120, 124, 128, 132, 136,
               140, 144, 149, 153, 157, 161, 165)
_WIDTHS = {"g": (20,), "a": (20,), "n": (20, 40), "ac": (20, 40, 80)}
_BANDS = {"g": (2.4,), "a": (5,), "n": (2.4, 5), "ac": (5,)}


def vht80_center_channel(channel: int) -> int | None:
    """Centre channel of the 80 MHz block holding `channel`, None if it has none."""
    for first in (36, 52, 100, 116, 132, 149):
        if first <= channel <= first + 12:
            return first + 6
    return None


def ht40_secondary_offset(channel: int, band_ghz: float) -> int:
    """+1 if the 40 MHz secondary channel is above the primary, -1 if below."""
    if band_ghz == 2.4:
        return 1 if channel <= 7 else -1
    # 5 GHz 40 MHz blocks pair 36+40, 44+48, ..., 149+153: the lower one of each pair is "+".
    return 1 if (channel // 4) % 2 == 1 else -1


class WifiProfile(_Strict):
    name: str
    standard: Literal["g", "a", "n", "ac"]
    band_ghz: Literal[2.4, 5]
    channel: int
    width_mhz: Literal[20, 40, 80]
    country: str = Field(pattern=r"^[A-Z]{2}$")
    emulation: LinkEmulation

    @model_validator(mode="after")
    def _consistent(self) -> WifiProfile:
        if self.band_ghz not in _BANDS[self.standard]:
            raise ValueError(f"802.11{self.standard} does not run at {self.band_ghz} GHz")
        if self.width_mhz not in _WIDTHS[self.standard]:
            raise ValueError(f"802.11{self.standard} has no {self.width_mhz} MHz channels")
        channels = _CHANNELS_24 if self.band_ghz == 2.4 else _CHANNELS_5
        if self.channel not in channels:
            raise ValueError(f"channel {self.channel} is not a {self.band_ghz} GHz channel")
        if self.width_mhz == 40 and self.band_ghz == 5 and self.channel == 165:
            raise ValueError("channel 165 has no 40 MHz partner")
        if self.width_mhz == 80 and vht80_center_channel(self.channel) is None:
            raise ValueError(f"channel {self.channel} is in no 80 MHz block")
        return self

    @property
    def hw_mode(self) -> str:
        """hostapd's hw_mode: g for 2.4 GHz, a for 5 GHz."""
        return "g" if self.band_ghz == 2.4 else "a"


class Plmn(_Strict):
    # Strings, not ints: "001" and "01" keep their leading zeros and the MNC length matters.
    mcc: str = Field(pattern=r"^\d{3}$")
    mnc: str = Field(pattern=r"^\d{2,3}$")


# E-UTRA bandwidth (MHz) -> resource blocks (3GPP TS 36.101 table 5.6-1).
_PRB = {1.4: 6, 3: 15, 5: 25, 10: 50, 15: 75, 20: 100}
# FDD band -> (first DL EARFCN, last DL EARFCN, UL EARFCN offset) (TS 36.101 table 5.7.3-1).
_FDD_BANDS = {1: (0, 599, 18000), 3: (1200, 1949, 18000), 7: (2750, 3449, 18000), 20: (6150, 6449, 18000)}


class LteProfile(_Strict):
    name: str
    band: int
    duplex: Literal["fdd"]
    bandwidth_mhz: float
    prb: int
    dl_earfcn: int
    plmn: Plmn
    tac: int = Field(ge=1, le=0xFFFE)
    # Periodic wideband CQI report period (TS 36.213 7.2.2): srsRAN's rr.conf cqi_report_cnfg
    # and the simulated cell's UEs use it alike.
    cqi_period_ms: Literal[2, 5, 10, 20, 40, 80, 160] = 40
    emulation: LinkEmulation

    @model_validator(mode="after")
    def _consistent(self) -> LteProfile:
        if self.bandwidth_mhz not in _PRB:
            raise ValueError(f"{self.bandwidth_mhz} MHz is not an LTE bandwidth ({sorted(_PRB)})")
        if self.prb != _PRB[self.bandwidth_mhz]:
            raise ValueError(f"{self.bandwidth_mhz} MHz has {_PRB[self.bandwidth_mhz]} PRB, not {self.prb}")
        if self.band not in _FDD_BANDS:
            raise ValueError(f"band {self.band} is not a known FDD band ({sorted(_FDD_BANDS)})")
        first, last, _ = _FDD_BANDS[self.band]
        if not first <= self.dl_earfcn <= last:
            raise ValueError(f"dl_earfcn {self.dl_earfcn} is outside band {self.band} ({first}-{last})")
        return self

    @property
    def ul_earfcn(self) -> int:
        return self.dl_earfcn + _FDD_BANDS[self.band][2]


def _names(kind: str, root: Path | None) -> list[str]:
    return sorted(p.stem for p in ((root or RADIO_CONFIGS) / kind).glob("*.yaml"))


# Parsed profiles by (path, mtime, size): a plan of 100,000 runs asks for the same few profiles
# 200,000 times, and YAML + validation costs ~1 ms each. An edited file is parsed again.
_CACHE: dict[tuple, BaseModel] = {}


def _load(kind: str, name: str, model: type[BaseModel], root: Path | None):
    path = (root or RADIO_CONFIGS) / kind / f"{name}.yaml"
    try:
        st = path.stat()
    except OSError:
        st = None
    if st is None or not stat.S_ISREG(st.st_mode):
        available = ", ".join(_names(kind, root)) or "none"
        raise InputError(str(path), f"{kind} profile", f"unknown profile {name!r} (available: {available})")
    key = (str(path), model, st.st_mtime_ns, st.st_size, st.st_ino)
    if key not in _CACHE:
        _CACHE[key] = _parse(path, name, model)
    return _CACHE[key]


def _parse(path: Path, name: str, model: type[BaseModel]):
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise InputError(str(path), "(yaml)", " ".join(str(e).split())) from None
    if not isinstance(data, dict):
        raise InputError(str(path), "(top level)", "expected a mapping of profile fields")
    try:
        profile = model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(part) for part in err["loc"]) or "(profile)"
        raise InputError(str(path), field, err["msg"].removeprefix("Value error, ")) from None
    if profile.name != name:
        raise InputError(str(path), "name", f"{profile.name!r} does not match the file name {name!r}")
    return profile


def wifi_profile(name: str, root: Path | None = None) -> WifiProfile:
    """The WiFi profile radio-configs/wifi/<name>.yaml (name = a campaign's wifi_standard)."""
    return _load("wifi", name, WifiProfile, root)


def lte_profile(name: str, root: Path | None = None) -> LteProfile:
    """The LTE cell profile radio-configs/lte/<name>.yaml."""
    return _load("lte", name, LteProfile, root)


def wifi_profiles(root: Path | None = None) -> list[str]:
    return _names("wifi", root)


def lte_profiles(root: Path | None = None) -> list[str]:
    return _names("lte", root)
