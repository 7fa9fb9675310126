"""What a confirmation measured, as values: each metric's base against tip side by side, and
the hidden holdout's, with their one codec to and from the journal's JSON (the confirmation
record's `metrics` and `holdout`, the format they have always had; what an older record lacks
reads as unknown).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from ..statuses import Direction
from .evidence import fields_in, values

__all__ = ["ConfirmedHoldout", "ConfirmedMetric"]

# Known once the two arms were compared; absent from the JSON when they could not be.
_COMPARED = ("baseline_median", "tip_median", "change_pct", "ci_low_pct", "ci_high_pct",
             "p_value", "estimator")  # fmt: skip


@dataclass(frozen=True)
class _BaseAgainstTip:
    """The runs of the base and of the tip, and when they could be compared, the medians, the
    change with its interval, the two-sided p and the estimator ("paired" when every pair
    printed the metric, else "two-sample")."""

    baseline_samples: list[float] = field(default_factory=list)
    tip_samples: list[float] = field(default_factory=list)
    baseline_median: float | None = None
    tip_median: float | None = None
    change_pct: float | None = None
    ci_low_pct: float | None = None
    ci_high_pct: float | None = None
    p_value: float | None = None
    estimator: str | None = None

    def to_dict(self) -> dict[str, Any]:
        found = values(self)
        if self.estimator is None:  # not compared
            for name in _COMPARED:
                del found[name]
        return found

    @classmethod
    def from_dict(cls, found: Mapping[str, Any]) -> Self:
        return cls(**cls._given(found))

    @classmethod
    def _given(cls, found: Mapping[str, Any]) -> dict[str, Any]:
        return fields_in(cls, found)


@dataclass(frozen=True)
class ConfirmedMetric(_BaseAgainstTip):
    """One metric the bench printed, in its direction and unit."""

    direction: Direction = Direction.LOWER
    unit: str = ""

    def to_dict(self) -> dict[str, Any]:
        return super().to_dict() | {"direction": str(self.direction)}

    @classmethod
    def _given(cls, found: Mapping[str, Any]) -> dict[str, Any]:
        return super()._given(found) | {"direction": Direction(found.get("direction", "lower"))}


@dataclass(frozen=True)
class ConfirmedHoldout(_BaseAgainstTip):
    """The hidden holdout's metric, and the seconds its runs took."""

    metric: str = ""
    duration_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        found = super().to_dict()
        if self.duration_s is None:
            del found["duration_s"]
        return found
