"""Means with 95 % confidence intervals over repetitions (Student's t, no SciPy needed)."""

from __future__ import annotations

import math
from dataclasses import dataclass

# Two-sided 95 % quantiles of Student's t, t(0.975, df), for df = 1..30.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
# Beyond the table, anchored values for interpolation in 1/df (exact to 3 decimals).
_T975_TAIL = ((40, 2.021), (60, 2.000), (120, 1.980), (math.inf, 1.960))


def t975(df: int) -> float:
    if df < 1:
        raise ValueError("need at least 2 samples for a confidence interval")
    if df <= len(_T975):
        return _T975[df - 1]
    lo_df, lo_t = 30, _T975[-1]
    for hi_df, hi_t in _T975_TAIL:
        if df <= hi_df:
            x = lambda d: 0.0 if math.isinf(d) else 1.0 / d  # noqa: E731
            return lo_t + (hi_t - lo_t) * (x(df) - x(lo_df)) / (x(hi_df) - x(lo_df))
        lo_df, lo_t = hi_df, hi_t
    return 1.960


@dataclass(frozen=True)
class MeanCI:
    mean: float
    half_width: float  # NaN with fewer than 2 samples
    n: int

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width


def mean_ci(values: list[float]) -> MeanCI:
    xs = [v for v in values if v is not None and math.isfinite(v)]
    n = len(xs)
    if n == 0:
        return MeanCI(math.nan, math.nan, 0)
    mean = sum(xs) / n
    if n < 2:
        return MeanCI(mean, math.nan, 1)
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    return MeanCI(mean, t975(n - 1) * sd / math.sqrt(n), n)
