"""Shards of a campaign (`--shard K/N`): every run in exactly one shard, each shard a share of every
block in plan order, the same split from the same file; a shard's directory resumes as itself."""

from __future__ import annotations

from collections import Counter

import pytest

from fixtures.cli import run_rig
from rig.campaign.plan import expand
from rig.campaign.shards import Shard, parse_shard, shard_numbers, shard_runs
from rig.core.errors import InputError
from rig.model.campaign import parse_campaign
from rig.store.synthetic import synthetic_record, write_shard
from rig.store.writer import CampaignStore

TEXT = "name: sh\nsetups: [I, II, III]\npairs: 1\nrepetitions: 7\nseed: 5\nfactors: {homing: [dual, lte, wifi]}\n"


@pytest.mark.parametrize("count", [1, 2, 3, 5, 63])
def test_every_run_is_in_one_shard_and_each_shard_has_a_share_of_every_block(count):
    plan = expand(parse_campaign(TEXT, "t"))
    shards = [shard_runs(plan, Shard(k, count)) for k in range(1, count + 1)]
    ids = [r.run_id for part in shards for r in part]
    assert sorted(ids) == sorted(r.run_id for r in plan.runs)
    for part in shards:
        assert [r.index for r in part] == sorted(r.index for r in part)  # plan order
        blocks = [r.block for r in part]
        # each block's runs in one stretch: its radio setup is built once per shard
        assert len([b for i, b in enumerate(blocks) if i == 0 or blocks[i - 1] != b]) == len(set(blocks))
    for block, size in Counter(r.block for r in plan.runs).items():
        shares = [sum(r.block == block for r in part) for part in shards]
        assert max(shares) - min(shares) <= 1, (block, shares)
    sizes = [len(part) for part in shards]
    assert max(sizes) - min(sizes) <= 1, sizes  # the larger pieces of blocks go to the shards in turn


def test_the_split_follows_from_the_file_alone():
    a, b = expand(parse_campaign(TEXT, "t")), expand(parse_campaign(TEXT, "t"))
    assert shard_numbers(a, 3) == shard_numbers(b, 3)
    # a piece of a block is a stretch of its shuffled order: a shard gets a mix of its conditions
    homings = {r.homing for r in shard_runs(a, Shard(2, 3)) if r.setup == "I"}
    assert len(homings) >= 2


@pytest.mark.parametrize("text, problem", [("2", "not K/N"), ("0/3", "between 1 and N"), ("4/3", "between 1 and N"),
                                           ("1/0", "between 1 and N"), ("a/b", "not K/N")])
def test_a_bad_shard_is_refused(text, problem):
    with pytest.raises(InputError, match=problem):
        parse_shard(text)


def test_more_shards_than_runs_is_refused():
    plan = expand(parse_campaign(TEXT.replace("repetitions: 7", "repetitions: 1"), "t"))
    with pytest.raises(InputError, match=r"only 9 run\(s\), fewer than 10 shards"):
        shard_runs(plan, Shard(1, 10))


def test_a_shard_resumes_its_own_directory_only(tmp_path):
    plan = expand(parse_campaign(TEXT, "t"))
    one, two = shard_runs(plan, Shard(1, 2)), shard_runs(plan, Shard(2, 2))
    first = write_shard(tmp_path, plan, one[:3], TEXT, "1/2")
    assert CampaignStore.find_resumable(tmp_path, plan, "1/2", {r.run_id for r in one}).root == first.root
    assert CampaignStore.find_resumable(tmp_path, plan, "2/2", {r.run_id for r in two}) is None
    assert CampaignStore.find_resumable(tmp_path, plan) is None  # a whole-campaign --resume leaves shards alone
    for run in one[3:]:
        first.write_run(synthetic_record(run))
    assert CampaignStore.find_resumable(tmp_path, plan, "1/2", {r.run_id for r in one}) is None  # finished


def test_plan_prints_each_shards_estimate_against_the_whole(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(TEXT)
    out = run_rig("campaign", "plan", str(f), "--shards", "3", check=True).stdout.splitlines()
    assert out[0].startswith("campaign sh: 63 runs") and "plan digest" in out[0]
    assert [line.split(":")[0] for line in out[1:4]] == ["shard 1/3", "shard 2/3", "shard 3/3"]
    assert all("21 runs, 3 block(s)" in line and "of the whole campaign's" in line for line in out[1:4])
    assert out[4].startswith("whole campaign: estimated duration")
    listing = run_rig("campaign", "plan", str(f), "--shard", "2/3", check=True).stdout.splitlines()
    assert len(listing) == 1 + 1 + 21 + 1 and listing[-1].startswith("shard 2/3: 21 runs, estimated duration")
