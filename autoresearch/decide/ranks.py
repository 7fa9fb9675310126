"""The Mann-Whitney U test's one-sided p values, without importing scipy.stats.

Every calibration's A/A check and every decision's two-sample view use the rank test; importing
`scipy.stats` for it cost a second of CPU at the first calibration of every run and of every
bench host (eight hosts starting together on two cores waited four seconds for it). The method
is chosen as `scipy.stats.mannwhitneyu(method="auto")` chooses it, so the numbers are its own:
the exact null distribution of U when either arm has at most eight values and there are no
ties, else the normal approximation with the tie correction and a continuity correction.
"""

from __future__ import annotations

import functools
import math
from collections import Counter

from .dist import norm_cdf

__all__ = ["mann_whitney"]

EXACT_UP_TO = 8  # the exact distribution when the smaller arm has at most this many values


def mann_whitney(x: list[float], y: list[float]) -> tuple[float, float]:
    """(p that `x` tends lower than `y`, p that it tends higher), one-sided each."""
    n1, n2 = len(x), len(y)
    ranks = _average_ranks([*x, *y])
    u1 = sum(ranks[:n1]) - n1 * (n1 + 1) / 2  # pairs where x is the larger, ties as halves
    u2 = n1 * n2 - u1
    ties = [t for t in Counter([*x, *y]).values() if t > 1]
    if (n1 <= EXACT_UP_TO or n2 <= EXACT_UP_TO) and not ties:
        return _exact_sf(round(u2), n1, n2), _exact_sf(round(u1), n1, n2)
    return _normal_sf(u2, n1, n2, ties), _normal_sf(u1, n1, n2, ties)


def _average_ranks(values: list[float]) -> list[float]:
    """Ranks from 1, tied values sharing the mean of the ranks they span."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for i in order[start : end + 1]:
            ranks[i] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def _exact_sf(u: int, n1: int, n2: int) -> float:
    """P(U >= u) under the null: the share of the C(n1 + n2, n1) orderings with U at least u."""
    counts = _u_counts(min(n1, n2), max(n1, n2))
    return min(1.0, sum(counts[u:]) / math.comb(n1 + n2, n1))


@functools.cache
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """How many orderings of m and n values give each U from 0 to m*n: the recurrence on
    whether the largest value belongs to the first arm (it then beats all n of the second)."""
    if m == 0 or n == 0:
        return (1,)
    with_largest = _u_counts(m - 1, n)
    without = _u_counts(m, n - 1)
    counts = [0] * (m * n + 1)
    for k, c in enumerate(with_largest):
        counts[k + n] += c
    for k, c in enumerate(without):
        counts[k] += c
    return tuple(counts)


def _normal_sf(u: float, n1: int, n2: int, ties: list[int]) -> float:
    """P(U >= u), normal approximation: the tie-corrected spread and a half-step correction."""
    n = n1 + n2
    tie_term = sum(t**3 - t for t in ties)
    spread = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
    numerator = u - n1 * n2 / 2 - 0.5
    if spread == 0:  # every value the same: no evidence either way
        return 1.0
    return min(1.0, max(0.0, norm_cdf(-numerator / spread)))
