"""What crosses the executor seam: a job to measure, and what measuring it found, as values.

The night (loop/dispatch.py) hands jobs to an executor (this machine's own worktrees, bench
hosts, the suite's in-process fake) and lands what comes back, one path for all of them. A
`Job` is everything a slot needs to measure one thing: an experiment's two arms, the best's
calibration, or the confirmation. A `JobResult` is what the slot found: the failure as the loop
maps it, or both arms' runs for the rule to replay, with the calibration it judged by. Both are
plain values, so that they cross a process or a network boundary pickled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..journal.placement import Confinement
from ..journal.records import CalibrationRecord
from ..statuses import Status
from .samples import Measurement, PairMeasurement

if TYPE_CHECKING:
    from ..config import Config
    from .runners import Runner

__all__ = ["CALIBRATE", "CONFIRM", "EXPERIMENT", "ArmRuns", "Job", "JobResult"]

EXPERIMENT, CALIBRATE, CONFIRM = "experiment", "calibrate", "confirm"


@dataclass(frozen=True)
class Job:
    """One measurement for a slot: an experiment's two arms, the confirmation, or the best's
    calibration alone."""

    kind: str  # EXPERIMENT, CONFIRM or CALIBRATE
    exp_id: str  # names the logs
    config: Config
    branch: str  # the session branch (a host fetches it from a bundle or `cluster.remote`)
    parent: str  # the baseline arm's commit: the best (a confirmation: the session's base)
    patch: bytes = b""  # the candidate: parent + patch (an experiment)
    paths: tuple[str, ...] = ()  # the files the patch touches: the candidate's to change
    tip: str | None = None  # the candidate: this commit (a confirmation)
    env: dict[str, str] = field(default_factory=dict)
    runs: int = 0  # a confirmation's pairs
    # Calibrations of `parent` the night holds: one measured on a slot of this one's kind
    # serves (the driver's own, for this machine's slot).
    calibrations: tuple[CalibrationRecord, ...] = ()
    # Whether this job may measure `parent`'s calibration when none serves: one job per best
    # does, while the others judge by `fallbacks`, the latest calibration of an earlier best
    # for each kind of host, until it lands.
    calibrate: bool = True
    fresh: bool = False  # measure `parent`'s calibration again, whatever the slot holds
    fallbacks: tuple[CalibrationRecord, ...] = ()
    origin: str = ""  # the driver's machine: with the repository, whose session this is
    # How the target's commands run: None, a LocalRunner of the slot's own (its sandbox, its
    # machine); else the session's runner (bench/runners.py), a simulated bench's.
    runner: Runner | None = None


@dataclass(frozen=True)
class ArmRuns:
    """One arm's runs: its samples by metric, each run's duration, each run's log (where the
    driver keeps it, once landed) and the last run's tail."""

    samples: dict[str, list[float]] = field(default_factory=dict)
    durations: list[float] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    tail: str | None = None

    @classmethod
    def of(cls, arm: Measurement) -> ArmRuns:
        return cls(dict(arm.samples), arm.durations, list(arm.logs), arm.tail)


@dataclass(frozen=True)
class JobResult:
    """A job's result on one slot: who measured it, when, with what; its failure (a record
    status) or both arms' runs."""

    host: str | None = None  # a bench host's machine; None: the driver's own worktrees
    worker: str | None = None
    environment: dict[str, str | int | None] = field(default_factory=dict)
    started_at: str = ""
    ended_at: str = ""
    duration_s: float = 0.0
    calibration: CalibrationRecord | None = None  # what the slot judged an experiment by
    calibration_new: bool = False  # measured by this job (the driver journals it)
    failure: Status | None = None
    failed_arm: str | None = None
    detail: str = ""
    # Each log's tail, by file name, where the logs are on another machine: the executor
    # copies them under the session's logs as the result lands.
    tails: dict[str, str] = field(default_factory=dict)
    baseline: ArmRuns | None = None
    candidate: ArmRuns | None = None
    # The holdout's runs (best, candidate) when the bench decided a keep and the session has
    # one (holdout_runs.py), or a confirmation measured it: the driver replays them.
    holdout: tuple[ArmRuns, ArmRuns] | None = None
    confinement: Confinement | None = None  # how the candidate's runs were confined
    leftovers_stopped: int = 0  # processes a killed worker left running, stopped first

    @classmethod
    def of_pair(cls, pair: PairMeasurement, **facts: Any) -> JobResult:
        """What a measurement found, as values: both arms' runs, the holdout's when it ran."""
        held = pair.holdout
        return cls(
            failure=pair.status,
            failed_arm=pair.failed_arm,
            detail=pair.detail,
            baseline=ArmRuns.of(pair.baseline),
            candidate=ArmRuns.of(pair.candidate),
            holdout=(ArmRuns.of(held[0]), ArmRuns.of(held[1])) if held else None,
            **facts,
        )

    @property
    def name(self) -> str | None:
        """The host as a record names it (with its Dask worker when it has one); None for the
        driver's own worktrees."""
        if self.host is None:
            return None
        return f"{self.host} ({self.worker})" if self.worker else self.host

    @property
    def arms(self) -> tuple[ArmRuns, ArmRuns]:
        """Both arms' runs (empty ones for a job that failed before measuring)."""
        return (self.baseline or ArmRuns(), self.candidate or ArmRuns())

    @property
    def holdout_seconds(self) -> float:
        """What the holdout's runs took, both arms (0 when none ran)."""
        held = self.holdout or ()
        return round(sum(sum(arm.durations) for arm in held), 3)

    @property
    def log_paths(self) -> list[str]:
        """Every run's log: the baseline arm's, the candidate's, then the holdout's."""
        held = [*self.holdout[0].logs, *self.holdout[1].logs] if self.holdout else []
        return [*self.arms[0].logs, *self.arms[1].logs, *held]

    @property
    def samples(self) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
        baseline, candidate = self.arms
        return baseline.samples, candidate.samples

    def copied(self, where: Callable[[str], Path]) -> JobResult:
        """The result with each log's tail written where `where(name)` says (the driver's copy
        of a log made on another machine; `name` without `.log`), and its runs naming those
        copies."""
        for name, text in self.tails.items():
            path = where(name.removesuffix(".log"))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")

        def moved(arm: ArmRuns) -> ArmRuns:
            logs = [str(where(Path(p).name.removesuffix(".log"))) for p in arm.logs]
            return replace(arm, logs=logs)

        held = self.holdout
        return replace(
            self,
            baseline=None if self.baseline is None else moved(self.baseline),
            candidate=None if self.candidate is None else moved(self.candidate),
            holdout=None if held is None else (moved(held[0]), moved(held[1])),
        )
