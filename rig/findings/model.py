"""The findings file: a typed model of a paper's claims, and loading that reports bad input as
one line (file, field, problem), like the campaign file (rig.model.campaign)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from analysis.factors import fmt
from rig.core.errors import InputError
from rig.core.repo import REPO
from rig.core.units import parse_duration, parse_size
from rig.model.campaign import load_campaign
from rig.model.inputfile import parse_model, read_input
from rig.model.spec import StrictModel

FINDINGS_DIR = REPO / "campaigns" / "findings"
CAMPAIGNS_DIR = REPO / "campaigns"
TWIN = "-emulated"  # a campaign's twin for the emulated rig: <name>-emulated (docs/studies.md)

# A condition's factor -> (runs column, how its level is written in a findings file)
FACTORS = {
    "campaign": ("campaign", str), "setup": ("setup", str), "homing": ("homing", str), "cc": ("cc", str),
    "connections": ("connections", int), "volume": ("volume_bytes", parse_size),
    "rcvbuf": ("rcvbuf_bytes", parse_size), "duration": ("duration_s", parse_duration),
    "wifi_standard": ("wifi_standard", str), "backup": ("backup", str), "policy": ("policy", str),
    "link_rate_bps": ("link_rate_bps", float), "wifi_loss_pct": ("wifi_loss_pct", float),
    "lte_loss_pct": ("lte_loss_pct", float),
}

Level = str | int | float
Condition = dict[str, Level | list[Level]]


def parse_level(factor: str, value: object) -> object:
    """A level as the runs table holds it (15MB -> 15000000); ValueError if it is not one."""
    kind = FACTORS[factor][1]
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"{value!r} is not a level of {factor}")
    if kind is str:
        return str(value)
    if kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a number") from None
    return kind(value)


def _check_condition(v: Condition) -> Condition:
    """Its levels are levels of their factors (an unknown factor is named by _check_claim)."""
    for factor, levels in v.items():
        if factor not in FACTORS:
            continue
        for level in levels if isinstance(levels, list) else [levels]:
            parse_level(factor, level)
    return v


class Expect(StrictModel):
    """What the claim says of its effect: a direction (difference, trend), or a bound or a value
    with a relative tolerance (mean, ratio). Exactly one of them."""

    direction: Literal["greater", "less", "increasing", "decreasing"] | None = None
    above: float | None = None
    below: float | None = None
    near: float | None = None
    tolerance: float | None = Field(default=None, gt=0, lt=1)

    @model_validator(mode="after")
    def _one(self) -> "Expect":
        given = [k for k in ("direction", "above", "below", "near") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of direction, above, below, near")
        if (self.near is None) != (self.tolerance is None):
            raise ValueError("near needs a tolerance (relative, e.g. 0.15) and tolerance needs near")
        if self.near == 0:
            raise ValueError("near must not be 0 (the tolerance is relative)")
        return self


class Claim(StrictModel):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")
    quote: str = Field(min_length=1)          # the paper's words
    source: str = Field(min_length=1)         # section, figure or table
    campaigns: list[str] = Field(min_length=1)  # evaluated on these campaigns (and their -emulated twins)
    metric: str                               # a name of rig.findings.metrics.METRICS
    where: Condition = {}                     # every run compared: these levels (a list: any of them)
    for_each: list[str] = []                  # a verdict per level (combination) of these factors
    test: Literal["mean", "difference", "ratio", "trend"]
    a: Condition = {}                         # difference, ratio: a vs b
    b: Condition = {}
    best: Literal["min", "max"] | None = None  # b lists levels: compare with the best of them
    factor: str | None = None                 # trend: over this factor's levels ...
    levels: list[Level] = []                  # ... these, in this order (default: the campaign's)
    expect: Expect
    paper: float | None = None                # the paper's number for the effect, in the metric's unit
    min_runs: int | None = Field(default=None, ge=2, le=10_000)  # valid runs per condition (default: the file's)
    note: str = ""

    @field_validator("where", "a", "b")
    @classmethod
    def _conditions(cls, v: Condition) -> Condition:
        return _check_condition(v)

    @field_validator("for_each")
    @classmethod
    def _for_each(cls, v: list[str]) -> list[str]:
        bad = [f for f in v if f not in FACTORS]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a factor (one of {', '.join(FACTORS)})")
        return v

    @model_validator(mode="after")
    def _shape(self) -> "Claim":
        d = self.expect.direction
        if self.test in ("difference", "ratio"):
            if not self.a or not self.b:
                raise ValueError(f"a {self.test} test compares conditions a and b: give both")
            if self.best and not any(isinstance(x, list) and len(x) > 1 for x in self.b.values()):
                raise ValueError("best picks among the levels b lists: give b a list of levels")
        elif self.a or self.b or self.best:
            raise ValueError(f"a {self.test} test has no conditions a, b or best (use where)")
        if self.test == "trend":
            if self.factor not in FACTORS:
                raise ValueError("a trend test needs factor: the factor whose levels it runs over")
            for level in self.levels:
                parse_level(self.factor, level)
            if d not in ("increasing", "decreasing"):
                raise ValueError("a trend test expects direction: increasing or decreasing")
        elif self.factor is not None or self.levels:
            raise ValueError("factor and levels belong to a trend test")
        if self.test == "difference" and d not in ("greater", "less"):
            raise ValueError("a difference test expects direction: greater (a > b) or less (a < b)")
        if self.test in ("mean", "ratio") and d is not None:
            raise ValueError(f"a {self.test} test expects above, below or near (with tolerance)")
        if self.test == "ratio" and any(x is not None and x <= 0 for x in (self.expect.above, self.expect.below)):
            raise ValueError("a ratio's bound must be above 0")
        return self


class Findings(StrictModel):
    study: str = Field(pattern=r"^[0-9]{3}$")   # the seed's number
    title: str = Field(min_length=1)
    min_runs: int = Field(default=5, ge=2, le=10_000)
    claims: list[Claim] = Field(min_length=1)

    @field_validator("claims")
    @classmethod
    def _unique(cls, v: list[Claim]) -> list[Claim]:
        ids = [c.id for c in v]
        repeated = next((i for n, i in enumerate(ids) if i in ids[:n]), None)
        if repeated:
            raise ValueError(f"claim id {repeated!r} given twice")
        return v


def conditions(claim: Claim) -> dict[str, Condition]:
    """The claim's conditions by the field that names them."""
    return {"where": claim.where, "a": claim.a, "b": claim.b}


def _check_claim(claim: Claim, i: int, source: str, campaigns: dict) -> None:
    """What the model cannot check alone: the metric is known and fits the campaign's runs, each
    campaign has a file in campaigns/, each factor and level is one the campaign varies."""
    from rig.findings.metrics import METRICS  # the registry imports analysis: only once a file parsed

    where = f"claims[{i}]"
    if claim.metric not in METRICS:
        raise InputError(source, f"{where}.metric", f"unknown metric {claim.metric!r} (known: {', '.join(sorted(METRICS))})")
    metric = METRICS[claim.metric]
    for k, name in enumerate(claim.campaigns):
        if name not in campaigns:
            f = CAMPAIGNS_DIR / f"{name}.yaml"
            if not f.is_file():
                raise InputError(source, f"{where}.campaigns[{k}]", f"no campaign file {f.relative_to(REPO)}")
            campaigns[name] = load_campaign(f)
        c = campaigns[name]
        time_runs = bool(c.factors.duration)
        if metric.runs == "time" and not time_runs or metric.runs == "volume" and time_runs:
            raise InputError(source, f"{where}.metric", f"{claim.metric} needs {metric.runs} runs; {name} has "
                             f"{'time' if time_runs else 'volume'} runs")
        used = [(f"{field}.{factor}", factor, levels) for field, cond in conditions(claim).items()
                for factor, levels in cond.items()]
        used += [(f"for_each[{j}]", factor, []) for j, factor in enumerate(claim.for_each)]
        if claim.factor:
            used.append(("factor", claim.factor, claim.levels))
        for field, factor, levels in used:
            if factor not in FACTORS:
                raise InputError(source, f"{where}.{field}", f"not a factor (one of {', '.join(FACTORS)})")
            known = campaign_levels(c, factor)
            if known is None:
                raise InputError(source, f"{where}.{field}", f"{name} does not vary {factor}")
            for level in levels if isinstance(levels, list) else [levels]:
                value = parse_level(factor, level)
                if not any(same(value, x) for x in known):
                    raise InputError(source, f"{where}.{field}", f"{name} has no level {level!r} "
                                     f"(its levels: {', '.join(map(str, known))})")


def campaign_levels(campaign, factor: str) -> list | None:
    """The levels a campaign file gives a factor (None: it does not vary it)."""
    if factor == "campaign":
        return [campaign.name, campaign.name + TWIN]
    if factor == "setup":
        return list(campaign.setups)
    if factor in ("link_rate_bps", "wifi_loss_pct", "lte_loss_pct", "duration"):
        return list(getattr(campaign.factors, factor)) or None
    return list(getattr(campaign.factors, factor))


def level_text(factor: str, value: object) -> str:
    """A level as tables show it: 15 MB, 1000 KB, 20 Mbit/s, 0.1 (%), 25s."""
    if factor == "link_rate_bps" and isinstance(value, (int, float)):
        return f"{value / 1e6:g} Mbit/s"
    if factor == "duration" and isinstance(value, (int, float)):
        return f"{value:g}s"
    if isinstance(value, float):
        return f"{value:g}"
    return fmt(FACTORS[factor][0], value)


def same(x: object, y: object) -> bool:
    if isinstance(x, (int, float)) and isinstance(y, (int, float)):
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)
    return x == y


def parse_findings(text: str, source: str) -> Findings:
    findings = parse_model(Findings, text, source, "findings")
    campaigns: dict = {}
    for i, claim in enumerate(findings.claims):
        _check_claim(claim, i, source, campaigns)
    return findings


def load_findings(path: Path) -> Findings:
    return parse_findings(read_input(path), str(path))


def shipped() -> list[Path]:
    """The findings files of the studies, campaigns/findings/*.yaml."""
    return sorted(FINDINGS_DIR.glob("*.yaml"))
