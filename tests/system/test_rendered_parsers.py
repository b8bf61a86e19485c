"""The configs the roles render, read by the programs that will read them on the lab: every
systemd unit through `systemd-analyze verify`, the nodes' chrony.conf through `chronyd -p`, the
WiFi clients' configs through wpa_supplicant's own parser, the srsRAN and OAI libconfig files
through Debian's libconfig (the C library srsenb's libconfig++ wraps), the APs' upstream NAT
through `nft -c`. Each check also proves it catches a broken line.

They read tests/golden/rendered/, which tests/system/test_rendered_configs.py holds equal to what
ansible/render.yml renders now, so they need no Ansible run of their own.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import shutil
import subprocess
from pathlib import Path

import pytest

from fixtures.cli import REPO

GOLDEN = REPO / "tests" / "golden" / "rendered"
UNITS = sorted(GOLDEN.rglob("*.service"))
# Programs units start that the roles build from source (not rendered, not packaged).
BUILT_BY_ROLES = {"/usr/local/bin/srsenb",
                  "/usr/local/src/openairinterface5g/cmake_targets/ran_build/build/lte-softmodem"}


def _rel(path: Path) -> str:
    return str(path.relative_to(GOLDEN))


def _verify(unit: Path, tmp_path: Path, root: Path = GOLDEN) -> list[str]:
    """systemd-analyze verify's complaints about `unit` (it exits 0 on unknown keys and bad values:
    every line it prints is one). A command missing here is fine if the role installs it."""
    copy = tmp_path / unit.name
    shutil.copy(unit, copy)
    run = subprocess.run(["systemd-analyze", "verify", str(copy)], capture_output=True, text=True, timeout=60)
    host = root / unit.relative_to(root).parts[0]
    out = []
    for line in (run.stdout + run.stderr).splitlines():
        if "is not executable: No such file or directory" in line:
            command = line.split("Command ", 1)[1].split(" is not executable")[0]
            if command in BUILT_BY_ROLES or (host / command.lstrip("/")).is_file():
                continue
        out.append(line)
    return out


@pytest.mark.parametrize("unit", UNITS, ids=_rel)
def test_every_rendered_unit_passes_systemd_analyze_verify(unit, tmp_path):
    assert _verify(unit, tmp_path) == []


def test_systemd_analyze_check_catches_a_broken_unit(tmp_path):
    unit = next(u for u in UNITS if u.name == "rig-modem@.service")
    root = tmp_path / "src"
    broken = root / unit.relative_to(GOLDEN)
    broken.parent.mkdir(parents=True)
    broken.write_text(unit.read_text().replace("Type=simple", "Type=simple\nRestartForever=yes"))
    shutil.copytree(GOLDEN / "s1" / "usr", root / unit.relative_to(GOLDEN).parts[0] / "usr")
    problems = _verify(broken, tmp_path, root)
    assert len(problems) == 1 and "Unknown key 'RestartForever'" in problems[0]


CHRONY = sorted(GOLDEN.glob("*/etc/chrony/chrony.conf"))


@pytest.mark.parametrize("conf", CHRONY, ids=_rel)
def test_chronyd_parses_the_rendered_chrony_conf(conf):
    run = subprocess.run(["chronyd", "-p", "-f", str(conf)], capture_output=True, text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    assert "server 10.0.0.2 iburst" in run.stdout  # the controller, as chronyd read it


def test_chronyd_check_catches_a_broken_line(tmp_path):
    broken = tmp_path / "chrony.conf"
    broken.write_text(CHRONY[0].read_text() + "maxpoll 6\n")  # an option of `server`, not a directive
    run = subprocess.run(["chronyd", "-p", "-f", str(broken)], capture_output=True, text=True, timeout=30)
    assert run.returncode != 0 and "Invalid directive" in run.stderr


WPA = sorted(GOLDEN.glob("*/etc/wpa_supplicant/*.conf"))
WPA_SUPPLICANT = shutil.which("wpa_supplicant") or "/usr/sbin/wpa_supplicant"


def _wpa_supplicant(conf: Path) -> str:
    """wpa_supplicant reads the whole config before it opens the driver, which fails here (no
    radio): a config that gets that far parsed."""
    run = subprocess.run([WPA_SUPPLICANT, "-i", "rigcheck0", "-D", "nl80211", "-c", str(conf)],
                         capture_output=True, text=True, timeout=30)
    return run.stdout + run.stderr


@pytest.mark.parametrize("conf", WPA, ids=_rel)
def test_wpa_supplicant_parses_the_rendered_config(conf):
    out = _wpa_supplicant(conf)
    assert "Failed to read or parse configuration" not in out and "Line " not in out, out
    assert "nl80211" in out  # it got past the config, to the driver


def test_wpa_supplicant_check_catches_a_broken_line(tmp_path):
    broken = tmp_path / "wpa.conf"
    broken.write_text(WPA[0].read_text().replace("key_mgmt=WPA-PSK", "key_mgmt=WPA-PSK\n    roam=never"))
    out = _wpa_supplicant(broken)
    assert "unknown network field 'roam'" in out and "Failed to read or parse configuration" in out


class _Config(ctypes.Structure):
    """libconfig's config_t (libconfig.h, 1.5): read through the library itself."""
    _fields_ = [("root", ctypes.c_void_p), ("destructor", ctypes.c_void_p), ("options", ctypes.c_int),
                ("tab_width", ctypes.c_ushort), ("default_format", ctypes.c_short), ("include_dir", ctypes.c_char_p),
                ("error_text", ctypes.c_char_p), ("error_file", ctypes.c_char_p), ("error_line", ctypes.c_int),
                ("error_type", ctypes.c_int), ("filenames", ctypes.c_void_p), ("num_filenames", ctypes.c_uint)]


def _libconfig_error(path: Path) -> str | None:
    """None if Debian's libconfig reads `path`, else its error 'line N: text'."""
    lib = ctypes.CDLL(ctypes.util.find_library("config") or "libconfig.so.9")
    config = _Config()
    lib.config_init(ctypes.byref(config))
    try:
        if lib.config_read_file(ctypes.byref(config), str(path).encode()) == 1:
            return None
        return f"line {config.error_line}: {(config.error_text or b'').decode()}"
    finally:
        lib.config_destroy(ctypes.byref(config))


LIBCONFIG = sorted(p for p in GOLDEN.glob("enb1/rig-render/*/*/*.conf")
                   if p.parent.parent.name == "oai" or p.name in ("rr.conf", "sib.conf", "rb.conf"))


def test_the_libconfig_files_are_every_srsran_and_oai_one():
    assert len(LIBCONFIG) == 3 * 3 + 3  # rr, sib, rb per LTE profile; OAI's enb.conf per profile


@pytest.mark.parametrize("conf", LIBCONFIG, ids=_rel)
def test_libconfig_reads_the_rendered_srsran_and_oai_files(conf):
    assert _libconfig_error(conf) is None


def test_libconfig_check_catches_a_broken_line(tmp_path):
    conf = next(p for p in LIBCONFIG if p.name == "rr.conf")
    broken = tmp_path / "rr.conf"
    broken.write_text(conf.read_text() + "5qi = 9;\n")  # a name must start with a letter
    error = _libconfig_error(broken)
    assert error is not None and error.startswith(f"line {len(conf.read_text().splitlines()) + 1}: syntax error")


NFT = sorted(GOLDEN.glob("*/etc/rig/upstream.nft"))


@pytest.mark.parametrize("rules", NFT, ids=_rel)
def test_nft_accepts_the_upstream_nat(rules):
    run = subprocess.run(["nft", "-c", "-f", str(rules)], capture_output=True, text=True, timeout=30)
    assert run.returncode == 0, run.stderr


def test_only_the_aps_masquerade():
    assert sorted(p.relative_to(GOLDEN).parts[0] for p in NFT) == ["ap1", "ap2", "ap3"]
    for rules in NFT:
        own = {"ap1": "10.1.1.0/24", "ap2": "10.1.2.0/24, 10.1.4.0/24", "ap3": "10.1.3.0/24"}[rules.relative_to(GOLDEN).parts[0]]
        assert f"ip saddr {{ {own} }} ip daddr != {{ 10.1.1.0/24, 10.1.2.0/24, 10.1.4.0/24, 10.1.3.0/24, 10.45.0.0/16 }} masquerade" \
            in rules.read_text()
