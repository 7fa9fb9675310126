"""The rule's verdict as values, and the one codec between it and a record's `decision`.

The judge (decide/rule.py) makes a `Decision`; the holdout (decide/holdout_verdict.py) adds its
`HoldoutEvidence`; the loop writes it into the record and every reader gets it back typed
(`ExperimentRecord.decision`), never as a dict. The JSON is the one the journal has always held:
`to_dict` writes it, `from_dict` reads it, and what an older record lacks reads as unknown (a
decision recovered from a commit's trailer names no design, no look and no primary metric).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..statuses import Direction, Rule, Status
from .evidence import Evidence, SentinelEvidence, fields_in, values

__all__ = ["Decision", "Design", "HoldoutEvidence", "SentinelExtension"]


def _member(enum: type[Status] | type[Rule], text: Any) -> Any:
    """`text` as a member of `enum` when it names one, else as it is."""
    try:
        return enum(text)
    except ValueError:
        return str(text)


@dataclass(frozen=True)
class Design:
    """The sequential design the rule read at the look that decided: the floor, the alpha
    each look spends, where the looks fall, the cap, the win the futility stops were built for
    and how often they let it through, the analysis, and the pairs so far."""

    threshold_pct: float | None = None
    alpha_per_look: float | None = None
    alphas: list[float] = field(default_factory=list)
    schedule: list[int] = field(default_factory=list)
    cap: int | None = None
    designed_for_pct: float | None = None
    designed_power: float | None = None
    analysis: str | None = None  # "paired" | "two-sample"
    n_baseline: int | None = None
    n_candidate: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return values(self)


@dataclass(frozen=True)
class SentinelExtension:
    """The pairs a win ran on past its decision, for a sentinel to be resolved: when the
    primary metric decided, how many pairs were added, what ran them and how it ended."""

    primary_decided_at: int
    pairs_added: int
    ran: str  # "sentinel command" | "bench"
    outcome: str
    verdicts: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return values(self)


@dataclass(frozen=True)
class HoldoutEvidence:
    """The hidden holdout's paired runs after a win on the bench, and its verdict: `win`,
    `no_win` (undecided), `no_gain`, `worse` or `unmeasured`; `ok` when the win stands."""

    metric: str
    direction: Direction
    unit: str | None
    budget_pct: float
    min_gain_pct: float
    require_win: bool
    pairs: int
    confidence: float
    baseline_samples: list[float]
    candidate_samples: list[float]
    verdict: str
    ok: bool
    reason: str
    baseline_median: float | None = None
    candidate_median: float | None = None
    change_pct: float | None = None
    ci_low_pct: float | None = None
    ci_high_pct: float | None = None
    duration_s: float | None = None  # the holdout's bench seconds, once they are known

    _COMPARED = ("baseline_median", "candidate_median", "change_pct", "ci_low_pct", "ci_high_pct")

    @classmethod
    def from_dict(cls, found: Mapping[str, Any]) -> HoldoutEvidence:
        given = fields_in(cls, found)
        given["direction"] = Direction(found.get("direction", Direction.LOWER))
        for name in ("budget_pct", "min_gain_pct", "confidence"):
            given.setdefault(name, 0.0)
        given.setdefault("require_win", False)
        given.setdefault("pairs", len(found.get("candidate_samples") or []))
        for name in ("baseline_samples", "candidate_samples"):
            given.setdefault(name, [])
        given.setdefault("metric", "")
        given.setdefault("unit", None)
        given.setdefault("verdict", "unmeasured")
        given.setdefault("ok", False)
        given.setdefault("reason", "")
        return cls(**given)

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = values(self)
        found["direction"] = str(self.direction)
        if self.verdict == "unmeasured":  # not compared: no medians, no interval
            for name in self._COMPARED:
                del found[name]
        if self.duration_s is None:
            del found["duration_s"]
        return found


@dataclass(frozen=True)
class Decision:
    """The rule's verdict and everything it read: each metric's evidence (`primary` names the
    one that decides), each sentinel's, the design at the look that decided, the pairs a win
    ran on for its sentinels, and the holdout's verdict when it ran."""

    # keep | discard | inconclusive. A status or rule this version does not know (an older
    # journal's) reads as its text: the record stays readable, and says what it said.
    status: Status | str
    rule: Rule | str
    reason: str
    look: int | None = None  # None in a decision recovered from a commit's trailer
    primary: str | None = None  # None in a journal from before it was named
    metrics: dict[str, Evidence] = field(default_factory=dict)
    sentinels: dict[str, SentinelEvidence] = field(default_factory=dict)
    design: Design | None = None
    sentinel_extension: SentinelExtension | None = None
    holdout: HoldoutEvidence | None = None

    @property
    def evidence(self) -> Evidence:
        """The primary metric's; in a journal from before `primary` was named, the one the
        judge's floor (`threshold_pct`) went on; empty when nothing was measured."""
        if self.primary in self.metrics:
            return self.metrics[self.primary]
        floored = (e for e in self.metrics.values() if e.threshold_pct is not None)
        return next(floored, Evidence())

    def to_dict(self) -> dict[str, Any]:
        """The record's `decision`, as the journal holds it."""
        found: dict[str, Any] = {"status": str(self.status), "rule": str(self.rule)}
        found["reason"] = self.reason
        if self.look is not None:
            found["look"] = self.look
        if self.primary is not None:
            found["primary"] = self.primary
        if self.design is not None:
            found |= self.design.to_dict()
        if self.sentinel_extension is not None:
            found["sentinel_extension"] = self.sentinel_extension.to_dict()
        if self.holdout is not None:
            found["holdout"] = self.holdout.to_dict()
        found["metrics"] = {name: ev.to_dict() for name, ev in self.metrics.items()}
        return found

    def sentinels_dict(self) -> dict[str, dict[str, Any]]:
        """The record's `sentinels`."""
        return {name: ev.to_dict() for name, ev in self.sentinels.items()}

    @classmethod
    def from_dict(
        cls, found: Mapping[str, Any], sentinels: Mapping[str, Any] | None = None
    ) -> Decision:
        """A record's `decision` (and its `sentinels`), whose shape the record has checked."""
        design = fields_in(Design, found)
        extension = found.get("sentinel_extension")
        holdout = found.get("holdout")
        return cls(
            status=_member(Status, found.get("status")),
            rule=_member(Rule, found.get("rule")),
            reason=found.get("reason") or "",
            look=found.get("look"),
            primary=found.get("primary"),
            metrics={k: Evidence.from_dict(v) for k, v in (found.get("metrics") or {}).items()},
            sentinels={k: SentinelEvidence.from_dict(v) for k, v in (sentinels or {}).items()},
            design=Design(**design) if design else None,
            sentinel_extension=(
                SentinelExtension(**fields_in(SentinelExtension, extension))
                if isinstance(extension, Mapping)
                else None
            ),
            holdout=HoldoutEvidence.from_dict(holdout) if isinstance(holdout, Mapping) else None,
        )
