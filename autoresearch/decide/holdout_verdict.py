"""The holdout's verdict: does a win on the bench hold on a workload the change never saw?

Judged on the holdout's own paired runs: refused when the holdout is shown worse by more than
`[holdout] budget_pct` (the interval's better end past it), or shown to gain less than its floor
(the interval's better end short of it, as a change fast only on the bench's inputs is): the
larger of `min_gain_pct` (the decision's floor unless set) and `min_share` of the gain the bench
showed (a third: a change worth 50% on the bench and under 17% elsewhere was tuned to it); and,
with `require_win`, unless the holdout shows a win too (its whole interval better). Between
those the holdout is undecided (`no_win`): more pairs may decide it (bench/holdout_runs.py); at the
last look it stands but with `require_win`. The decision that stands carries the holdout's
evidence (`decision.holdout`) either way.
"""

from __future__ import annotations

from dataclasses import replace

from ..config import Config
from ..journal.decision import Decision, HoldoutEvidence
from ..statuses import Rule, Status
from .rule import CONFIDENCE, improvement
from .stats import compare, compare_paired

__all__ = ["holdout_decision", "holdout_evidence"]


def holdout_evidence(
    config: Config,
    baseline: list[float],
    candidate: list[float],
    looks: int = 1,
    bench_gain: float = 0.0,
) -> HoldoutEvidence:
    """The holdout's comparison and verdict: `win`, `no_win` (undecided), `no_gain`, `worse`
    or `unmeasured`; its interval at the confidence that keeps `looks` looks at it from a
    spurious verdict as one look at CONFIDENCE would (Bonferroni). `bench_gain`: the gain (in
    percent, positive better) the bench showed, which sets the floor with `min_share`."""
    spec = config.holdout_metric
    floor = max(config.holdout_floor_pct, config.holdout.min_share * bench_gain)
    confidence = 1 - (1 - CONFIDENCE) / max(looks, 1)
    comparison = compare_paired(baseline, candidate, confidence, None)
    if comparison is None:
        comparison = compare(baseline, candidate, confidence)
    measured = HoldoutEvidence(
        metric=spec.name,
        direction=spec.direction,
        unit=spec.unit,
        budget_pct=spec.budget_pct,
        min_gain_pct=round(floor, 3),
        require_win=config.holdout.require_win,
        pairs=len(candidate),
        confidence=confidence,
        baseline_samples=list(baseline),
        candidate_samples=list(candidate),
        verdict="unmeasured",
        ok=False,
        reason="not compared",
    )
    if comparison is None:
        return measured
    verdict = _verdict(improvement(spec, comparison), spec.budget_pct, floor)
    said = (
        f"holdout {spec.name} {comparison.change_pct:+.2f}% "
        f"[{comparison.ci_low_pct:+.2f}%, {comparison.ci_high_pct:+.2f}%]"
    )
    why = {
        "worse": f"shown worse than its {spec.budget_pct:g}% budget",
        "no_gain": f"shown to gain less than its {floor:.3g}% floor there",
        "win": "a win there too",
        "no_win": "no win shown there",
    }[verdict]
    return replace(
        measured,
        **comparison.estimate(),
        verdict=verdict,
        ok=verdict == "win" or (verdict == "no_win" and not config.holdout.require_win),
        reason=f"{said}: {why}",
    )


def _verdict(gained: tuple[float, float, float, float], budget_pct: float, floor: float) -> str:
    """From the holdout's improvement (estimate, low, high, p; positive better)."""
    _, low, high, _ = gained
    if -high > budget_pct:
        return "worse"
    if high < floor:  # even its better end gains less than the floor there
        return "no_gain"
    return "win" if low > 0 else "no_win"


def holdout_decision(decision: Decision, evidence: HoldoutEvidence) -> Decision:
    """A keep that stands with the holdout's evidence, or a discard that says why not."""
    if evidence.ok:
        return replace(decision, holdout=evidence)
    reason = f"{decision.reason}; but {evidence.reason}: it does not generalize"
    return replace(
        decision, status=Status.DISCARD, rule=Rule.HOLDOUT, reason=reason, holdout=evidence
    )
