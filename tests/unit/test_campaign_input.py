"""Bad campaign files get one line naming the file and field, exit 2, and nothing written."""

from __future__ import annotations

import pytest

from fixtures.cli import REPO, run_rig
from rig.model.campaign import parse_campaign
from rig.model.routing import node_plan
from rig.model.topology import topology
from rig.core.errors import InputError

GOOD = (REPO / "campaigns" / "default.yaml").read_text()


@pytest.mark.parametrize(
    "text, field, words",
    [
        ("name: x\nsetups: [I, IV]\n", "setups[1]", "Input should be"),
        ("name: x\nfactors:\n  cc: [cubic]\n  connections: [0]\n", "factors.connections", "1..128"),
        ("name: x\nfactors:\n  volume: [15 parsecs]\n", "factors.volume", "not a size"),
        ("name: x\nfactors:\n  homing: [dual, triple]\n", "factors.homing[1]", "Input should be"),
        ("name: x\npairs: 0\n", "pairs", "greater than or equal to 1"),
        ("name: x\nrepetitions: two\n", "repetitions", "valid integer"),
        ("name: x\nfactor:\n  cc: [cubic]\n", "factor", "unknown field"),
        ("name: x\nblocking: [colour]\n", "blocking", "not a factor"),
        ("name: Bad Name\n", "name", "should match"),
        ("name: x\nsetups: [I, I]\n", "setups", "twice"),
        ("name: x\nfactors: {cc: [cubic, cubic]}\n", "factors.cc", "twice"),
        ("name: x\npairs: 1\npairs: 2\n", "pairs", "given twice"),
        ("- just\n- a list\n", "(top level)", "mapping"),
        ("name: x\npaths: {manager: fullmesh}\n", "paths.manager", "'kernel' or 'userspace'"),
        ("name: x\nradios: models\nshared_medium: false\n", "shared_medium", "only the links radios"),
        ("name: x\nradios: models\nloss_aware: {measure: link}\n", "loss_aware.measure", "per-hop loss counters"),
        ("name: x\nloss_aware: {measure: queue}\n", "loss_aware.measure", "retransmissions"),
        ("name: x\npaths: {manager: userspace}\nfactors: {policy: [none, loss-aware]}\n", "factors.policy[1]",
         "policy none"),
    ],
)
def test_bad_field_is_named(text, field, words):
    with pytest.raises(InputError) as e:
        parse_campaign(text, "c.yaml")
    assert e.value.field == field
    assert words in e.value.problem
    assert "\n" not in str(e.value)


def test_the_path_manager_is_the_kernels_unless_named():
    assert parse_campaign("name: x\n", "c.yaml").paths.manager == "kernel"
    for name in ("seed004-cut", "seed004-cut-emulated"):  # the cut studies name it
        text = (REPO / "campaigns" / f"{name}.yaml").read_text()
        assert "manager: kernel" in text and parse_campaign(text, name).paths.manager == "kernel"


def test_userspace_names_the_senders_mptcpd_and_each_node_gets_its_path_manager():
    text = (REPO / "campaigns" / "seed004-cut-userspace-emulated.yaml").read_text()
    campaign = parse_campaign(text, "seed004-cut-userspace-emulated.yaml")
    assert campaign.paths.manager == "userspace"
    topo = topology("II", 1, tuple(campaign.paths.radios), campaign.paths.mode)
    pair = topo.pairs[0]
    for manager in ("kernel", "userspace"):
        sender = node_plan(topo, pair.sender, manager=manager)
        assert sender["sysctls"]["net.mptcp.path_manager"] == manager
        # the plugin's subflows come from the same endpoints the kernel's would
        assert [i["endpoint"] for i in sender["interfaces"]] == ["subflow", "subflow"]
        receiver = node_plan(topo, pair.receiver, manager=manager)
        assert receiver["sysctls"]["net.mptcp.path_manager"] == "kernel"
        # room for the joins that replace a returning radio's subflows while the old ones still count
        assert receiver["limits"]["subflows"] == {"kernel": 4, "userspace": 8}[manager]


def test_good_default_campaign_parses():
    c = parse_campaign(GOOD, "default.yaml")
    assert c.setups == ["I", "II", "III"] and c.factors.volume == [3_000_000] and c.factors.rcvbuf == [1_000_000]


def test_cli_bad_file_exits_2_with_one_line_and_writes_nothing(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("connections: [1]", "connections: [1, -3]"))
    out = tmp_path / "results"
    for args in (["campaign", "plan", str(bad)], ["campaign", "run", str(bad), "--out", str(out)]):
        p = run_rig(*args)
        assert p.returncode == 2, p.stderr
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and str(bad) in lines[0] and "factors.connections" in lines[0], p.stderr
    assert not out.exists()


def test_cli_unknown_wifi_profile_and_missing_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("wifi_standard: [n5]", "wifi_standard: [n5, z9]"))
    p = run_rig("campaign", "plan", str(bad))
    assert p.returncode == 2 and "factors.wifi_standard[1]" in p.stderr and "z9" in p.stderr
    p = run_rig("campaign", "plan", str(tmp_path / "nope.yaml"))
    assert p.returncode == 2 and "nope.yaml" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_cli_bad_flag_exits_2():
    p = run_rig("campaign", "run", "campaigns/default.yaml", "--no-such-flag")
    assert p.returncode == 2 and "no-such-flag" in p.stderr and p.stderr.count("\n") == 1, p.stderr


def test_yaml_syntax_error_names_file_line_and_column():
    with pytest.raises(InputError) as e:
        parse_campaign("name: x\nsetups: [I, II\n", "c.yaml")
    assert str(e.value).startswith("c.yaml:3:1: not valid YAML: ") and "\n" not in str(e.value)


def test_plan_warns_about_a_cc_this_host_cannot_run(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(GOOD.replace("cc: [cubic]", "cc: [cubic, vegas]"))
    p = run_rig("campaign", "plan", str(f))
    assert p.returncode == 0 and "estimated duration" in p.stdout
    assert p.stderr.startswith(f"warning: {f}: factors.cc[1]: 'vegas' cannot run on this host") and p.stderr.count("\n") == 1
    ok = run_rig("campaign", "plan", "campaigns/default.yaml")
    assert ok.returncode == 0 and ok.stderr == ""


def test_export_verify_of_a_missing_directory_exits_2_with_one_line(tmp_path):
    p = run_rig("export", "--verify", str(tmp_path / "nope"))
    assert p.returncode == 2 and p.stderr == f"error: {tmp_path / 'nope'}: --verify: no such directory\n"
