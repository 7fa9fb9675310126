"""What a bench host sends back for a job: values, not a dict of keys the driver reads back.

A `HostRun` crosses the Dask boundary pickled (every field is a plain value or one of the
journal's records), and the driver's landing reads it by attribute: the host's failure as the
loop maps it, or both arms' runs for the rule to replay, with the calibration it judged by.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..bench.samples import Measurement
from ..journal.placement import Confinement
from ..journal.records import CalibrationRecord
from ..statuses import Status

__all__ = ["ArmRuns", "HostRun"]


@dataclass(frozen=True)
class ArmRuns:
    """One arm's runs on the host: its samples by metric, each run's duration, its logs' file
    names (their tails travel in `HostRun.logs`) and the last run's tail."""

    samples: dict[str, list[float]] = field(default_factory=dict)
    durations: list[float] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    tail: str | None = None

    @classmethod
    def of(cls, arm: Measurement) -> ArmRuns:
        names = [Path(run.log_path).name for run in arm.runs]
        return cls(dict(arm.samples), arm.durations, names, arm.tail)


@dataclass(frozen=True)
class HostRun:
    """A job's result on one host: who measured it, when, with what; its failure (a record
    status mapped on the host) or both arms' runs."""

    host: str
    worker: str | None = None
    environment: dict[str, str | int | None] = field(default_factory=dict)
    started_at: str = ""
    ended_at: str = ""
    duration_s: float = 0.0
    calibration: CalibrationRecord | None = None  # what the host judged an experiment by
    calibration_new: bool = False  # measured by this job (the driver journals it)
    failure: Status | None = None
    failed_arm: str | None = None
    detail: str = ""
    logs: dict[str, str] = field(default_factory=dict)  # each log's tail, by file name
    baseline: ArmRuns | None = None
    candidate: ArmRuns | None = None
    # The holdout's runs (best, candidate) when the host's bench decided a keep and the session
    # has one (bench/holdout_runs.py), or a confirmation measured it: the driver replays them.
    holdout: tuple[ArmRuns, ArmRuns] | None = None
    confinement: Confinement | None = None  # how the host ran the candidate, for the record
    leftovers_stopped: int = 0  # processes a killed worker left running, stopped first

    @property
    def name(self) -> str:
        """The host as a record names it: with its Dask worker when it has one."""
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
    def log_names(self) -> list[str]:
        """Every run's log, as the serial loop lists them: the baseline arm's, the candidate's,
        then the holdout's."""
        held = [*self.holdout[0].logs, *self.holdout[1].logs] if self.holdout else []
        return [*self.arms[0].logs, *self.arms[1].logs, *held]

    @property
    def samples(self) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
        baseline, candidate = self.arms
        return baseline.samples, candidate.samples
