"""Keep, discard or inconclusive: a sequential, non-parametric rule with the evidence it used.

Baseline (the current best) and candidate are measured alternately. At each look (a number of
runs per arm from `decision.schedule()`) the primary metric is compared with a one-sided
Mann-Whitney U test and a Hodges-Lehmann interval on the change:

- keep: the candidate is better with p < alpha / looks (the false-keep rate stays under alpha
  across all looks), its estimated gain is at least the threshold (the smallest change worth
  claiming), every sentinel is shown inside its budget, and small wins agree in direction
  with the `agree_with` metrics;
- discard: it is worse with p < 0.05 / looks, or its gain is below the threshold with 90%
  confidence (no gain worth claiming), or a sentinel is over its budget;
- otherwise run more, and past the last look: inconclusive.

An unknown comparison (no samples, non-positive values) is never significant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from scipy.stats import norm

from .config import Config, MetricSpec, SentinelSpec
from .stats import Comparison, compare

__all__ = [
    "CONFIDENCE",
    "WORSE_ALPHA",
    "Decision",
    "Judge",
    "detectable_effect_pct",
    "improvement",
    "runs_needed",
    "threshold_pct",
]

CONFIDENCE = 0.95  # of the reported intervals
WORSE_ALPHA = 0.05  # a false discard only costs a win, so a loss needs less evidence
# "No gain worth claiming" needs the gain's one-sided 90% upper bound below the threshold: a
# wrong futility stop costs a win that barely clears the threshold, never a false keep.
FUTILITY_CONFIDENCE = 0.80
SMALL_WIN_FACTOR = 2.0  # a win under this many thresholds must agree with `agree_with`
POWER = 0.9  # of the pre-night check: the chance to detect the target effect
MWU_EFFICIENCY = 3 / math.pi  # Mann-Whitney's efficiency against the t-test on normal data


@dataclass(frozen=True)
class Decision:
    status: str  # keep | discard | inconclusive
    rule: str
    reason: str
    look: int
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    sentinels: dict[str, dict[str, Any]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "rule": self.rule,
            "reason": self.reason,
            "look": self.look,
            **self.extra,
            "metrics": self.metrics,
        }


def threshold_pct(config: Config, noise: float | None) -> float:
    """The smallest change of the primary metric worth claiming: the floor or the noise (the
    robust CV of the calibration runs, in percent)."""
    floor = config.decision.min_effect_pct
    return floor if noise is None else max(floor, config.decision.noise_multiplier * noise)


def _z_sum(config: Config) -> float:
    alpha = config.decision.alpha / len(config.decision.schedule())
    return float(norm.ppf(1 - alpha) + norm.ppf(POWER))


def detectable_effect_pct(config: Config, noise_pct: float) -> float:
    """The change detected with 90% power at `max_runs` runs per arm (normal approximation)."""
    n = config.decision.max_runs
    return _z_sum(config) * noise_pct * math.sqrt(2 / n) / math.sqrt(MWU_EFFICIENCY)


def runs_needed(config: Config, noise_pct: float, effect_pct: float) -> int:
    """Runs per arm to detect `effect_pct` with 90% power, by the same approximation."""
    return math.ceil(2 * (_z_sum(config) * noise_pct / effect_pct) ** 2 / MWU_EFFICIENCY)


def improvement(spec: MetricSpec | SentinelSpec, comparison: Comparison) -> tuple:
    """(estimate, interval low, interval high, p) with positive meaning better."""
    c = comparison
    if spec.direction == "lower":
        return -c.change_pct, -c.ci_high_pct, -c.ci_low_pct, c.p_lower
    return c.change_pct, c.ci_low_pct, c.ci_high_pct, c.p_higher


class Judge:
    """The sequential rule for one experiment; call `look` after each scheduled pair count."""

    def __init__(self, config: Config, threshold: float):
        self.config = config
        self.threshold = threshold
        self.schedule = config.decision.schedule()
        looks = len(self.schedule)
        self.alpha_keep = config.decision.alpha / looks
        self.alpha_worse = WORSE_ALPHA / looks

    def look(
        self, baseline: dict[str, list[float]], candidate: dict[str, list[float]], final: bool
    ) -> Decision | None:
        """The decision at this look, or None to run more."""
        primary = self.config.metric
        metrics = {
            spec.name: self._evidence(spec, baseline, candidate)
            for spec in [primary, *self.config.secondary]
        }
        metrics[primary.name]["threshold_pct"] = self.threshold
        sentinels = {s.name: self._sentinel(s, baseline, candidate) for s in self.config.sentinel}
        look = self._look_index(len(baseline.get(primary.name, [])))
        extra = {
            "threshold_pct": self.threshold,
            "alpha_per_look": self.alpha_keep,
            "schedule": self.schedule,
            "n_baseline": len(baseline.get(primary.name, [])),
            "n_candidate": len(candidate.get(primary.name, [])),
        }

        def decided(status: str, rule: str, reason: str) -> Decision:
            return Decision(status, rule, reason, look, metrics, sentinels, extra)

        ev = metrics[primary.name]
        if ev["improvement_pct"] is None:
            if final:
                return decided("inconclusive", "unknown_comparison", f"{primary.name} not compared")
            return None
        gain, p_better = ev["improvement_pct"], ev["p_better"]
        said = (
            f"{primary.name} {ev['change_pct']:+.2f}% "
            f"[{ev['ci_low_pct']:+.2f}%, {ev['ci_high_pct']:+.2f}%]"
        )
        if p_better < self.alpha_keep and gain >= self.threshold:
            blocked = self._keep_blockers(metrics, sentinels, gain)
            if blocked is None:
                return decided(
                    "keep",
                    "significant_win",
                    f"{said}, p={p_better:.2g} < {self.alpha_keep:.2g}, "
                    f"gain >= threshold {self.threshold:.2f}%",
                )
            status, rule, reason = blocked
            if status == "discard" or final:
                return decided(status if status == "discard" else "inconclusive", rule, reason)
            return None
        if ev["p_worse"] < self.alpha_worse:
            return decided(
                "discard", "significant_loss", f"{said}, worse with p={ev['p_worse']:.2g}"
            )
        if self._futile(primary, baseline, candidate):
            # A threshold the noise raised above the floor closes nothing: on a quieter machine
            # the same gain may be worth claiming.
            by_noise = self.threshold > self.config.decision.min_effect_pct
            return decided(
                "discard",
                "below_noise_threshold" if by_noise else "below_threshold",
                f"{said}: the gain is below the threshold {self.threshold:.2f}% "
                f"({'set by the noise' if by_noise else 'decision.min_effect_pct'}) "
                f"with {(1 + FUTILITY_CONFIDENCE) / 2:.0%} confidence",
            )
        if final:
            return decided(
                "inconclusive",
                "max_runs",
                f"{said}, p={p_better:.2g}: not decided after {extra['n_candidate']} runs per arm",
            )
        return None

    def _keep_blockers(self, metrics, sentinels, gain) -> tuple[str, str, str] | None:
        over = [s for s in sentinels.values() if s["verdict"] == "over"]
        if over:
            return "discard", "sentinel_budget", "; ".join(s["reason"] for s in over)
        unresolved = [s for s in sentinels.values() if s["verdict"] == "unresolved"]
        if unresolved:
            return "inconclusive", "sentinel_unresolved", "; ".join(s["reason"] for s in unresolved)
        if gain < SMALL_WIN_FACTOR * self.threshold:
            disagree = [
                name
                for name in self.config.decision.agree_with
                if not _gain(metrics.get(name) or sentinels.get(name)) > 0
            ]
            if disagree:
                return (
                    "inconclusive",
                    "cross_scale_disagreement",
                    f"a small win that {', '.join(disagree)} does not confirm in direction",
                )
        return None

    def _futile(self, spec, baseline: dict, candidate: dict) -> bool:
        comparison = compare(
            baseline.get(spec.name, []), candidate.get(spec.name, []), FUTILITY_CONFIDENCE
        )
        return comparison is not None and improvement(spec, comparison)[2] < self.threshold

    def _look_index(self, n: int) -> int:
        return next(
            (i + 1 for i, point in enumerate(self.schedule) if n <= point), len(self.schedule)
        )

    def _evidence(self, spec, baseline: dict, candidate: dict) -> dict[str, Any]:
        b, c = baseline.get(spec.name, []), candidate.get(spec.name, [])
        evidence: dict[str, Any] = {
            "direction": spec.direction,
            "unit": spec.unit,
            "baseline_samples": list(b),
            "candidate_samples": list(c),
            "n_baseline": len(b),
            "n_candidate": len(c),
            "baseline_median": None,
            "candidate_median": None,
            "change_pct": None,
            "ci_low_pct": None,
            "ci_high_pct": None,
            "confidence": CONFIDENCE,
            "p_better": None,
            "p_worse": None,
            "improvement_pct": None,
            "improvement_low_pct": None,
            "improvement_high_pct": None,
        }
        comparison = compare(b, c, CONFIDENCE)
        if comparison is None:
            return evidence
        gain, low, high, p_better = improvement(spec, comparison)
        evidence.update(
            baseline_median=comparison.baseline_median,
            candidate_median=comparison.candidate_median,
            change_pct=comparison.change_pct,
            ci_low_pct=comparison.ci_low_pct,
            ci_high_pct=comparison.ci_high_pct,
            p_better=p_better,
            p_worse=comparison.p_higher if spec.direction == "lower" else comparison.p_lower,
            improvement_pct=gain,
            improvement_low_pct=low,
            improvement_high_pct=high,
        )
        return evidence

    def _sentinel(self, spec: SentinelSpec, baseline: dict, candidate: dict) -> dict[str, Any]:
        """Non-inferiority: the interval's worse end must stay inside the budget."""
        evidence = self._evidence(spec, baseline, candidate)
        confidence = self.config.decision.sentinel_confidence
        comparison = compare(
            baseline.get(spec.name, []), candidate.get(spec.name, []), 2 * confidence - 1
        )
        evidence["budget_pct"] = spec.budget_pct
        evidence["confidence"] = confidence
        if comparison is None:
            evidence.update(
                verdict="unresolved", ok=False, reason=f"sentinel {spec.name} was not measured"
            )
            return evidence
        _, low, high, _ = improvement(spec, comparison)
        worst, best = -low, -high  # worsening in percent, at the interval's two ends
        if worst <= spec.budget_pct:
            verdict = "within"
        elif best > spec.budget_pct:
            verdict = "over"
        else:
            verdict = "unresolved"
        evidence.update(
            verdict=verdict,
            ok=verdict == "within",
            worsening_upper_pct=worst,
            reason=(
                f"sentinel {spec.name}: worse by at most {worst:+.2f}% "
                f"({confidence:.0%} bound) against a {spec.budget_pct:g}% budget: {verdict}"
            ),
        )
        return evidence


def _gain(evidence: dict[str, Any] | None) -> float:
    """A metric's estimated improvement; an unmeasured metric counts as no improvement."""
    return (evidence or {}).get("improvement_pct") or 0.0
