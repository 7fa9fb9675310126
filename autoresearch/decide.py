"""Keep, discard or inconclusive, with the evidence and the rule that fired.

The rule: the candidate's median must beat the current best's median by more than the noise
threshold, max(min_effect_pct, noise_multiplier x robust CV of the baseline runs). A change
inside the threshold is inconclusive, never a keep; a sentinel outside its budget vetoes a keep;
a metric that was not measured is never called better.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from .config import Config, MetricSpec, SentinelSpec

__all__ = ["Decision", "change_pct", "decide", "noise_pct", "threshold_pct"]

MAD_TO_SIGMA = 1.4826  # MAD x this estimates the standard deviation of normal data


@dataclass(frozen=True)
class Decision:
    status: str  # keep | discard | inconclusive
    rule: str
    reason: str
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    sentinels: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "rule": self.rule,
            "reason": self.reason,
            "metrics": self.metrics,
        }


def noise_pct(samples: list[float]) -> float | None:
    """Robust coefficient of variation in percent: 1.4826 x MAD / median."""
    if len(samples) < 2:
        return None
    median = statistics.median(samples)
    if median == 0:
        return None
    mad = statistics.median(abs(x - median) for x in samples)
    return 100.0 * MAD_TO_SIGMA * mad / abs(median)


def threshold_pct(config: Config, baseline_samples: list[float]) -> float:
    """The smallest change of the primary metric worth claiming."""
    noise = noise_pct(baseline_samples)
    floor = config.decision.min_effect_pct
    return floor if noise is None else max(floor, config.decision.noise_multiplier * noise)


def change_pct(before: float | None, after: float | None) -> float | None:
    if before is None or after is None or before == 0:
        return None
    return 100.0 * (after - before) / abs(before)


def _improvement(spec: MetricSpec | SentinelSpec, change: float | None) -> float | None:
    """The change expressed so that positive is better, whatever the metric's direction."""
    if change is None:
        return None
    return -change if spec.direction == "lower" else change


def _evidence(spec, baseline: list[float], candidate: list[float]) -> dict[str, Any]:
    base_median = statistics.median(baseline) if baseline else None
    cand_median = statistics.median(candidate) if candidate else None
    change = change_pct(base_median, cand_median)
    return {
        "direction": spec.direction,
        "unit": spec.unit,
        "baseline_samples": list(baseline),
        "candidate_samples": list(candidate),
        "n_baseline": len(baseline),
        "n_candidate": len(candidate),
        "baseline_median": base_median,
        "candidate_median": cand_median,
        "change_pct": change,
        "improvement_pct": _improvement(spec, change),
    }


def decide(
    config: Config,
    baseline: dict[str, list[float]],
    candidate: dict[str, list[float]],
    threshold: float,
) -> Decision:
    """Judge a candidate's samples against the current best's."""
    primary = config.metric
    metrics = {
        spec.name: _evidence(spec, baseline.get(spec.name, []), candidate.get(spec.name, []))
        for spec in [primary, *config.secondary]
    }
    metrics[primary.name]["threshold_pct"] = threshold
    sentinels = {s.name: _sentinel(s, baseline, candidate) for s in config.sentinel}

    gain = metrics[primary.name]["improvement_pct"]
    if gain is None:
        status, rule = "inconclusive", "unknown_comparison"
        reason = f"{primary.name} could not be compared (no baseline or candidate samples)"
    elif gain > threshold:
        status, rule = "keep", "beyond_noise"
        reason = f"{primary.name} improved {gain:.2f}% (> threshold {threshold:.2f}%)"
    elif gain < -threshold:
        status, rule = "discard", "worse_beyond_noise"
        reason = f"{primary.name} worse by {-gain:.2f}% (threshold {threshold:.2f}%)"
    else:
        status, rule = "inconclusive", "within_noise"
        change = metrics[primary.name]["change_pct"]
        reason = (
            f"{primary.name} changed {change:+.2f}%, inside the noise threshold {threshold:.2f}%"
        )

    broken = [name for name, s in sentinels.items() if not s["ok"]]
    if status == "keep" and broken:
        status, rule = "discard", "sentinel_budget"
        reason = "; ".join(sentinels[name]["reason"] for name in broken)
    return Decision(status, rule, reason, metrics, sentinels)


def _sentinel(spec: SentinelSpec, baseline: dict, candidate: dict) -> dict[str, Any]:
    evidence = _evidence(spec, baseline.get(spec.name, []), candidate.get(spec.name, []))
    gain = evidence["improvement_pct"]
    evidence["budget_pct"] = spec.budget_pct
    if gain is None:
        evidence["ok"] = False
        evidence["reason"] = (
            f"sentinel {spec.name} was not measured, so its budget is not shown held"
        )
    else:
        evidence["ok"] = -gain <= spec.budget_pct
        evidence["reason"] = (
            f"sentinel {spec.name} {'within' if evidence['ok'] else 'over'} budget: "
            f"{-gain:+.2f}% worse against a {spec.budget_pct:g}% budget"
        )
    return evidence
