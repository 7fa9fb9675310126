"""What a decision read, as values: one metric's comparison at a look, a sentinel's verdict on
its budget, and the one codec between them and the journal's JSON (`to_dict`, `from_dict`; the
format is the one the records have always held, and an older record's missing fields read as
unknown).

The rule (decide/rule.py) makes these; the loop reads them by attribute (the keep's commit
message, the calibration a keep leaves, the holdout's comparison with the bench's gain), and so
does a record read back (records.py's `ExperimentRecord.evidence`), never by key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Self

from ..statuses import Direction

__all__ = [
    "AACheck",
    "Evidence",
    "Interval",
    "SentinelEvidence",
    "field_names",
    "fields_in",
    "values",
]


_NAMES: dict[type, tuple[str, ...]] = {}


def field_names(cls: type) -> tuple[str, ...]:
    """A dataclass's field names, found once per class: a long journal reads millions."""
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


def values(value: Any) -> dict[str, Any]:
    """A dataclass value's fields by name, as they are (nested values not turned into dicts)."""
    return {name: getattr(value, name) for name in field_names(type(value))}


def fields_in(cls: type, found: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of `cls` a line holds, by name: what it lacks is left to the defaults."""
    return {name: found[name] for name in field_names(cls) if name in found}


@dataclass(frozen=True)
class Interval:
    """A change and its interval, in percent of the baseline."""

    change_pct: float | None
    ci_low_pct: float | None
    ci_high_pct: float | None

    def to_dict(self) -> dict[str, float | None]:
        return {
            "change_pct": self.change_pct,
            "ci_low_pct": self.ci_low_pct,
            "ci_high_pct": self.ci_high_pct,
        }


@dataclass(frozen=True)
class Evidence:
    """One metric at one look: its runs in each arm, the medians, the change with its interval
    (`confidence`), the one-sided p of a gain and of a loss, and the gain (positive: better, in
    the metric's direction) with its interval. Unknown (None) when the two arms could not be
    compared (no runs, non-positive values)."""

    direction: Direction = Direction.LOWER
    unit: str | None = None
    baseline_samples: list[float] = field(default_factory=list)
    candidate_samples: list[float] = field(default_factory=list)
    confidence: float | None = None
    baseline_median: float | None = None
    candidate_median: float | None = None
    change_pct: float | None = None
    ci_low_pct: float | None = None
    ci_high_pct: float | None = None
    paired: bool | None = None
    se_pct: float | None = None
    p_better: float | None = None
    p_worse: float | None = None
    improvement_pct: float | None = None
    improvement_low_pct: float | None = None
    improvement_high_pct: float | None = None
    # Known once compared: the test's degrees of freedom, and whether the calibration's A/A
    # pairs were pooled into it.
    df: float | None = None
    pooled_with_calibration: bool | None = None
    compared: bool = False
    unpaired: Interval | None = None  # the same runs as two samples, beside a paired test
    threshold_pct: float | None = None  # the primary metric's: the floor a keep must clear

    @classmethod
    def from_dict(cls, found: Any) -> Self:
        """A record's evidence of one metric; what it lacks is unknown."""
        found = found if isinstance(found, dict) else {}
        given = {name: found[name] for name in _as_is(cls) if name in found}
        direction = found.get("direction")
        if direction in tuple(Direction):
            given["direction"] = Direction(direction)
        unpaired = found.get("unpaired")
        if isinstance(unpaired, dict):
            given["unpaired"] = Interval(
                unpaired.get("change_pct"), unpaired.get("ci_low_pct"), unpaired.get("ci_high_pct")
            )
        return cls(**given, compared="df" in found)

    @property
    def n_baseline(self) -> int:
        return len(self.baseline_samples)

    @property
    def n_candidate(self) -> int:
        return len(self.candidate_samples)

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "direction": str(self.direction),
            "unit": self.unit,
            "baseline_samples": list(self.baseline_samples),
            "candidate_samples": list(self.candidate_samples),
            "n_baseline": self.n_baseline,
            "n_candidate": self.n_candidate,
            "baseline_median": self.baseline_median,
            "candidate_median": self.candidate_median,
            "change_pct": self.change_pct,
            "ci_low_pct": self.ci_low_pct,
            "ci_high_pct": self.ci_high_pct,
            "confidence": self.confidence,
            "paired": self.paired,
            "se_pct": self.se_pct,
            "p_better": self.p_better,
            "p_worse": self.p_worse,
            "improvement_pct": self.improvement_pct,
            "improvement_low_pct": self.improvement_low_pct,
            "improvement_high_pct": self.improvement_high_pct,
        }
        if self.compared:
            found["df"] = self.df
            found["pooled_with_calibration"] = self.pooled_with_calibration
        if self.unpaired is not None:
            found["unpaired"] = self.unpaired.to_dict()
        if self.threshold_pct is not None:
            found["threshold_pct"] = self.threshold_pct
        return found


@dataclass(frozen=True)
class SentinelEvidence(Evidence):
    """A sentinel's evidence and its verdict on its budget: `within` (the interval's worse end
    inside it), `over` (its better end past it) or `unresolved`."""

    budget_pct: float = 0.0
    verdict: str = "unresolved"
    reason: str = ""
    worsening_upper_pct: float | None = None  # the worse end, when compared

    @property
    def ok(self) -> bool:
        return self.verdict == "within"

    def to_dict(self) -> dict[str, Any]:
        found = super().to_dict()
        found["budget_pct"] = self.budget_pct
        found["verdict"] = self.verdict
        found["ok"] = self.ok
        if self.worsening_upper_pct is not None:
            found["worsening_upper_pct"] = self.worsening_upper_pct
        found["reason"] = self.reason
        return found


@dataclass(frozen=True)
class AACheck:
    """The calibration's A/A check: the same code in both arms, which the harness must not
    find apart. `can_fail` is whether these counts let it fail at all: with few runs an arm,
    the smallest p a rank test reaches (`smallest_p`, all of one arm below the other) is
    above its alpha. A record from before those were written reads as one that can fail."""

    ok: bool
    p_value: float
    shift_pct: float | None
    ci_low_pct: float | None = None
    ci_high_pct: float | None = None
    can_fail: bool = True
    smallest_p: float | None = None
    n_per_arm: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """In the order the journal has always held it."""
        return {name: getattr(self, name) for name in _AA_ORDER}

    @classmethod
    def from_dict(cls, found: Mapping[str, Any]) -> AACheck:
        return cls(**fields_in(cls, found))


_AA_ORDER = (
    "can_fail", "smallest_p", "n_per_arm", "shift_pct", "ci_low_pct", "ci_high_pct", "p_value", "ok"
)  # fmt: skip


def primary_metric(decision: Any) -> dict[str, Any] | None:
    """A record's decision's evidence of its primary metric, as the journal holds it: the one
    `primary` names, or in a journal from before it did, the one the judge's floor
    (`threshold_pct`) went on."""
    decision = decision if isinstance(decision, dict) else {}
    metrics = decision.get("metrics")
    if not isinstance(metrics, dict):
        return None
    named = metrics.get(decision.get("primary"))
    if isinstance(named, dict):
        return named
    return next((m for m in metrics.values() if isinstance(m, dict) and "threshold_pct" in m), None)


_AS_IS: dict[type, tuple[str, ...]] = {}


def _as_is(cls: type) -> tuple[str, ...]:
    """The fields an evidence's JSON holds as they are (the rest are read by their own rules)."""
    names = _AS_IS.get(cls)
    if names is None:
        skipped = ("compared", "unpaired", "direction")
        names = _AS_IS[cls] = tuple(n for n in field_names(cls) if n not in skipped)
    return names
