"""Configs the roles render (ansible/render.yml in check/diff mode, nothing touched):
golden files, the real hostapd parses every hostapd.conf, srsRAN / OAI / Open5GS configs parse
and agree with each other and with the radio profiles.

Regenerate the golden files after an intended change: RIG_UPDATE_GOLDEN=1 pytest tests/system/test_rendered_configs.py
"""

from __future__ import annotations

import configparser
import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import libconf
import pytest
import yaml

from fixtures.cli import REPO
from fixtures.ansible_env import ANSIBLE, BIN, ansible_env
from rig.core.process import terminate
from rig.model.profiles import lte_profile, lte_profiles, wifi_profile, wifi_profiles

GOLDEN = REPO / "tests" / "golden" / "rendered"
HOSTAPD = shutil.which("hostapd") or "/usr/sbin/hostapd"


# The playbook in two halves at once (--limit), one per core: the nodes' plays, and the rest.
HALVES = ("s1:r1", "all:!s1:!r1")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("render")
    out = tmp / "out"
    env = {**ansible_env(tmp), "ANSIBLE_CALLBACKS_ENABLED": "rig_render", "RIG_RENDER_DIR": str(out)}
    runs = [subprocess.Popen(
        [BIN / "ansible-playbook", "render.yml", "--check", "--diff", "-c", "local", "--limit", half,
         "-e", "rig_hide_secrets=false", "-e", f"ansible_python_interpreter={sys.executable}"],
        cwd=ANSIBLE, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) for half in HALVES]
    try:
        outputs = [run.communicate(timeout=900) for run in runs]
    finally:
        terminate(runs, 5)  # the other half too, when one failed or timed out
    for run, (stdout, stderr) in zip(runs, outputs):
        assert run.returncode == 0, stdout[-4000:] + stderr[-2000:]
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


# --- the AP role's preflight: every capability hostapd.conf sets is checked against `iw phy` ----

AP_ROLE = ANSIBLE / "roles" / "ap_hostapd"
IW_CAPABILITIES = yaml.safe_load((AP_ROLE / "vars" / "main.yml").read_text())["ap_hostapd_iw_capabilities"]
IW_PHY = (REPO / "tests" / "data" / "iw-phy-dual-band-ac.txt").read_text()


@pytest.mark.parametrize("name", wifi_profiles())
def test_every_capability_flag_hostapd_conf_sets_has_a_preflight_check(rendered, name):
    conf = (rendered / "ap2" / "rig-render" / "hostapd" / name / "wlan0.conf").read_text()
    flags = re.findall(r"\[[^\]]+\]", "".join(re.findall(r"^(?:ht|vht)_capab=(.*)$", conf, re.M)))
    assert set(flags) <= set(IW_CAPABILITIES), f"{name}: no iw check for {set(flags) - set(IW_CAPABILITIES)}"


def _ap_preflight(tmp_path: Path, profiles: list[str], iw_text: str) -> subprocess.CompletedProcess:
    """The role's radio check (tasks/preflight_radio.yml) on `iw phy` output, for ap2."""
    playbook = tmp_path / "preflight.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "AP preflight", "hosts": "ap2", "gather_facts": False,
        "tasks": [{"name": "Check", "ansible.builtin.include_role": {"name": "ap_hostapd", "tasks_from": "preflight_radio.yml"},
                   "vars": {"ap_hostapd_profile_name": "{{ item }}",
                            "ap_hostapd_profile": "{{ lookup('file', ap_hostapd_radio_configs_dir ~ '/wifi/' ~ item ~ '.yaml') | from_yaml }}"},
                   "loop": profiles}],
    }]))
    extra = tmp_path / "vars.yml"
    extra.write_text(yaml.safe_dump({
        "ap_hostapd_radio_configs_dir": str(ANSIBLE.parent / "radio-configs"), "ap_hostapd_psk": "not-a-secret",
        "ap_hostapd_interface": "wlan0", "ap_hostapd_phy_name": "phy0", "ap_hostapd_phy_info": {"stdout": iw_text}}))
    env = {**ansible_env(tmp_path), "ANSIBLE_ROLES_PATH": str(ANSIBLE / "roles")}
    return subprocess.run([BIN / "ansible-playbook", str(playbook), "-c", "local", "-e", f"@{extra}",
                           "-e", f"ansible_python_interpreter={sys.executable}"],
                          cwd=ANSIBLE, env=env, capture_output=True, text=True, timeout=300)


def _without_in_band(text: str, band: int, line: str) -> str:
    start, end = text.index(f"\tBand {band}:"), text.index("\tSupported commands:")
    if f"\tBand {band + 1}:" in text:
        end = text.index(f"\tBand {band + 1}:")
    section = text[start:end]
    assert line in section
    return text[:start] + section.replace(line, "", 1) + text[end:]


def test_ap_preflight_passes_a_radio_that_has_everything(tmp_path):
    run = _ap_preflight(tmp_path, wifi_profiles(), IW_PHY)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]


@pytest.mark.parametrize("profile, iw_text, problem", [
    ("n5", _without_in_band(IW_PHY, 2, "\t\t\tRX HT40 SGI\n"), "lacks capability [SHORT-GI-40]"),
    ("ac", _without_in_band(IW_PHY, 2, "\t\t\tshort GI (80 MHz)\n"), "lacks capability [SHORT-GI-80]"),
    # The 2.4 GHz band is judged by its own section, not by what the 5 GHz band has.
    ("n24", _without_in_band(IW_PHY, 1, "\t\t\tRX HT20 SGI\n"), "lacks capability [SHORT-GI-20]"),
    ("n24", _without_in_band(IW_PHY, 1, "\t\t\tHT20/HT40\n"), "lacks capability [HT40+]"),
    ("a", IW_PHY.replace("[36] (23.0 dBm)", "[36] (23.0 dBm) (no IR)"), "channel 36 (5180 MHz) is not enabled"),
    ("g", IW_PHY.replace("\t\t * AP\n", ""), "no AP mode"),
])
def test_ap_preflight_names_the_host_the_adapter_and_what_it_lacks(tmp_path, profile, iw_text, problem):
    run = _ap_preflight(tmp_path, [profile], iw_text)
    assert run.returncode != 0
    assert f"ap2: radio phy0 (wlan0) cannot run WiFi profile {profile}: " in run.stdout, run.stdout[-3000:]
    assert problem in run.stdout, run.stdout[-3000:]


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


# srsenb's own key lists (release_23_11, the version enb_srsran builds): tests/golden/upstream/.
SRSENB = yaml.safe_load((GOLDEN.parent / "upstream" / "srsran-release_23_11.yaml").read_text())

# The values 36.331 allows for the bearer fields srsenb maps onto the RRC message (-1: infinity).
# srsenb refuses any other value when it reads rb.conf.
_MS_5_TO_250 = set(range(5, 251, 5)) | {300, 350, 400, 450, 500}
BEARER_VALUES = {
    "pdcp_config.discard_timer": {50, 100, 150, 300, 500, 750, 1500, -1},
    "pdcp_config.pdcp_sn_size": {7, 12},
    "pdcp_config.status_report_required": {True, False},
    "rlc_config.ul_am.t_poll_retx": _MS_5_TO_250,
    "rlc_config.ul_am.poll_pdu": {4, 8, 16, 32, 64, 128, 256, -1},
    "rlc_config.ul_am.poll_byte": {25, 50, 75, 100, 125, 250, 375, 500, 750, 1000, 1250, 1500, 2000, 3000, -1},
    "rlc_config.ul_am.max_retx_thresh": {1, 2, 3, 4, 6, 8, 16, 32},
    "rlc_config.dl_am.t_reordering": set(range(0, 201, 5)),
    "rlc_config.dl_am.t_status_prohibit": {0} | _MS_5_TO_250,
    "rlc_config.ul_um.sn_field_length": {5, 10},
    "rlc_config.dl_um.sn_field_length": {5, 10},
    "rlc_config.dl_um.t_reordering": set(range(0, 201, 5)),
    "logical_channel_config.priority": set(range(1, 17)),
    "logical_channel_config.prioritized_bit_rate": {0, 8, 16, 32, 64, 128, 256, -1},
    "logical_channel_config.bucket_size_duration": {50, 100, 150, 300, 500, 1000},
    "logical_channel_config.log_chan_group": {0, 1, 2, 3},
}


def _key_paths(value, prefix: str = "") -> set[str]:
    """Every key path of a libconfig tree, "[]" for list elements (as in the upstream key lists)."""
    out = set()
    if isinstance(value, dict):
        for k, v in value.items():
            path = f"{prefix}.{k}" if prefix else k
            out |= {path} | _key_paths(v, path)
    elif isinstance(value, (list, tuple)):
        for v in value:
            out |= _key_paths(v, prefix + "[]")
    return out


def _leaves(value, prefix: str = "") -> dict:
    if not isinstance(value, dict):
        return {prefix: value}
    return {k: v for key, sub in value.items() for k, v in _leaves(sub, f"{prefix}.{key}" if prefix else key).items()}


def bearer_problems(rb: dict) -> list[str]:
    """What is wrong with each QCI bearer of an rb.conf, judged by srsenb's rb.conf example for
    the same RLC mode and by 36.331's value ranges. srsenb takes an RLC AM bearer from ul_am (as
    its parser does) and signals pdcp_sn_size as PDCP-Config rlc-UM, status_report_required as
    rlc-AM: each belongs to its own mode only (36.331 PDCP-Config, conditions Rlc-AM / Rlc-UM)."""
    problems = []
    for bearer in rb["qci_config"]:
        mode = "am" if "ul_am" in bearer["rlc_config"] else "um"
        leaves = _leaves({k: v for k, v in bearer.items() if k != "qci"})
        want = set(SRSENB["rb.conf qci_config"][mode])
        for field in sorted(set(leaves) - want):
            problems.append(f"QCI {bearer['qci']} (RLC {mode.upper()}): {field} is not a field of an {mode.upper()} bearer")
        for field in sorted(want - set(leaves)):
            problems.append(f"QCI {bearer['qci']} (RLC {mode.upper()}): {field} is missing")
        for field, value in leaves.items():
            if field in BEARER_VALUES and value not in BEARER_VALUES[field]:
                problems.append(f"QCI {bearer['qci']}: {field} = {value} is not a 36.331 value")
    return problems


@pytest.mark.parametrize("name", lte_profiles())
def test_srsran_configs_use_only_keys_srsenb_reads_where_it_reads_them(rendered, name):
    d = rendered / "enb1" / "rig-render" / "srsran" / name
    enb = configparser.ConfigParser()
    enb.read_string((d / "enb.conf").read_text())
    options = {f"{s}.{k}" for s in enb.sections() for k in enb[s]}
    assert options <= set(SRSENB["enb.conf"]), sorted(options - set(SRSENB["enb.conf"]))
    for conf in ("rr.conf", "sib.conf"):
        paths = _key_paths(libconf.loads((d / conf).read_text()))
        assert paths <= set(SRSENB[conf]), (conf, sorted(paths - set(SRSENB[conf])))


@pytest.mark.parametrize("name", lte_profiles())
def test_srsran_bearers_have_the_pdcp_and_rlc_fields_of_their_rlc_mode(rendered, name):
    rb = _srsran(rendered, name)["rb"]
    assert bearer_problems(rb) == []
    qci9 = next(b for b in rb["qci_config"] if b["qci"] == 9)  # the subscribers' default bearer
    assert "ul_am" in qci9["rlc_config"] and qci9["pdcp_config"]["status_report_required"] is True


def test_bearer_check_catches_fields_of_the_other_rlc_mode(rendered):
    text = (rendered / "enb1" / "rig-render" / "srsran" / "band7-10mhz" / "rb.conf").read_text()
    wrong = libconf.loads(text.replace("status_report_required = true;", "pdcp_sn_size = 12;"))
    assert bearer_problems(wrong) == [
        "QCI 9 (RLC AM): pdcp_config.pdcp_sn_size is not a field of an AM bearer",
        "QCI 9 (RLC AM): pdcp_config.status_report_required is missing"]
    wrong = libconf.loads(text.replace("poll_pdu = 64;", "poll_pdu = 65;"))
    assert bearer_problems(wrong) == ["QCI 9: rlc_config.ul_am.poll_pdu = 65 is not a 36.331 value"]


@pytest.mark.parametrize("name", lte_profiles())
def test_srsran_uplink_modulation_reaches_the_scheduler_limit(rendered, name):
    """enb.conf lets the uplink scheduler reach pusch_max_mcs; above MCS 20 that is 64QAM
    (36.213 Table 8.6.1-1), which SIB2 must then allow, or srsenb keeps every UE at 16QAM."""
    c = _srsran(rendered, name)
    max_mcs = int(c["enb"]["scheduler"]["pusch_max_mcs"])
    max_mcs = 28 if max_mcs < 0 else max_mcs
    enable_64qam = c["sib"]["sib2"]["rr_config_common_sib"]["pusch_cnfg"]["enable_64_qam"]
    assert enable_64qam is (max_mcs > 20)


@pytest.mark.parametrize("name", lte_profiles())
def test_oai_config_parses_and_follows_the_profile(rendered, name):
    p = lte_profile(name)
    enb = libconf.loads((rendered / "enb1" / "rig-render" / "oai" / name / "enb.conf").read_text())["eNBs"][0]
    cc = enb["component_carriers"][0]
    assert (cc["N_RB_DL"], cc["eutra_band"], enb["tracking_area_code"]) == (p.prb, p.band, p.tac)
    assert cc["downlink_frequency"] == 2_620_000_000 + 100_000 * (p.dl_earfcn - 2750)
    plmn = enb["plmn_list"][0]
    assert (plmn["mcc"], plmn["mnc"], plmn["mnc_length"]) == (int(p.plmn.mcc), int(p.plmn.mnc), len(p.plmn.mnc))


OAI = yaml.safe_load((GOLDEN.parent / "upstream" / "oai-v2.1.0.yaml").read_text())


@pytest.mark.parametrize("name", lte_profiles())
def test_oai_config_uses_only_names_the_built_version_reads(rendered, name):
    version = yaml.safe_load((ANSIBLE / "roles" / "enb_oai" / "defaults" / "main.yml").read_text())["enb_oai_version"]
    assert version == OAI["version"], "the name list in tests/golden/upstream/ is for another version"
    conf = libconf.loads((rendered / "enb1" / "rig-render" / "oai" / name / "enb.conf").read_text())
    # log_config's "<component>_log_level" names are built from a format, not listed.
    unknown = {k for k in _key_names(conf) - set(OAI["names"]) if not k.endswith("_log_level")}
    assert not unknown, f"OAI {version} reads no {sorted(unknown)}"


def test_open5gs_configs_parse(rendered):
    nfs = _open5gs(rendered)
    assert set(nfs) == {"mme", "sgwc", "sgwu", "smf", "upf", "hss", "pcrf"}
    assert nfs["smf"]["smf"]["mtu"] == "1400"


OPEN5GS = yaml.safe_load((GOLDEN.parent / "upstream" / "open5gs-2.8.0.yaml").read_text())
EPC_ROLE = ANSIBLE / "roles" / "epc_open5gs"
# The [Link] settings of the open5gs-upf package's own 99-open5gs.network (Open5GS 2.7 and 2.8).
OPEN5GS_OGSTUN_LINK = {"MTUBytes": "1400", "RequiredForOnline": "false"}


def _key_names(value) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _key_names(v)}
    if isinstance(value, (list, tuple)):
        return {k for v in value for k in _key_names(v)}
    return set()


def test_open5gs_configs_use_only_keys_the_pinned_release_reads(rendered):
    version = yaml.safe_load((EPC_ROLE / "defaults" / "main.yml").read_text())["epc_open5gs_version"]
    assert version == OPEN5GS["version"], "the key list in tests/golden/upstream/ is for another release"
    for nf, config in _open5gs(rendered).items():
        unknown = _key_names(config) - set(OPEN5GS["keys"])
        assert not unknown, f"{nf}.yaml: Open5GS {version} reads no {sorted(unknown)}"


def test_ogstun_network_file_takes_the_packages_place_and_keeps_its_link_settings(rendered):
    files = list((rendered / "epc1" / "etc" / "systemd" / "network").glob("*.network"))
    # systemd-networkd applies the first matching file in name order: ours, not the package's.
    assert len(files) == 1 and files[0].name < "99-open5gs.network"
    net = configparser.ConfigParser()
    net.optionxform = str  # keys are case-sensitive
    net.read_string(files[0].read_text())
    assert net["Match"]["Name"] == "ogstun"
    assert set(OPEN5GS_OGSTUN_LINK) <= set(net["Link"]) and net["Link"]["RequiredForOnline"] == "false"
    session = _open5gs(rendered)["smf"]["smf"]
    assert net["Link"]["MTUBytes"] == session["mtu"]  # the MTU the UEs are told
    prefixlen = session["session"][0]["subnet"].split("/")[1]
    assert net["Network"]["Address"] == f"{session['session'][0]['gateway']}/{prefixlen}"


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

@pytest.mark.parametrize("setup", ["I", "II", "III"])
def test_node_role_stores_the_plan_rig_paths_computes(rendered, setup):
    """The node role's routing is `rig paths`' (one owner): what it stores for each node is that
    node's plan; tests/system/test_node_routing.py checks what applying a plan does to a node."""
    from rig.rigs.lab import lab_topology, load_lab
    from rig.model.routing import node_plan

    topo = lab_topology(load_lab(ANSIBLE.parent / "inventory.ini"), setup, 1)
    for host in ("s1", "r1"):
        stored = json.loads((rendered / host / "rig-render" / "node" / host / setup / "paths.json").read_text())
        assert stored == node_plan(topo, host)
