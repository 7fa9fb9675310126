"""What a confirmation measured, as values: each metric's base against tip side by side, and
the hidden holdout's, with their one codec to and from the journal's JSON (the confirmation
record's `metrics` and `holdout`, the format they have always had; what an older record lacks
reads as unknown).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ..statuses import Direction

__all__ = ["ConfirmedHoldout", "ConfirmedMetric"]

# Known once the two arms were compared; absent from the JSON when they could not be.
_COMPARED = ("baseline_median", "tip_median", "change_pct", "ci_low_pct", "ci_high_pct",
             "p_value", "estimator")  # fmt: skip


@dataclass(frozen=True)
class ConfirmedMetric:
    """One metric's runs of the base and of the tip, and when they could be compared, the
    medians, the change with its interval, the two-sided p and the estimator ("paired" when
    every pair printed it, else "two-sample")."""

    direction: Direction = Direction.LOWER
    unit: str = ""
    baseline_samples: list[float] = field(default_factory=list)
    tip_samples: list[float] = field(default_factory=list)
    baseline_median: float | None = None
    tip_median: float | None = None
    change_pct: float | None = None
    ci_low_pct: float | None = None
    ci_high_pct: float | None = None
    p_value: float | None = None
    estimator: str | None = None

    @property
    def compared(self) -> bool:
        return self.estimator is not None

    def to_dict(self) -> dict[str, Any]:
        found = {f.name: getattr(self, f.name) for f in fields(self)}
        found["direction"] = str(self.direction)
        if not self.compared:
            for name in _COMPARED:
                del found[name]
        return found

    @classmethod
    def from_dict(cls, found: Mapping[str, Any]) -> ConfirmedMetric:
        given = {f.name: found[f.name] for f in fields(cls) if f.name in found}
        given["direction"] = Direction(found.get("direction", Direction.LOWER))
        return cls(**given)


@dataclass(frozen=True)
class ConfirmedHoldout:
    """The hidden holdout's base against tip in a confirmation: its metric's name, runs and
    comparison, and the seconds its runs took."""

    metric: str
    baseline_samples: list[float] = field(default_factory=list)
    tip_samples: list[float] = field(default_factory=list)
    baseline_median: float | None = None
    tip_median: float | None = None
    change_pct: float | None = None
    ci_low_pct: float | None = None
    ci_high_pct: float | None = None
    p_value: float | None = None
    estimator: str | None = None
    duration_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        found = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.estimator is None:
            for name in _COMPARED:
                del found[name]
        if self.duration_s is None:
            del found["duration_s"]
        return found

    @classmethod
    def from_dict(cls, found: Mapping[str, Any]) -> ConfirmedHoldout:
        given = {f.name: found[f.name] for f in fields(cls) if f.name in found}
        given["metric"] = str(found.get("metric") or "")
        return cls(**given)
