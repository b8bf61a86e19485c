"""Splitting a campaign's plan into shards that run on several hosts (`--shard K/N`).

Every block is split among the N shards: the block's runs, in the plan's (shuffled) order, are
cut into N contiguous pieces of near-equal size, and shard K runs its piece of every block, in
plan order. So a shard builds each block's radio setup once, and each host runs a random share
of every block's conditions: no condition is confined to one host, whose speed or kernel would
otherwise be confounded with it. The split follows from the plan alone (not from estimates,
which change with the rig's version), so every host computes the same shards from the same file,
and a shard's directory is an ordinary campaign directory with the whole plan's plan.json and
digest (rig.store.merge joins them back).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rig.campaign.plan import Plan, Run
from rig.core.errors import InputError

_SPEC = re.compile(r"(\d+)/(\d+)")


@dataclass(frozen=True)
class Shard:
    index: int  # 1..count
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str, source: str = "command line", field: str = "--shard") -> Shard:
    """`K/N` with 1 <= K <= N."""
    m = _SPEC.fullmatch(text.strip())
    if not m:
        raise InputError(source, field, f"{text!r} is not K/N (e.g. 2/3: the second of three shards)")
    index, count = int(m[1]), int(m[2])
    if count < 1 or not 1 <= index <= count:
        raise InputError(source, field, f"{text!r}: K must be between 1 and N")
    return Shard(index, count)


def shard_numbers(plan: Plan, count: int) -> list[int]:
    """The shard (1..count) of each run of the plan, in plan order. A block's pieces go to the
    shards in turn, starting one shard later at each block, so the larger pieces of blocks that
    do not divide evenly are spread over the shards."""
    out: list[int] = []
    runs = plan.runs
    start, b = 0, 0
    while start < len(runs):
        end = start
        while end < len(runs) and runs[end].block == runs[start].block:
            end += 1
        size = end - start
        out += [(j * count // size + b) % count + 1 for j in range(size)]
        start, b = end, b + 1
    return out


def shard_runs(plan: Plan, shard: Shard) -> tuple[Run, ...]:
    """The runs of `shard`, in plan order; refused when the campaign has fewer runs than shards."""
    if shard.count > len(plan.runs):
        raise InputError("command line", "--shard", f"{shard}: the campaign {plan.campaign.name} has only "
                                                    f"{len(plan.runs)} run(s), fewer than {shard.count} shards")
    return tuple(r for r, k in zip(plan.runs, shard_numbers(plan, shard.count)) if k == shard.index)
