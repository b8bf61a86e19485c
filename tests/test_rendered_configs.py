"""Configs the roles render (ansible/render.yml in check/diff mode, nothing touched):
golden files, the real hostapd parses every hostapd.conf, srsRAN / OAI / Open5GS configs parse
and agree with each other and with the radio profiles.

Regenerate the golden files after an intended change: RIG_UPDATE_GOLDEN=1 pytest tests/test_rendered_configs.py
"""

from __future__ import annotations

import configparser
import ipaddress
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import libconf
import pytest
import yaml

from rig.profiles import lte_profile, lte_profiles, wifi_profile, wifi_profiles
from test_ansible import ANSIBLE, BIN, ansible_env  # pytest puts tests/ on sys.path

GOLDEN = Path(__file__).resolve().parent / "golden" / "rendered"
HOSTAPD = shutil.which("hostapd") or "/usr/sbin/hostapd"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("render")
    out = tmp / "out"
    env = {**ansible_env(tmp), "ANSIBLE_CALLBACKS_ENABLED": "rig_render", "RIG_RENDER_DIR": str(out)}
    run = subprocess.run(
        [BIN / "ansible-playbook", "render.yml", "--check", "--diff", "-c", "local",
         "-e", "rig_hide_secrets=false", "-e", f"ansible_python_interpreter={sys.executable}"],
        cwd=ANSIBLE, env=env, capture_output=True, text=True, timeout=900,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    return out


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_rendered_configs_match_golden_files(rendered):
    got = _files(rendered)
    if os.environ.get("RIG_UPDATE_GOLDEN"):
        shutil.rmtree(GOLDEN, ignore_errors=True)
        shutil.copytree(rendered, GOLDEN)
    want = _files(GOLDEN)
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name] == want[name], f"{name} differs from its golden file"


# --- hostapd -------------------------------------------------------------------------------

def _hostapd_output(conf: Path) -> str:
    # hostapd reads and checks the whole file before it touches the driver; without a radio it
    # then fails at driver / interface set-up. Configuration errors are reported as "Line N: ...".
    run = subprocess.run([HOSTAPD, str(conf)], capture_output=True, text=True, timeout=30)
    assert run.returncode != 0  # it can never start here: no radio
    return run.stdout + run.stderr


def _assert_config_accepted(output: str):
    assert not re.search(r"^Line \d+:", output, re.M), output
    assert "errors found in configuration file" not in output, output
    # It got past parsing to the radio: nl80211 missing (no cfg80211) or no such interface.
    assert re.search(r"nl80211|Could not read interface|No such device", output), output


def _hostapd_conf(rendered: Path, profile: str, tmp_path: Path) -> Path:
    text = (rendered / "ap2" / "rig-render" / "hostapd" / profile / "wlan0.conf").read_text()
    # Our own scratch control directory and an interface name nothing else uses.
    text = text.replace("ctrl_interface=/run/hostapd", f"ctrl_interface={tmp_path}/ctrl")
    text = text.replace("interface=wlan0", "interface=ansnoradio0")
    conf = tmp_path / f"{profile}.conf"
    conf.write_text(text)
    return conf


@pytest.mark.parametrize("profile", wifi_profiles())
def test_hostapd_accepts_every_rendered_config(rendered, profile, tmp_path):
    _assert_config_accepted(_hostapd_output(_hostapd_conf(rendered, profile, tmp_path)))


def test_hostapd_check_catches_a_broken_line(rendered, tmp_path):
    conf = _hostapd_conf(rendered, "n5", tmp_path)
    conf.write_text(conf.read_text().replace("channel=36", "channel=36\nht_capab_typo=[HT40+]"))
    output = _hostapd_output(conf)
    assert re.search(r"^Line \d+: unknown configuration item 'ht_capab_typo'", output, re.M), output
    with pytest.raises(AssertionError):
        _assert_config_accepted(output)


@pytest.mark.parametrize("name", wifi_profiles())
def test_hostapd_config_follows_the_profile(rendered, name):
    p = wifi_profile(name)
    conf = dict(line.split("=", 1) for line in
                (rendered / "ap2" / "rig-render" / "hostapd" / name / "wlan0.conf").read_text().splitlines()
                if line and not line.startswith("#"))
    assert conf["channel"] == str(p.channel) and conf["country_code"] == p.country
    assert conf["hw_mode"] == p.hw_mode
    assert conf["wpa"] == "2" and conf["rsn_pairwise"] == "CCMP" and conf["ssid"] == "rig-ap2"
    assert ("ieee80211n" in conf) == (p.standard in ("n", "ac"))
    assert ("[HT40" in conf.get("ht_capab", "")) == (p.width_mhz >= 40)
    if p.width_mhz == 80:
        assert conf["vht_oper_chwidth"] == "1" and conf["vht_oper_centr_freq_seg0_idx"] == "42"


# --- LTE: srsRAN, OAI, Open5GS ------------------------------------------------------------

def _srsran(rendered: Path, profile: str) -> dict:
    d = rendered / "enb1" / "rig-render" / "srsran" / profile
    enb = configparser.ConfigParser()
    enb.read_string((d / "enb.conf").read_text())
    return {"enb": enb, **{n: libconf.loads((d / f"{n}.conf").read_text()) for n in ("rr", "sib", "rb")}}


def _open5gs(rendered: Path) -> dict:
    d = rendered / "epc1" / "rig-render" / "open5gs"
    # BaseLoader: every scalar stays the string Open5GS reads ("001" is not 1).
    return {p.stem: yaml.load(p.read_text(), Loader=yaml.BaseLoader) for p in d.glob("*.yaml")}


@pytest.mark.parametrize("name", lte_profiles())
def test_srsran_configs_parse_and_follow_the_profile(rendered, name):
    p, c = lte_profile(name), _srsran(rendered, name)
    enb = c["enb"]["enb"]
    assert (enb["mcc"], enb["mnc"], int(enb["n_prb"])) == (p.plmn.mcc, p.plmn.mnc, p.prb)
    cell = c["rr"]["cell_list"][0]
    assert (cell["tac"], cell["dl_earfcn"]) == (p.tac, p.dl_earfcn)
    assert c["sib"]["sib1"]["cell_barred"] == "NotBarred"
    assert c["rb"]["qci_config"][0]["qci"] == 9
    files = c["enb"]["enb_files"]
    assert [Path(files[k]).name for k in ("sib_config", "rr_config", "rb_config")] == ["sib.conf", "rr.conf", "rb.conf"]


@pytest.mark.parametrize("name", lte_profiles())
def test_oai_config_parses_and_follows_the_profile(rendered, name):
    p = lte_profile(name)
    enb = libconf.loads((rendered / "enb1" / "rig-render" / "oai" / name / "enb.conf").read_text())["eNBs"][0]
    cc = enb["component_carriers"][0]
    assert (cc["N_RB_DL"], cc["eutra_band"], enb["tracking_area_code"]) == (p.prb, p.band, p.tac)
    assert cc["downlink_frequency"] == 2_620_000_000 + 100_000 * (p.dl_earfcn - 2750)
    plmn = enb["plmn_list"][0]
    assert (plmn["mcc"], plmn["mnc"], plmn["mnc_length"]) == (int(p.plmn.mcc), int(p.plmn.mnc), len(p.plmn.mnc))


def test_open5gs_configs_parse(rendered):
    nfs = _open5gs(rendered)
    assert set(nfs) == {"mme", "sgwc", "sgwu", "smf", "upf", "hss", "pcrf"}
    assert nfs["smf"]["smf"]["mtu"] == "1400"


@pytest.mark.parametrize("name", lte_profiles())
def test_enodeb_and_epc_agree(rendered, name):
    """PLMN, TAC, the MME / S1 addresses and the APN must match, or no UE attaches."""
    nfs, srs = _open5gs(rendered), _srsran(rendered, name)
    mme, enb = nfs["mme"]["mme"], srs["enb"]["enb"]
    tai = mme["tai"][0]
    assert (tai["plmn_id"]["mcc"], tai["plmn_id"]["mnc"]) == (enb["mcc"], enb["mnc"])
    assert (mme["gummei"][0]["plmn_id"]["mcc"], mme["gummei"][0]["plmn_id"]["mnc"]) == (enb["mcc"], enb["mnc"])
    assert int(tai["tac"]) == srs["rr"]["cell_list"][0]["tac"]
    s1 = mme["s1ap"]["server"][0]["address"]
    assert enb["mme_addr"] == s1 and not ipaddress.ip_address(s1).is_loopback
    assert nfs["sgwu"]["sgwu"]["gtpu"]["server"][0]["address"] == s1  # S1-U on the same address
    assert not ipaddress.ip_address(enb["s1c_bind_addr"]).is_loopback
    smf_session, upf_session = nfs["smf"]["smf"]["session"][0], nfs["upf"]["upf"]["session"][0]
    assert smf_session == upf_session
    js = (rendered / "epc1" / "rig-render" / "open5gs" / "rig-subscribers.js").read_text()
    assert f'name: "{smf_session["dnn"]}"' in js


def test_subscribers_are_the_nodes_with_static_ips_in_the_pool(rendered):
    js = (rendered / "epc1" / "rig-render" / "open5gs" / "rig-subscribers.js").read_text()
    subs = re.findall(r'imsi: "(\d{15})", k: "([0-9A-F]{32})", opc: "([0-9A-F]{32})", ip: "([\d.]+)"', js)
    assert len(subs) == 10 and len({s[0] for s in subs}) == 10
    pool = ipaddress.ip_network(_open5gs(rendered)["smf"]["smf"]["session"][0]["subnet"])
    assert all(ipaddress.ip_address(s[3]) in pool for s in subs)
    assert "$setOnInsert" in js and '"security.sqn"' in js.split("$setOnInsert: {")[-1]  # SQN never reset


# --- node routing ----------------------------------------------------------------------------

def _env(rendered: Path, host: str, setup: str, iface: str) -> dict[str, str]:
    text = (rendered / host / "rig-render" / "node" / host / setup / "interfaces" / f"{iface}.env").read_text()
    return {k: v.strip('"') for k, v in (line.split("=", 1) for line in text.splitlines() if line and line[0] != "#")}


@pytest.mark.parametrize("setup, b_if, b_subnet", [("I", "wwan0", "10.45.0.0/16"), ("II", "wlan1", "10.1.3.0/24"),
                                                  ("III", "wlan1", "10.1.4.0/24")])
def test_node_routing_pins_each_sender_radio_to_one_receiver_side(rendered, setup, b_if, b_subnet):
    wifi, lte = _env(rendered, "s1", setup, "wlan0"), _env(rendered, "s1", setup, "wwan0")
    assert (wifi["TABLE_ROUTES"], wifi["MAIN_ROUTES"], wifi["GATEWAY"]) == ("10.1.2.0/24", "default", "10.1.1.1")
    assert (lte["TABLE_ROUTES"], lte["MAIN_ROUTES"], lte["GATEWAY"]) == (b_subnet, b_subnet, "")
    assert wifi["UNREACHABLE_DEFAULT"] == lte["UNREACHABLE_DEFAULT"] == "yes"
    assert wifi["ENDPOINT"] == lte["ENDPOINT"] == "subflow"
    assert (wifi["LIMIT_SUBFLOWS"], wifi["LIMIT_ADD_ADDR_ACCEPTED"]) == ("2", "1")
    a, b = _env(rendered, "r1", setup, "wlan0"), _env(rendered, "r1", setup, b_if)
    assert (a["ENDPOINT"], b["ENDPOINT"]) == ("none", "signal")
    assert a["TABLE_ROUTES"] == b["TABLE_ROUTES"] == "default" and b["UNREACHABLE_DEFAULT"] == "no"
    assert ipaddress.ip_address(b["ADDRESS"]) in ipaddress.ip_network(b_subnet)
    # Only the interfaces of this setup have routing files.
    present = {p.stem for p in (rendered / "r1" / "rig-render" / "node" / "r1" / setup / "interfaces").glob("*.env")}
    assert present == {"wlan0", b_if}
