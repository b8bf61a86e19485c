"""The claims' tests: seeded bootstrap intervals over runs, vectorised with numpy.

Every interval is a 95 % percentile bootstrap over runs (REPLICATES resamples of each condition's
runs with replacement), from a generator seeded by the claim, so a verdict is the same on every
host and every call. A trend resamples the runs within each level and takes Spearman's rank
correlation between the level's position and the run's value.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

REPLICATES = 2000
LEVEL = 0.95
_CELLS = 4_000_000  # resampled values held at once (memory: 8 bytes each)


def generator(*parts: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32("|".join(parts).encode()))


def resampled_means(x: np.ndarray, rng: np.random.Generator, b: int = REPLICATES) -> np.ndarray:
    """b means of x resampled with replacement (in chunks, so a large x stays within memory)."""
    n = len(x)
    out = np.empty(b)
    step = max(1, _CELLS // max(n, 1))
    for start in range(0, b, step):
        rows = min(step, b - start)
        out[start:start + rows] = x[rng.integers(0, n, (rows, n))].mean(axis=1)
    return out


@dataclass(frozen=True)
class Estimate:
    effect: float
    low: float
    high: float


def _interval(effect: float, replicates: np.ndarray) -> Estimate:
    lo, hi = np.quantile(replicates, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return Estimate(float(effect), float(lo), float(hi))


def mean(x: np.ndarray, rng: np.random.Generator) -> Estimate:
    return _interval(x.mean(), resampled_means(x, rng))


def _pick(observed: list[float], replicates: list[np.ndarray], best: str | None) -> tuple[float, np.ndarray]:
    """b's mean: its pooled runs' (one array), or the best of its levels' in each replicate."""
    if len(replicates) == 1 or best is None:
        return observed[0], replicates[0]
    stack = np.vstack(replicates)
    return (min(observed), stack.min(axis=0)) if best == "min" else (max(observed), stack.max(axis=0))


def compare(a: np.ndarray, b: list[np.ndarray], best: str | None, ratio: bool, rng: np.random.Generator) -> Estimate:
    """mean(a) - mean(b) (or mean(a) / mean(b)), b the best of several conditions if `best` is given."""
    ra = resampled_means(a, rng)
    if best is None:
        b = [np.concatenate(b)]
    b_mean, rb = _pick([float(x.mean()) for x in b], [resampled_means(x, rng) for x in b], best)
    if ratio:
        with np.errstate(divide="ignore", invalid="ignore"):
            return _interval(a.mean() / b_mean if b_mean else np.nan, ra / rb)
    return _interval(a.mean() - b_mean, ra - rb)


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks along the last axis (ties in order of position)."""
    return np.argsort(np.argsort(x, axis=-1, kind="stable"), axis=-1, kind="stable").astype(float)


def _spearman(level_ranks: np.ndarray, y: np.ndarray) -> np.ndarray:
    yr = _ranks(y)
    xc = level_ranks - level_ranks.mean()
    yc = yr - yr.mean(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (yc @ xc) / np.sqrt((yc ** 2).sum(axis=-1) * (xc ** 2).sum())


def trend(levels: list[np.ndarray], rng: np.random.Generator, b: int = REPLICATES) -> Estimate:
    """Spearman's rho between a run's level (its position in `levels`) and its value."""
    counts = [len(x) for x in levels]
    # the level's rank is the mean rank of its runs (ties): fixed, since each level keeps its count
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    level_ranks = np.repeat(starts + (np.array(counts) - 1) / 2, counts)
    observed = float(_spearman(level_ranks, np.concatenate(levels)))
    rows = max(1, _CELLS // max(sum(counts), 1))
    reps = []
    for start in range(0, b, rows):
        k = min(rows, b - start)
        reps.append(_spearman(level_ranks, np.hstack([x[rng.integers(0, len(x), (k, len(x)))] for x in levels])))
    return _interval(observed, np.concatenate(reps))
