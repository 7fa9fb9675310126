"""How many runs a decision may take: the floor, the cap, the looks and their share of alpha.

Pure functions of the config and the calibrated noise; the rule (rule.py) uses them for one
experiment, the calibration (loop/calibrate.py) to say before the night what it can detect.
"""

from __future__ import annotations

import math

from ..config import Config, DecisionConfig
from .dist import norm_ppf

__all__ = [
    "MIN_CAP_FACTOR",
    "POWER",
    "SPENDING",
    "budget_runs",
    "cap_runs",
    "detectable_effect_pct",
    "look_alphas",
    "runs_needed",
    "threshold_pct",
]

POWER = 0.9  # of the cap: the chance to detect a change of the floor
SPENDING = 1.0  # look k gets alpha in proportion to n_k ** SPENDING: more to the later looks
MIN_CAP_FACTOR = 3  # the cap is at least this many times min_runs: a t-test needs some pairs


def threshold_pct(config: Config, noise: float | None) -> float:
    """The smallest change of the primary metric worth claiming: the floor, raised to
    `noise_multiplier` times the noise only when that is set (0 by default: the noise decides
    how many runs a decision takes, not what is worth claiming)."""
    floor = config.decision.min_effect_pct
    multiplier = config.decision.noise_multiplier
    return floor if noise is None or not multiplier else max(floor, multiplier * noise)


def _z_sum(decision: DecisionConfig) -> float:
    # About half of alpha is left for the last look (see look_alphas).
    return norm_ppf(1 - decision.alpha / 2) + norm_ppf(POWER)


def runs_needed(config: Config, noise_pct: float, effect_pct: float) -> int:
    """Runs per arm (pairs) to detect `effect_pct` with 90% power when one run's noise is
    `noise_pct`: a pair's log ratio has sqrt(2) times that noise when the runs are independent,
    less when load moves both alike."""
    return math.ceil((_z_sum(config.decision) * math.sqrt(2) * noise_pct / effect_pct) ** 2) + 1


def detectable_effect_pct(config: Config, noise_pct: float) -> float:
    """The change detected with 90% power at `max_runs` runs per arm."""
    n = config.decision.max_runs
    return _z_sum(config.decision) * math.sqrt(2) * noise_pct / math.sqrt(max(n - 1, 1))


def cap_runs(
    config: Config, noise_pct: float | None, run_s: float | None, floor: float | None = None
) -> int:
    """Runs per arm a decision may take: enough to detect the floor at this noise, at least
    MIN_CAP_FACTOR x min_runs, at most max_runs and what budget_s allows at run_s a run."""
    d = config.decision
    cap = d.max_runs
    if noise_pct:
        needed = runs_needed(config, noise_pct, floor or d.min_effect_pct)
        cap = min(cap, max(needed, MIN_CAP_FACTOR * d.min_runs))
    budget = budget_runs(d, run_s)
    if budget is not None:
        cap = min(cap, budget)
    return max(cap, d.min_runs)


def budget_runs(d: DecisionConfig, run_s: float | None) -> int | None:
    """The pairs `budget_s` pays for at `run_s` a run; None without a budget."""
    return int(d.budget_s / (2 * run_s)) if d.budget_s and run_s else None


def look_alphas(alpha: float, schedule: list[int]) -> list[float]:
    """Each look's share of alpha: in proportion to n ** SPENDING, adding up to alpha."""
    weights = [n**SPENDING for n in schedule]
    return [alpha * w / sum(weights) for w in weights]
