"""Expanding a campaign into its ordered, deterministic list of runs.

Runs are the full product of setups x factors x repetitions, but a single-homed cell once, with no
path policy (a sender with one path has no choice to make). They are grouped into blocks by
the campaign's blocking factors (blocks in the order the levels are listed), and shuffled
inside each block with a generator seeded from the campaign's seed and the block, so the same
file always gives the same plan, on any machine.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property

from rig.model.campaign import GRID_FACTORS, Campaign, load_campaign
from rig.core.errors import InputError
from rig.model.profiles import lte_profile, lte_profiles, wifi_profile, wifi_profiles
from rig.model.spec import Run
from rig.core.units import format_duration, format_size


def _new_run(values: dict) -> Run:
    """Run(**values), without the frozen dataclass's __init__, which sets each field through
    object.__setattr__: 4 us a run, most of the time a 100,000-run plan takes to expand.
    `values` holds every field (expand builds them); the object is the same."""
    run = object.__new__(Run)
    run.__dict__.update(values)
    return run


@dataclass(frozen=True)
class Plan:
    campaign: Campaign
    runs: tuple[Run, ...]

    @cached_property  # --resume compares it with every earlier campaign directory's
    def digest(self) -> str:
        """Identifies the plan: a resumed campaign must have the same one."""
        body = json.dumps([r.to_dict() for r in self.runs], sort_keys=True).encode()
        return hashlib.sha256(body).hexdigest()[:16]

    def to_dict(self) -> dict:
        return {
            "campaign": self.campaign.name,
            "seed": self.campaign.seed,
            "digest": self.digest,
            "runs": [r.to_dict() for r in self.runs],
        }


def _decimal(x: float, shift: int = 0) -> str:
    """`x` x 10^shift in plain decimal digits, as exact as the float (0.00001, not 1e-05): two
    levels never share a spelling."""
    return format(Decimal(repr(float(x))).scaleb(shift).normalize(), "f")


def _grid_names(levels: dict) -> list[str]:
    """Seed 003's grid in a run id: r<Mbit/s>Mbps, wifiloss<%> or lteloss<%>; absent levels add nothing."""
    out = [f"r{_decimal(levels['link_rate_bps'], -6)}Mbps"] if levels["link_rate_bps"] is not None else []
    return out + [f"{path}loss{_decimal(levels[f'{path}_loss_pct'])}" for path in ("wifi", "lte")
                  if levels[f"{path}_loss_pct"] is not None]


def _run_id(levels: dict, repetition: int) -> str:
    amount = format_size(levels["volume"]) if levels["duration"] is None else format_duration(levels["duration"])
    policies = [f"bk{levels['backup']}"] if levels["backup"] != "none" else []
    policies += [levels["policy"]] if levels["policy"] != "none" else []
    return "-".join([levels["setup"], levels["homing"], levels["cc"], f"c{levels['connections']}", amount,
                     "b" + format_size(levels["rcvbuf"]), levels["wifi_standard"], *_grid_names(levels), *policies,
                     f"{repetition:02d}"])


def check_profiles(campaign: Campaign, source: str) -> None:
    """Every radio profile the campaign names exists and is valid (a bad profile file is named)."""

    known = set(wifi_profiles())
    for i, std in enumerate(campaign.factors.wifi_standard):
        if std not in known:
            raise InputError(source, f"factors.wifi_standard[{i}]", f"unknown WiFi profile {std!r} (known: {', '.join(sorted(known))})")
        wifi_profile(std)
    if campaign.lte_profile not in lte_profiles():
        raise InputError(source, "lte_profile", f"unknown LTE profile {campaign.lte_profile!r} "
                                                f"(known: {', '.join(lte_profiles())})")
    lte_profile(campaign.lte_profile)


def _single_homed_once(cells: list[dict]) -> list[dict]:
    """The cells with each single-homed one planned once, under no path policy: a policy (backup,
    loss-aware) decides among a sender's paths, and a single-homed sender has one. In order of
    first appearance."""
    seen, out = set(), []
    for cell in cells:
        if cell["homing"] != "dual":
            cell = {**cell, "backup": "none", "policy": "none"}
        key = tuple(cell.values())
        if key not in seen:
            seen.add(key)
            out.append(cell)
    return out


def expand(campaign: Campaign, source: str = "campaign") -> Plan:
    """The runs in execution order; the campaign's radio profiles are checked first."""
    check_profiles(campaign, source)
    levels = {"setup": campaign.setups, **{name: values for name, values in campaign.factors}}
    # A run sends a volume or for a duration: the one not in use is a single None level.
    if campaign.factors.duration:
        levels["volume"] = [None]
    else:
        levels["duration"] = [None]
    for name in GRID_FACTORS:  # not given: a single None level (the campaign's own links and events)
        levels[name] = levels[name] or [None]
    names = list(levels)
    cells = _single_homed_once([dict(zip(names, combo)) for combo in itertools.product(*levels.values())])

    # What a run takes from its cell, built once per cell (the id up to the repetition included).
    cell_fields = [{
        "setup": cell["setup"], "homing": cell["homing"], "cc": cell["cc"], "connections": cell["connections"],
        "volume_bytes": cell["volume"], "rcvbuf_bytes": cell["rcvbuf"], "wifi_standard": cell["wifi_standard"],
        "pairs": campaign.pairs, "duration_s": cell["duration"], "backup": cell["backup"], "policy": cell["policy"],
        **{name: cell[name] for name in GRID_FACTORS}, "run_id": _run_id(cell, 0)[:-2],
    } for cell in cells]

    blocks: dict[tuple, list[tuple[int, int]]] = {}
    for i, cell in enumerate(cells):
        key = tuple(cell[b] for b in campaign.blocking)
        blocks.setdefault(key, []).extend((i, rep) for rep in range(1, campaign.repetitions + 1))

    runs: list[Run] = []
    for key, members in blocks.items():
        block = "/".join(str(k) for k in key) or "all"
        random.Random(f"{campaign.seed}:{block}").shuffle(members)
        for i, rep in members:
            fields = cell_fields[i]
            runs.append(_new_run({**fields, "run_id": f"{fields['run_id']}{rep:02d}", "index": len(runs),
                                  "block": block, "repetition": rep}))
    return Plan(campaign, tuple(runs))


def load_plan(path) -> Plan:
    """The campaign file at `path`, validated and expanded (rig.model.campaign.load_campaign + expand)."""

    return expand(load_campaign(path), str(path))
