"""How many runs a decision may take: the floor, the cap, the looks and their share of alpha.

Pure functions of the config and the calibrated noise; the rule (rule.py) uses them for one
experiment, the calibration (loop/calibrate.py) to say before the night what it can detect.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..config import Config, DecisionConfig
from .dist import norm_ppf

__all__ = [
    "MIN_CAP_FACTOR",
    "POWER",
    "REFUSE_FACTOR",
    "SPENDING",
    "NoiseVerdict",
    "budget_runs",
    "cap_runs",
    "detectable_effect_pct",
    "look_alphas",
    "noise_verdict",
    "runs_needed",
    "threshold_pct",
]

POWER = 0.9  # of the cap: the chance to detect a change of the floor
SPENDING = 1.0  # look k gets alpha in proportion to n_k ** SPENDING: more to the later looks
MIN_CAP_FACTOR = 3  # the cap is at least this many times min_runs: a t-test needs some pairs
# A night is refused only when the bench cannot see this many times the effect asked for: a
# bench that detects 7% against a 5% target still keeps the 10% and 20% wins a night is for.
REFUSE_FACTOR = 3.0


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


def detectable_effect_pct(config: Config, noise_pct: float, run_s: float | None = None) -> float:
    """The change detected with 90% power at the most runs per arm a decision may take:
    `max_runs`, or fewer when `budget_s` at `run_s` a run pays for fewer."""
    n = _most_runs(config.decision, run_s)
    return _z_sum(config.decision) * math.sqrt(2) * noise_pct / math.sqrt(max(n - 1, 1))


def _most_runs(d: DecisionConfig, run_s: float | None) -> int:
    budget = budget_runs(d, run_s)
    return d.max_runs if budget is None else max(min(d.max_runs, budget), d.min_runs)


@dataclass(frozen=True)
class NoiseVerdict:
    """What the calibrated noise means for the night: the change it can detect, and whether
    that is too far from the effect asked for to run (`refuse`) or only worth saying."""

    detectable_pct: float
    target_pct: float
    refuse: bool
    message: str

    @property
    def warning(self) -> str | None:
        """Said before the night when the bench cannot see the effect asked for."""
        return self.message if self.detectable_pct > self.target_pct else None


def noise_verdict(config: Config, noise_pct: float, run_s: float | None) -> NoiseVerdict:
    """One verdict for `check`, the calibration's warning and the night's refusal: the
    detectable change at this noise within `max_runs` and `budget_s`; refused only beyond
    REFUSE_FACTOR times `target_effect_pct`; the advice names every setting in the way."""
    d = config.decision
    detectable = detectable_effect_pct(config, noise_pct, run_s)
    target = d.target_effect_pct
    most = _most_runs(d, run_s)
    seen = (
        f"noise {noise_pct:.2f}% a run: {most} runs per arm detect {detectable:.1f}% with 90% power"
    )
    if detectable <= target:
        return NoiseVerdict(detectable, target, False, f"{seen}, within {target:g}% asked for")
    needed = runs_needed(config, noise_pct, target)
    advice = [f"decision.max_runs to {needed}"] if needed > d.max_runs else []
    budget = budget_runs(d, run_s)
    if budget is not None and run_s and budget < needed:
        advice.append(f"decision.budget_s to {math.ceil(2 * needed * run_s)}")
    remedies = [f"to see {target:g}%, raise {' and '.join(advice)}"] if advice else []
    remedies.append("make the bench quieter (longer runs, fewer other jobs)")
    refuse = detectable > REFUSE_FACTOR * target
    consequence = (
        f"over {REFUSE_FACTOR:g} times it, the night would keep little"
        if refuse
        else f"wins under {detectable:.1f}% will often end inconclusive"
    )
    message = (
        f"{seen}, more than decision.target_effect_pct = {target:g}%: {consequence}; "
        + ", or ".join(remedies)
    )
    return NoiseVerdict(detectable, target, refuse, message)


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
