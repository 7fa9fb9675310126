"""Group-sequential boundaries: where a look keeps and where it gives up, exactly.

The rule looks at the pairs' mean log ratio several times. Splitting alpha over the looks by
the union bound (each look its own share, as if they were unrelated) wastes most of it: the
looks share their early pairs, so a path that crosses late has usually come close early. Here
the chance of crossing at each look is computed for the looks as they are, correlated, by
integrating the standardised sum S_k of the first n_k pairs from look to look (Armitage,
McPherson and Rowe; Jennison and Turnbull, ch. 19): between looks S grows by a normal step.

- efficacy: the z above which a look keeps, spending alpha as `alpha * (n/N) ** RHO_ALPHA`
  under no effect; computed without the futility stops (non-binding), so a retry of a
  `not_promising` discard, or a look that does not stop there, spends no error;
- futility: the z below which a look gives up, spending beta as `beta * (n/N) ** RHO_BETA`
  under the effect to detect (`drift`: the effect in standard deviations of one pair): a win of
  that size is dropped early at most beta of the time, and least at the first looks.

All on the z scale with the standard deviation taken as known; the judge turns each look's
boundary into a nominal p and reads it on the t scale of the degrees of freedom it has.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .dist import special

__all__ = ["Boundaries", "boundaries", "power"]

RHO_ALPHA = 1.0  # alpha spent in proportion to the pairs: an early look keeps only clear wins
RHO_BETA = 0.5  # beta spent faster: a null is given up early, a win of the size sought rarely
CELLS = 240  # grid cells over each look's continuation region
SPAN = 9.0  # the grid reaches this many standard deviations past the drift's centre


@dataclass(frozen=True)
class Boundaries:
    """The z boundaries of each look (`looks`: pairs at each)."""

    looks: tuple[int, ...]
    efficacy: tuple[float, ...]  # keep at look k when z >= efficacy[k]
    futility: tuple[float, ...]  # give up at look k when z < futility[k]
    power: float  # the chance of a keep at the effect the futility was built for
    efficacy_alpha: float  # the alpha the efficacy boundary spends

    def nominal_alpha(self, k: int) -> float:
        """Look k's efficacy as a one-sided p: what the look's test must get under."""
        return float(special().ndtr(-self.efficacy[k]))

    def nominal_futility(self, k: int) -> float:
        """Look k's futility as the one-sided p for a gain at or below which it gives up."""
        return float(special().ndtr(-self.futility[k]))


class _Paths:
    """The density of S_k over the paths still running, on a grid, and steps to the next look."""

    def __init__(self, drift: float, n: int, low: float, high: float):
        self.drift, self.n = drift, n
        self.grid, self.weights = _cells(low, high, n, drift, None)

    def crossing(self, n: int, level: float, above: bool) -> float:
        """The chance of a path running now to be above (or below) `level` (on the z scale)
        at a look with n pairs."""
        step = n - self.n
        x = (level * math.sqrt(n) - self.grid - self.drift * step) / math.sqrt(step)
        tail = special().ndtr(-x if above else x)
        return float(self.weights @ tail)

    def advance(self, n: int, low: float, high: float) -> None:
        """Move to the look with n pairs, keeping the paths with low <= z < high."""
        grid, weights = _cells(low, high, n, self.drift, (self.grid, self.weights, self.n))
        self.grid, self.weights, self.n = grid, weights, n


def _cells(low, high, n, drift, before):
    """Cell centres over [low, high) (z scale, clipped to the grid's span) at n pairs, and the
    probability mass of each: from the normal start, or stepped from the previous look."""
    centre, sd = drift * n, math.sqrt(n)
    lo = max(low * sd, centre - SPAN * sd)
    hi = min(high * sd, centre + SPAN * sd)
    if hi <= lo:
        return np.zeros(0), np.zeros(0)
    edges = np.linspace(lo, hi, CELLS + 1)
    mids = (edges[:-1] + edges[1:]) / 2
    width = edges[1] - edges[0]
    if before is None:
        density = np.exp(-0.5 * ((mids - centre) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))
    else:
        grid, weights, m = before
        step = n - m
        z = (mids[:, None] - grid[None, :] - drift * step) / math.sqrt(step)
        density = (np.exp(-0.5 * z**2) @ weights) / math.sqrt(2 * math.pi * step)
    return mids, density * width


def _efficacy(looks: tuple[int, ...], alpha: float) -> list[float]:
    """The efficacy boundary under no effect, ignoring futility (non-binding)."""
    total = looks[-1]
    paths: _Paths | None = None
    spent, bounds = 0.0, []
    for n in looks:
        share = alpha * (n / total) ** RHO_ALPHA - spent
        if paths is None:
            level = -float(special().ndtri(share))
            paths = _Paths(0.0, n, -math.inf, level)
        else:
            current = paths
            level = _bisect(
                lambda c, p=current, n=n: p.crossing(n, c, True), share, decreasing=True
            )
            paths.advance(n, -math.inf, level)
        spent += share
        bounds.append(level)
    return bounds


def _futility(
    looks: tuple[int, ...], efficacy: list[float], beta: float, drift: float
) -> tuple[list[float], float]:
    """The futility boundary under the effect sought, and the power it leaves."""
    total = looks[-1]
    paths: _Paths | None = None
    spent = won = 0.0
    bounds = []
    for k, n in enumerate(looks):
        c = efficacy[k]
        if paths is None:
            first = math.sqrt(n) * drift
            win = float(special().ndtr(first - c))
            lose = functools.partial(_below, first)
        else:
            current = paths
            win = current.crossing(n, c, True)
            lose = functools.partial(current.crossing, n, above=False)
        won += win
        if k == len(looks) - 1:
            bounds.append(c)  # the last look: what is not a keep is not one
            break
        share = beta * (n / total) ** RHO_BETA - spent
        f = _bisect(lose, share, decreasing=False, low=-12.0, high=c) if share > 0 else -12.0
        f = min(f, c)
        spent += lose(f)
        bounds.append(f)
        if paths is None:
            paths = _Paths(drift, n, f, c)
        else:
            paths.advance(n, f, c)
    return bounds, won


def _below(mean: float, level: float) -> float:
    """The chance of a normal of unit variance centred on `mean` to fall below `level`."""
    return float(special().ndtr(level - mean))


def _bisect(chance, target: float, *, decreasing: bool, low=-12.0, high=12.0) -> float:
    """The level where the monotone `chance(level)` equals `target`."""
    for _ in range(60):
        mid = (low + high) / 2
        above = chance(mid) > target
        if above == decreasing:
            low = mid
        else:
            high = mid
    return (low + high) / 2


@functools.lru_cache(maxsize=1024)
def boundaries(
    looks: tuple[int, ...], alpha: float, beta: float, drift: float | None
) -> Boundaries:
    """The boundaries of a design: looks (pairs at each), one-sided alpha, and beta for a win
    of `drift` standard deviations of a pair's log ratio (None: no futility stops)."""
    efficacy = _efficacy(looks, alpha)
    if drift is None:
        futility = [-math.inf] * (len(looks) - 1) + [efficacy[-1]]
        return Boundaries(looks, tuple(efficacy), tuple(futility), math.nan, alpha)
    futility, won = _futility(looks, efficacy, beta, drift)
    return Boundaries(looks, tuple(efficacy), tuple(futility), won, alpha)


def power(
    looks: tuple[int, ...], efficacy: tuple[float, ...], futility: tuple[float, ...], drift: float
) -> float:
    """The chance of a keep for a win of `drift` standard deviations with these boundaries
    (the futility ones binding)."""
    paths: _Paths | None = None
    won = 0.0
    for k, n in enumerate(looks):
        if paths is None:
            won += float(special().ndtr(math.sqrt(n) * drift - efficacy[k]))
            paths = _Paths(drift, n, futility[k], efficacy[k])
        else:
            won += paths.crossing(n, efficacy[k], True)
            paths.advance(n, futility[k], efficacy[k])
    return won
