"""The Ansible tree: lint (production profile), syntax of every playbook, argument specs = defaults."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fixtures.ansible_env import ANSIBLE, BIN, ansible_env
from fixtures.cli import REPO

PLAYBOOKS = ["site.yml", "nodes.yml", "setup.yml", "campaign.yml", "nightly.yml", "render.yml", "grafana.yml",
             "check.yml", "ansible_version.yml", "emulate.yml"]
ROLES = sorted(p.name for p in (ANSIBLE / "roles").iterdir() if p.is_dir())


def test_roles_are_the_agreed_ones():
    assert set(ROLES) >= {"epc_open5gs", "enb_srsran", "enb_oai", "ap_hostapd", "node", "controller"}


def test_ansible_lint_production_profile(tmp_path):
    run = subprocess.run(
        [BIN / "ansible-lint", "--offline", "--profile", "production", "--nocolor"],
        cwd=ANSIBLE, env=ansible_env(tmp_path), capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Profile 'production' was required, and it passed" in run.stdout + run.stderr


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_playbook_syntax(playbook, tmp_path):
    run = subprocess.run(
        [BIN / "ansible-playbook", "--syntax-check", playbook],
        cwd=ANSIBLE, env=ansible_env(tmp_path), capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def _yaml(path: Path):
    return yaml.safe_load(path.read_text())


# argument_specs type -> Python types a literal default of that type may have.
_TYPES = {"str": str, "int": int, "bool": bool, "list": list, "dict": dict, "path": str, "float": float}


@pytest.mark.parametrize("role", ROLES)
def test_argument_specs_match_defaults(role):
    root = ANSIBLE / "roles" / role
    defaults = _yaml(root / "defaults" / "main.yml")
    specs = _yaml(root / "meta" / "argument_specs.yml")["argument_specs"]
    options = specs["main"]["options"]
    assert set(options) == set(defaults), (
        f"{role}: in specs only {set(options) - set(defaults)}, in defaults only {set(defaults) - set(options)}")
    for name, value in defaults.items():
        assert name.startswith(role + "_"), f"{role}: default {name} lacks the role prefix"
        spec = options[name]
        assert spec.get("description"), f"{role}: {name} has no description"
        templated = isinstance(value, str) and "{{" in value
        if not templated:
            expected = _TYPES[spec["type"]]
            assert isinstance(value, expected) and not (expected is int and isinstance(value, bool)), (
                f"{role}: {name} = {value!r} is not a {spec['type']}")
            if "choices" in spec:
                assert value in spec["choices"], f"{role}: {name} = {value!r} not in its choices"
    for entry, spec in specs.items():  # other entry points document a subset of the same options
        assert set(spec.get("options", {})) <= set(defaults), f"{role}: entry point {entry} has unknown options"


@pytest.mark.parametrize("role", ROLES)
def test_roles_split_install_configure_run(role):
    tasks = ANSIBLE / "roles" / role / "tasks"
    assert {"main.yml", "install.yml", "configure.yml", "run.yml"} <= {p.name for p in tasks.iterdir()}
    assert (ANSIBLE / "roles" / role / "handlers" / "main.yml").is_file()


def test_vault_is_encrypted_and_marked_demo():
    assert (ANSIBLE / "group_vars" / "all" / "vault.yml").read_text().startswith("$ANSIBLE_VAULT;")
    assert "DEMO" in (ANSIBLE / "vault-demo-password.txt").read_text()


def test_inventory_has_the_lab_groups(tmp_path):
    run = subprocess.run(
        [BIN / "ansible-inventory", "--list"],
        cwd=ANSIBLE, env=ansible_env(tmp_path), capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    inv = yaml.safe_load(run.stdout)  # JSON is YAML
    groups = {g: inv[g].get("hosts", []) for g in ("controller", "epc", "enb", "aps", "senders", "receivers")}
    assert len(groups["senders"]) == len(groups["receivers"]) == 5 and len(groups["aps"]) == 3
    hostvars = inv["_meta"]["hostvars"]
    for host in groups["senders"] + groups["receivers"]:
        assert isinstance(hostvars[host]["lte_imsi"], str) and len(hostvars[host]["lte_imsi"]) == 15
    assert sorted(hostvars[h]["pair"] for h in groups["senders"]) == sorted(hostvars[h]["pair"] for h in groups["receivers"])


def test_node_role_check_mode_touches_nothing(tmp_path):
    """site.yml in check mode for one node (as an emulated node, connection local): the role runs
    through, reports what it would change, and this host's /etc is as before."""
    watched = [Path("/etc/rig"), Path("/usr/local/sbin/rig-if-up"), Path("/etc/sysctl.d/90-rig-mptcp.conf"),
               Path("/opt/rig/bpf"), Path("/usr/local/sbin/rig-cc-register"), Path("/etc/systemd/system/rig-cc.service")]
    before = {p: p.exists() for p in watched}
    run = subprocess.run(
        [BIN / "ansible-playbook", "site.yml", "--check", "-c", "local", "-l", "s1",
         "-e", "node_emulated=true", "-e", f"ansible_python_interpreter={sys.executable}"],
        cwd=ANSIBLE, env=ansible_env(tmp_path), capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "failed=0" in run.stdout and "changed=0" not in run.stdout  # it would change things
    assert {p: p.exists() for p in watched} == before


# Roles whose tasks/main.yml starts with a read-only preflight (tag preflight).
PREFLIGHT_ROLES = ["ap_hostapd", "core_router", "emulator", "enb_oai", "enb_srsran", "epc_open5gs"]
# What a preflight may do: read, judge, and (read-only) ask the system.
READ_ONLY = {"ansible.builtin.assert", "ansible.builtin.set_fact", "ansible.builtin.stat", "ansible.builtin.slurp",
             "ansible.builtin.command", "ansible.builtin.import_tasks", "ansible.builtin.fail", "ansible.builtin.debug"}


def _task_files(tasks_dir: Path, name: str) -> list[Path]:
    """A task file and every file it imports, recursively."""
    files = [tasks_dir / name]
    for task in _yaml(tasks_dir / name):
        if "ansible.builtin.import_tasks" in task:
            files += _task_files(tasks_dir, task["ansible.builtin.import_tasks"])
    return files


@pytest.mark.parametrize("role", PREFLIGHT_ROLES)
def test_role_starts_with_a_read_only_preflight(role):
    tasks = ANSIBLE / "roles" / role / "tasks"
    first = _yaml(tasks / "main.yml")[0]
    assert first.get("ansible.builtin.import_tasks") == "preflight.yml" and "preflight" in first.get("tags", [])
    for path in _task_files(tasks, "preflight.yml"):
        for task in _yaml(path):
            module = next(k for k in task if k.startswith("ansible."))
            assert module in READ_ONLY, f"{path.name}: '{task['name']}' uses {module}"
            if module == "ansible.builtin.command":  # asks only: runs in check mode, changes nothing
                assert task.get("changed_when") is False and task.get("check_mode") is False, task["name"]


@pytest.mark.parametrize("host, extra, message", [
    ("enb1", "rig_enb_implementation=oai", "enb1: OAI v2.1.0's build_oai refuses debian12 (it installs on ubuntu18.04"),
    ("enb1", "rig_enb_implementation=srsran", "enb1: enb_srsran_s1_address 10.0.1.4 must be an address of this host"),
    ("epc1", "rig_enb_implementation=srsran", "epc1: epc_open5gs_s1_address 10.0.1.3 is not an address of this host"),
    ("ap2", "rig_wifi_standard=ac", "ap2: wlan0 is not a wireless interface"),
    ("s1", "rig_setup=I", "s1: no interface wifi_if=wlan0 (it has "),
    ("s1", "wifi_if=lo", "s1: lte_if=wwan0 is no qmi modem port (driver none, control port none) and no Quectel"),
])
def test_preflight_on_this_host_fails_with_one_clear_message(tmp_path, host, extra, message):
    """The lab roles' preflights on this Debian 12 host, in check mode (connection local): OAI is
    refused for the distribution; the others pass their distribution checks and stop at what this
    host lacks (the lab's addresses, a wireless interface; a node's interfaces and LTE modem).
    Nothing is changed."""
    os_release = dict(line.split("=", 1) for line in Path("/etc/os-release").read_text().splitlines() if "=" in line)
    if (os_release.get("ID"), os_release.get("VERSION_ID", "").strip('"')) != ("debian", "12"):
        pytest.skip("the expected messages are those of a Debian 12 host")
    run = subprocess.run(
        [BIN / "ansible-playbook", "site.yml", "--check", "--tags", "preflight", "-c", "local", "-l", host,
         "-e", extra, "-e", f"ansible_python_interpreter={sys.executable}"],
        cwd=ANSIBLE, env=ansible_env(tmp_path), capture_output=True, text=True, timeout=300,
    )
    out = run.stdout + run.stderr
    assert run.returncode != 0 and "changed=0" in out and "failed=1" in out, out[-3000:]
    failures = re.findall(r"^\[ERROR\]: Task failed: Action failed: (.*)$", out, re.M)
    assert len(failures) == 1 and failures[0].startswith(message), out[-3000:]


def test_grafana_provisioning_renders_with_the_vaults_passwords(tmp_path):
    """The controller role's Grafana files, rendered from its defaults and the DEMO vault into
    tmp_path (a local play, nothing else touched): the data source the dashboards name, the
    dashboards' folder, and grafana.ini's sign-in settings."""
    import configparser
    import json as json_

    templates = ANSIBLE / "roles" / "controller" / "templates"
    names = ["grafana-datasource.yaml.j2", "grafana-dashboards.yaml.j2", "grafana.ini.j2"]
    play = [{"name": "Render Grafana's files", "hosts": "localhost", "gather_facts": False,
             "vars_files": [str(ANSIBLE / "roles" / "controller" / "defaults" / "main.yml"),
                            str(ANSIBLE / "group_vars" / "all" / "vault.yml")],
             "tasks": [{"name": f"Render {n}", "ansible.builtin.template": {
                 "src": str(templates / n), "dest": str(tmp_path / n.removesuffix(".j2")), "mode": "0600"}}
                 for n in names]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    run = subprocess.run([BIN / "ansible-playbook", "-i", "localhost,", "-c", "local", str(tmp_path / "play.yml"),
                          "-e", f"ansible_python_interpreter={sys.executable}"],
                         cwd=ANSIBLE, env=ansible_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    vault = subprocess.run([BIN / "ansible-vault", "view", "group_vars/all/vault.yml"], cwd=ANSIBLE,
                           env=ansible_env(tmp_path), capture_output=True, text=True, timeout=60, check=True)
    secrets = yaml.safe_load(vault.stdout)
    [source] = yaml.safe_load((tmp_path / "grafana-datasource.yaml").read_text())["datasources"]
    dashboards = json_.loads((REPO / "grafana" / "dashboards" / "rig-run.json").read_text())
    assert source["uid"] == dashboards["templating"]["list"][0]["datasource"]["uid"] == "rig-influxdb"
    assert (source["type"], source["url"], source["jsonData"]["dbName"], source["user"]) == (
        "influxdb", "http://127.0.0.1:8086", "rig", "grafana")
    assert source["secureJsonData"]["password"] == secrets["vault_grafana_influxdb_password"]
    [provider] = yaml.safe_load((tmp_path / "grafana-dashboards.yaml").read_text())["providers"]
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards/rig" and provider["allowUiUpdates"] is False
    ini = configparser.ConfigParser()
    ini.read_string((tmp_path / "grafana.ini").read_text())
    assert ini["security"]["admin_password"].strip('"') == secrets["vault_grafana_admin_password"]
    assert ini["users"]["allow_sign_up"] == "false" and ini["auth.anonymous"]["enabled"] == "false"
