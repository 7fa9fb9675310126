"""The few distribution functions the rule needs, from scipy.special, imported at first use.

`scipy.stats` takes half a second to import and every `run` paid it before its first bench;
its `t` and `norm` are thin wrappers over these special functions (stdtr, stdtrit, ndtr,
ndtri), so the numbers are the same ones.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["norm_cdf", "norm_ppf", "special", "t_cdf", "t_ppf", "t_sf"]


@functools.cache
def special() -> Any:
    """scipy.special, imported at first use (vectorised ndtr and friends)."""
    import scipy.special

    return scipy.special


def norm_cdf(x: float) -> float:
    return float(special().ndtr(x))


def norm_ppf(q: float) -> float:
    return float(special().ndtri(q))


def t_cdf(x: float, df: float) -> float:
    return float(special().stdtr(df, x))


def t_sf(x: float, df: float) -> float:
    return float(special().stdtr(df, -x))


def t_ppf(q: float, df: float) -> float:
    return float(special().stdtrit(df, q))
