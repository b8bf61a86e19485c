"""Radio profiles: every shipped profile loads, and bad ones fail with file, field and problem."""

from __future__ import annotations

import shutil

import pytest

from rig.core.errors import InputError
from rig.model.profiles import (
    RADIO_CONFIGS,
    ht40_secondary_offset,
    lte_profile,
    lte_profiles,
    vht80_center_channel,
    wifi_profile,
    wifi_profiles,
)


def test_shipped_profiles_are_the_campaign_names():
    assert {"g", "a", "n24", "n5", "ac"} <= set(wifi_profiles())
    assert {"band7-5mhz", "band7-10mhz", "band7-20mhz"} <= set(lte_profiles())


@pytest.mark.parametrize(
    "name, standard, band, channel, width",
    [("g", "g", 2.4, 6, 20), ("a", "a", 5, 36, 20), ("n24", "n", 2.4, 6, 40),
     ("n5", "n", 5, 36, 40), ("ac", "ac", 5, 36, 80)],
)
def test_wifi_profile_fields(name, standard, band, channel, width):
    p = wifi_profile(name)
    assert (p.standard, p.band_ghz, p.channel, p.width_mhz) == (standard, band, channel, width)
    assert p.emulation.rate_bps <= p.emulation.medium_rate_bps


@pytest.mark.parametrize("name, prb, mbit", [("band7-5mhz", 25, 10), ("band7-10mhz", 50, 20), ("band7-20mhz", 100, 45)])
def test_lte_profile_fields(name, prb, mbit):
    p = lte_profile(name)
    assert (p.band, p.duplex, p.prb) == (7, "fdd", prb)
    assert p.plmn.mcc == "001" and p.plmn.mnc == "01"  # leading zeros kept
    assert p.ul_earfcn == p.dl_earfcn + 18000
    assert p.emulation.medium_rate_bps == mbit * 1e6


def test_emulation_rates_increase_with_the_standard():
    medium = [wifi_profile(n).emulation.medium_rate_bps for n in ("g", "a", "n24", "n5", "ac")]
    assert medium == sorted(medium)


def test_channel_helpers():
    assert [ht40_secondary_offset(c, 5) for c in (36, 40, 44, 149, 153)] == [1, -1, 1, 1, -1]
    assert [ht40_secondary_offset(c, 2.4) for c in (1, 6, 11)] == [1, 1, -1]
    assert [vht80_center_channel(c) for c in (36, 48, 52, 149, 165)] == [42, 42, 58, 155, None]


def test_unknown_profile_names_the_available_ones():
    with pytest.raises(InputError) as e:
        wifi_profile("n7")
    assert "n7" in str(e.value) and "n24, n5" in str(e.value)


@pytest.fixture()
def profile_root(tmp_path):
    shutil.copytree(RADIO_CONFIGS / "wifi", tmp_path / "wifi")
    shutil.copytree(RADIO_CONFIGS / "lte", tmp_path / "lte")
    return tmp_path


@pytest.mark.parametrize(
    "kind, name, old, new, field, problem",
    [
        ("wifi", "g", "channel: 6", "channel: 36", "(profile)", "not a 2.4 GHz channel"),
        ("wifi", "g", "width_mhz: 20", "width_mhz: 40", "(profile)", "802.11g has no 40 MHz"),
        ("wifi", "ac", "channel: 36", "channel: 165", "(profile)", "no 80 MHz block"),
        ("wifi", "g", "country: DE", "country: germany", "country", "pattern"),
        ("wifi", "g", "standard: g", "standard: x", "standard", "Input should be"),
        ("wifi", "g", "  loss_pct: 0", "  loss_pct: 0\n  lossy: 1", "emulation.lossy", "Extra inputs"),
        ("wifi", "g", "rate_bps: 18000000", "rate_bps: 99000000", "emulation", "exceeds medium_rate_bps"),
        ("wifi", "g", "name: g", "name: a", "name", "does not match the file name"),
        ("wifi", "g", "channel: 6", "channel: [6", "(yaml)", "flow sequence"),
        ("lte", "band7-5mhz", "prb: 25", "prb: 50", "(profile)", "5.0 MHz has 25 PRB"),
        ("lte", "band7-5mhz", "dl_earfcn: 3350", "dl_earfcn: 100", "(profile)", "outside band 7"),
        ("lte", "band7-5mhz", 'mcc: "001"', "mcc: 1", "plmn.mcc", "string"),
    ],
)
def test_bad_profile_names_file_field_problem(profile_root, kind, name, old, new, field, problem):
    path = profile_root / kind / f"{name}.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    load = wifi_profile if kind == "wifi" else lte_profile
    with pytest.raises(InputError) as e:
        load(name, root=profile_root)
    assert e.value.source == str(path)
    assert e.value.field == field
    assert problem in e.value.problem
    assert "\n" not in str(e.value)
