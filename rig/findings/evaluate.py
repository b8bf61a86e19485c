"""Claims and campaign data to verdicts: held, not held or inconclusive, with the effect, its
95 % interval and the valid runs per condition.

A claim is evaluated on each campaign it names and on its emulated twin (<name>-emulated)
separately. Inconclusive: a condition has fewer valid runs than the claim needs, or the interval
reaches across the expectation's bound (for a direction: includes 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from rig.findings import stats
from rig.findings.data import PARAM_ONLY, CampaignData
from rig.findings.metrics import METRICS
from rig.findings.model import (CAMPAIGNS_DIR, FACTORS, TWIN, Claim, Findings, campaign_levels, conditions, level_text,
                                parse_level)
from rig.model.campaign import load_campaign

HELD, NOT_HELD, INCONCLUSIVE, NOT_EVALUATED = "held", "not held", "inconclusive", "not evaluated"


@dataclass
class Verdict:
    study: str
    claim: Claim
    campaign: str | None          # the campaign whose runs were used (None: not evaluated)
    group: str                    # the for_each levels ("" without for_each)
    verdict: str
    effect: float | None = None   # in the metric's unit (a ratio or rho: as is)
    low: float | None = None
    high: float | None = None
    n: dict[str, int] = field(default_factory=dict)  # valid runs per condition
    reason: str = ""

    @property
    def rel_error(self) -> float | None:
        """(the rig's - the paper's) / the paper's, where the paper gives the number."""
        p = self.claim.paper
        return None if p in (None, 0) or self.effect is None else (self.effect - p) / abs(p)


def _key(v: object) -> object:
    """A level's canonical form, for matching runs to a condition."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float, np.integer, np.floating)):
        return round(float(v), 9)
    return str(v)


class Table:
    """One campaign's runs as columns of codes, for vectorised selection."""

    def __init__(self, data: CampaignData):
        self.data = data
        self._codes: dict[str, tuple[np.ndarray, dict]] = {}
        self._metrics: dict[str, np.ndarray] = {}
        self.keys = list(data.runs)

    def column(self, column: str) -> tuple[np.ndarray, dict]:
        if column not in self._codes:
            codes: dict = {}
            arr = np.fromiter((codes.setdefault(_key(r.get(column)), len(codes)) for r in self.data.runs.values()),
                              dtype=np.int64, count=len(self.keys))
            self._codes[column] = (arr, codes)
        return self._codes[column]

    def metric(self, name: str) -> np.ndarray:
        if name not in self._metrics:
            values = METRICS[name].compute(self.data)
            self._metrics[name] = np.fromiter((values.get(k, np.nan) for k in self.keys), dtype=float, count=len(self.keys))
        return self._metrics[name]

    def select(self, condition: dict) -> np.ndarray:
        mask = np.ones(len(self.keys), dtype=bool)
        for factor, levels in condition.items():
            column = FACTORS[factor][0]
            arr, codes = self.column(column)
            wanted = [codes.get(_key(parse_level(factor, x))) for x in (levels if isinstance(levels, list) else [levels])]
            mask &= np.isin(arr, [c for c in wanted if c is not None])
        return mask

    def levels(self, factor: str, mask: np.ndarray, where: dict) -> list:
        """The factor's levels: those the campaign file plans (within `where`'s), in its order, then
        any other the selected runs have - so a level whose runs all failed still gets its row."""
        column = FACTORS[factor][0]
        seen = {_key(r.get(column)): r.get(column) for r, m in zip(self.data.runs.values(), mask) if m}
        planned = planned_levels(self.data.name, factor) or []
        if factor in where:
            wanted = {_key(parse_level(factor, x)) for x in (where[factor] if isinstance(where[factor], list) else [where[factor]])}
            planned = [v for v in planned if _key(v) in wanted]
        rest = sorted((v for k, v in seen.items() if k not in {_key(p) for p in planned}),
                      key=lambda v: (v is None, v if isinstance(v, (int, float)) else str(v)))
        return planned + rest


@lru_cache(maxsize=None)
def _campaign_file(name: str):
    f = CAMPAIGNS_DIR / f"{name}.yaml"
    return load_campaign(f) if f.is_file() else None


def planned_levels(name: str, factor: str) -> list | None:
    """The levels campaigns/<name>.yaml gives a factor (None: no such file, or it does not vary it)."""
    campaign = _campaign_file(name) if factor != "campaign" else None
    return campaign_levels(campaign, factor) if campaign is not None else None


def _label(factor: str, value: object) -> str:
    return f"{factor} {level_text(factor, value)}"


def _judge(claim: Claim, est: stats.Estimate) -> tuple[str, str]:
    e = claim.expect
    lo, hi = est.low, est.high
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return INCONCLUSIVE, "no finite interval"
    if e.direction is not None:
        up = e.direction in ("greater", "increasing")
        if lo > 0 or hi < 0:
            return (HELD, "") if (lo > 0) == up else (NOT_HELD, "the interval excludes 0 on the other side")
        return INCONCLUSIVE, "the interval includes 0"
    if e.above is not None:
        if lo > e.above:
            return HELD, ""
        return (NOT_HELD, f"the interval is below {e.above:g}") if hi < e.above else (INCONCLUSIVE, f"the interval includes {e.above:g}")
    if e.below is not None:
        if hi < e.below:
            return HELD, ""
        return (NOT_HELD, f"the interval is above {e.below:g}") if lo > e.below else (INCONCLUSIVE, f"the interval includes {e.below:g}")
    band = sorted((e.near * (1 - e.tolerance), e.near * (1 + e.tolerance)))
    if band[0] <= lo and hi <= band[1]:
        return HELD, ""
    if hi < band[0] or lo > band[1]:
        return NOT_HELD, f"the interval lies outside {band[0]:.4g}..{band[1]:.4g}"
    return INCONCLUSIVE, f"the interval reaches outside {band[0]:.4g}..{band[1]:.4g}"


def _evaluate_group(claim: Claim, table: Table, mask: np.ndarray, min_runs: int, seed: tuple[str, ...]) -> tuple:
    """(verdict, estimate or None, n per condition, reason) for the runs under `mask`."""
    values = table.metric(claim.metric)
    mask = mask & np.isfinite(values)
    rng = stats.generator(*seed)
    if claim.test == "mean":
        n = {"runs": int(mask.sum())}
        samples = [values[mask]]
    elif claim.test == "trend":
        levels = [parse_level(claim.factor, x) for x in claim.levels] or table.levels(claim.factor, mask, claim.where)
        samples = [values[mask & table.select({claim.factor: [lv]})] for lv in levels]
        n = {level_text(claim.factor, lv): len(s) for lv, s in zip(levels, samples)}
    else:
        a = values[mask & table.select(claim.a)]
        b_levels = next(((f, v) for f, v in claim.b.items() if isinstance(v, list) and len(v) > 1), None)
        if claim.best and b_levels:
            f, vs = b_levels
            bs = [values[mask & table.select({**claim.b, f: [v]})] for v in vs]
            n = {"a": len(a), **{f"b {level_text(f, parse_level(f, v))}": len(x) for v, x in zip(vs, bs)}}
        else:
            bs = [values[mask & table.select(claim.b)]]
            n = {"a": len(a), "b": len(bs[0])}
        samples = [a, *bs]
    fewest = min(len(s) for s in samples) if samples else 0
    if len(samples) < (2 if claim.test == "trend" else 1) or fewest < 2:
        return INCONCLUSIVE, None, n, f"too few valid runs ({fewest} < {min_runs})" if samples else "no levels"
    if claim.test == "mean":
        est = stats.mean(samples[0], rng)
    elif claim.test == "trend":
        est = stats.trend(samples, rng)
    else:
        est = stats.compare(samples[0], samples[1:], claim.best, claim.test == "ratio", rng)
    if fewest < min_runs:  # the interval is shown, but it is no evidence yet
        return INCONCLUSIVE, est, n, f"too few valid runs ({fewest} < {min_runs})"
    verdict, reason = _judge(claim, est)
    return verdict, est, n, reason


def evaluate_claim(study: str, claim: Claim, table: Table, min_runs: int) -> list[Verdict]:
    where = table.select(claim.where)
    groups: list[tuple[str, np.ndarray]] = [("", where)]
    for factor in claim.for_each:
        groups = [(", ".join(x for x in (label, _label(factor, lv)) if x), mask & table.select({factor: [lv]}))
                  for label, mask in groups for lv in table.levels(factor, mask, claim.where)]
    out = []
    for label, mask in groups:
        verdict, est, n, reason = _evaluate_group(claim, table, mask, claim.min_runs or min_runs,
                                                  (study, claim.id, table.data.name, label))
        out.append(Verdict(study, claim, table.data.name, label, verdict, *(
            (est.effect, est.low, est.high) if est else (None, None, None)), n=n, reason=reason))
    return out


def _columns(claim: Claim) -> set[str]:
    factors = {f for cond in conditions(claim).values() for f in cond} | set(claim.for_each)
    return {FACTORS[f][0] for f in factors | ({claim.factor} if claim.factor else set())}


def _matches(name: str, claim: Claim) -> bool:
    return any(name in (c, c + TWIN) for c in claim.campaigns)


def evaluate(findings: list[tuple[str, Findings]], data: dict[str, CampaignData]) -> list[Verdict]:
    """Every claim of every findings file on every campaign given that it names (or its twin);
    a claim with no such campaign is one `not evaluated` row."""
    claims = [(f, c) for _, f in findings for c in f.claims]
    for name, d in data.items():
        if any(_matches(name, c) and _columns(c) & set(PARAM_ONLY) for _, c in claims):
            d.add_params()
    tables = {name: Table(d) for name, d in data.items()}
    out = []
    for f, claim in claims:
        names = [n for n in tables if _matches(n, claim)]
        if not names:
            out.append(Verdict(f.study, claim, None, "", NOT_EVALUATED,
                               reason=f"no runs of {' or '.join(claim.campaigns)} given"))
        for name in names:
            out += evaluate_claim(f.study, claim, tables[name], f.min_runs)
    return out
