"""Robust, non-parametric statistics for bench samples: noise, a rank test, a shift interval.

Changes are estimated on the log scale, so a shift is a ratio: `-10%` means the candidate's
typical run takes 0.9 times the baseline's, whatever the spread of either arm.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from .dist import norm_ppf, special, t_cdf, t_ppf, t_sf
from .percent import ratio_pct
from .ranks import mann_whitney

__all__ = [
    "MAD_TO_SIGMA",
    "POOL_F",
    "Comparison",
    "compare",
    "compare_paired",
    "robust_cv_pct",
]

MAD_TO_SIGMA = 1.4826  # MAD times this estimates the standard deviation of normal data
# An experiment's pairs are pooled with the calibration's unless their variance is larger at
# this level: pooling a candidate that adds noise would make its decisions too sure.
POOL_F = 0.95


def robust_cv_pct(samples: list[float]) -> float | None:
    """Robust coefficient of variation in percent: 1.4826 x MAD / median."""
    if len(samples) < 2:
        return None
    values = np.asarray(samples, dtype=float)
    median = float(np.median(values))
    if median == 0:
        return None
    mad = float(np.median(np.abs(values - median)))
    return 100.0 * MAD_TO_SIGMA * mad / abs(median)


class Estimate(TypedDict):
    """A comparison's medians and change with its interval, by the names evidence gives them."""

    baseline_median: float
    candidate_median: float
    change_pct: float
    ci_low_pct: float
    ci_high_pct: float


@dataclass(frozen=True)
class Comparison:
    """Candidate against baseline for one metric. Changes are percent, candidate vs baseline."""

    n_baseline: int
    n_candidate: int
    baseline_median: float
    candidate_median: float
    change_pct: float  # Hodges-Lehmann shift of the log values, as a percent
    ci_low_pct: float
    ci_high_pct: float
    confidence: float
    p_lower: float  # one-sided p that the candidate tends lower
    p_higher: float  # ... that it tends higher
    paired: bool = False  # from within-pair ratios (a t-test) or from the two arms (ranks)
    se_pct: float | None = None  # the standard error of the paired mean log ratio, in percent
    df: int | None = None  # the paired t-test's degrees of freedom
    pooled: bool = False  # its variance pooled with the calibration's A/A pairs

    def estimate(self) -> Estimate:
        """The medians and the change with its interval, as the evidence built from it names
        them (journal/evidence.py, journal/decision.py)."""
        return {
            "baseline_median": self.baseline_median,
            "candidate_median": self.candidate_median,
            "change_pct": self.change_pct,
            "ci_low_pct": self.ci_low_pct,
            "ci_high_pct": self.ci_high_pct,
        }


def compare(baseline: list[float], candidate: list[float], confidence: float) -> Comparison | None:
    """Mann-Whitney U both ways, and the Hodges-Lehmann shift with its confidence interval.

    None when either arm has fewer than two samples or a value that is not positive: an unknown
    comparison is never significant.
    """
    if len(baseline) < 2 or len(candidate) < 2:
        return None
    x = np.asarray(baseline, dtype=float)
    y = np.asarray(candidate, dtype=float)
    if (x <= 0).any() or (y <= 0).any():
        return None
    lx, ly = np.log(x), np.log(y)
    shift, low, high = _hodges_lehmann(lx, ly, confidence)
    p_lower, p_higher = mann_whitney(ly.tolist(), lx.tolist())
    return Comparison(
        n_baseline=len(x),
        n_candidate=len(y),
        baseline_median=float(np.median(x)),
        candidate_median=float(np.median(y)),
        change_pct=ratio_pct(shift),
        ci_low_pct=ratio_pct(low),
        ci_high_pct=ratio_pct(high),
        confidence=confidence,
        p_lower=p_lower,
        p_higher=p_higher,
    )


def _hodges_lehmann(x: np.ndarray, y: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """The median of all pairwise differences y_j - x_i, and Lehmann's distribution-free
    interval from their order statistics (normal approximation to the rank-sum's spread)."""
    diffs = np.sort(np.subtract.outer(y, x).ravel())
    m, n = len(x), len(y)
    estimate = float(np.median(diffs))
    z = norm_ppf(0.5 + confidence / 2)
    k = math.floor(m * n / 2 - z * math.sqrt(m * n * (m + n + 1) / 12))
    k = min(max(k, 0), len(diffs) - 1)
    return estimate, float(diffs[k]), float(diffs[len(diffs) - 1 - k])


def compare_paired(
    baseline: list[float],
    candidate: list[float],
    confidence: float,
    prior: tuple[float, int] | None = None,
) -> Comparison | None:
    """The within-pair log ratios log(c_i / b_i) of runs made side by side: their mean is the
    change (a geometric-mean ratio), with a t interval and one-sided t-test p values.

    Anything that moves both runs of a pair alike (load that changes slower than one pair, a
    step in the middle of the night) cancels in the ratio; the pairs' spread is what is left.
    A rank test on the pairs (Wilcoxon's signed rank) cannot reach p < 2^-n with n pairs, so
    it could not decide before about ten pairs at the alpha of an early look; the t-test on
    log ratios can, and the calibration suite (benchmarks/decision_calibration.py) shows its
    false keeps stay under alpha under heavy-tailed, bimodal, drifting and stepped noise.
    `prior`: the sum of squares and degrees of freedom of the calibration's A/A pairs (the
    same bench, the same best in both arms). Their variance is pooled with these pairs' (more
    degrees of freedom: an early look can decide) unless these pairs are shown noisier
    (an F test at POOL_F): a candidate that adds noise is judged by its own spread.
    None when there are fewer than two pairs, the arms differ in length, or a value is not
    positive.
    """
    n = len(baseline)
    if n < 2 or len(candidate) != n:
        return None
    x = np.asarray(baseline, dtype=float)
    y = np.asarray(candidate, dtype=float)
    if (x <= 0).any() or (y <= 0).any():
        return None
    d = np.log(y) - np.log(x)
    mean = float(d.mean())
    variance, df, pooled = _pair_variance(float(((d - mean) ** 2).sum()), n - 1, prior)
    # Identical runs (a quiet synthetic bench) have no spread: the sign of the mean decides.
    se = max(math.sqrt(variance) / math.sqrt(n), 1e-12)
    t = mean / se
    half = t_ppf(0.5 + confidence / 2, df) * se
    return Comparison(
        n_baseline=n,
        n_candidate=n,
        baseline_median=float(np.median(x)),
        candidate_median=float(np.median(y)),
        change_pct=ratio_pct(mean),
        ci_low_pct=ratio_pct(mean - half),
        ci_high_pct=ratio_pct(mean + half),
        confidence=confidence,
        p_lower=t_cdf(t, df),
        p_higher=t_sf(t, df),
        paired=True,
        se_pct=100.0 * se,
        df=df,
        pooled=pooled,
    )


def _pair_variance(ss: float, df: int, prior: tuple[float, int] | None) -> tuple[float, int, bool]:
    """The pairs' variance, its degrees of freedom, and whether the calibration's were pooled.

    Pooled, the variance is never below these pairs' own: an outlier among them (heavy-tailed
    noise) widens the interval as much as it would unpooled, the extra degrees of freedom only
    shorten the t quantile."""
    if prior is None or not _poolable(ss, df, prior):
        return ss / df, df, False
    return max(ss / df, (ss + prior[0]) / (df + prior[1])), df + prior[1], True


def _poolable(ss: float, df: int, prior: tuple[float, int] | None) -> bool:
    """Whether these pairs' spread is consistent with the calibration's (not shown larger)."""
    if prior is None or prior[1] <= 0 or prior[0] <= 0:
        return False
    ratio = (ss / df) / (prior[0] / prior[1])
    return ratio <= float(special().fdtri(df, prior[1], POOL_F))
