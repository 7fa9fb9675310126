"""What a measurement gathers: each arm's samples and runs, and how a failed one ends.

How a failed build or run becomes a record status is decided here and in measure.py's
`run_failure`, nowhere else (`PairMeasurement.status`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..journal.decision import Decision
from ..statuses import Status
from .proc import RunResult

__all__ = ["BASELINE", "CANDIDATE", "Measurement", "PairMeasurement"]

BASELINE, CANDIDATE = "baseline", "candidate"


@dataclass
class Measurement:
    """Samples of one arm; `failure` is a record status when a run could not complete."""

    samples: dict[str, list[float]] = field(default_factory=dict)
    runs: list[RunResult] = field(default_factory=list)
    failure: str | None = None  # "crash", "timeout" or "interrupted"
    detail: str = ""

    @property
    def logs(self) -> list[str]:
        return [r.log_path for r in self.runs]

    @property
    def durations(self) -> list[float]:
        return [round(r.duration_s, 3) for r in self.runs]

    @property
    def tail(self) -> str | None:
        return self.runs[-1].tail if self.runs else None

    @property
    def duration_s(self) -> float:
        return sum(r.duration_s for r in self.runs)


@dataclass
class PairMeasurement:
    """Both arms of an interleaved measurement, and the decision that ended it."""

    baseline: Measurement = field(default_factory=Measurement)
    candidate: Measurement = field(default_factory=Measurement)
    decision: Decision | None = None
    failure: str | None = None
    failed_arm: str | None = None  # BASELINE or CANDIDATE, when a run failed
    detail: str = ""
    builds: list[RunResult] = field(default_factory=list)
    warmup: Measurement = field(default_factory=Measurement)  # runs made and dropped
    # The holdout's runs (holdout_runs.py), after the bench decided a keep: best, candidate.
    holdout: tuple[Measurement, Measurement] | None = None

    @property
    def status(self) -> Status | None:
        """The record status of a measurement that failed: the best failing is no verdict on
        the candidate (undecided, tried again); None when it did not fail."""
        if self.failure is None:
            return None
        if self.failure in (Status.INTERRUPTED, Status.TAMPERED):
            return Status(self.failure)
        return Status.BASELINE_FAILED if self.failed_arm == BASELINE else Status(self.failure)

    @property
    def logs(self) -> list[str]:
        """Every bench run's log, baseline arm first, then the holdout's."""
        held = [*self.holdout[0].logs, *self.holdout[1].logs] if self.holdout else []
        return self.baseline.logs + self.candidate.logs + held
