"""A bad campaign file given to `rig campaign run` on this host: one line naming the file and
field, exit 2, nothing written and no namespace made (the checks that need no host:
tests/unit/test_campaign_input.py)."""

from __future__ import annotations

from fixtures.cli import REPO, run_rig

GOOD = (REPO / "campaigns" / "default.yaml").read_text()


def test_unknown_lte_profile_is_refused_before_anything_is_written(tmp_path, rig_prefix):
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("lte_profile: band7-10mhz", "lte_profile: band99-1mhz"))
    out = tmp_path / "results"
    p = run_rig("campaign", "run", str(bad), "--out", str(out), "--prefix", rig_prefix)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert f"{bad}: lte_profile: unknown LTE profile 'band99-1mhz'" in p.stderr
    assert not out.exists()
    from rig.rigs.emulated import netns
    assert netns.with_prefix(rig_prefix) == []
