"""The checks' run as the record holds it: how it ended and how many tests it counted, as
values, with their one codec to and from the journal's JSON (the record's `checks`, the
format it has always had).

The loop's process result (bench/proc.py's `RunResult`) becomes a `ChecksRun` when it is
recorded; the review, the agents' outcome and the tests read it back by attribute.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ChecksRun", "TestCount"]


@dataclass(frozen=True)
class TestCount:
    """A test run's totals (the runner's report: tests, failures and errors, skipped)."""

    __test__ = False  # a value, not a test class for pytest to collect

    tests: int
    failed: int
    skipped: int

    @property
    def passed(self) -> int:
        return self.tests - self.failed - self.skipped

    def to_dict(self) -> dict[str, int]:
        return {"tests": self.tests, "passed": self.passed, "failed": self.failed,
                "skipped": self.skipped}  # fmt: skip

    @classmethod
    def from_dict(cls, data: object) -> TestCount | None:
        """The count a record or the best's file holds; None when it holds none (or a
        damaged one: no reference is better than a wrong one)."""
        if not isinstance(data, Mapping):
            return None
        try:
            return cls(int(data["tests"]), int(data["failed"]), int(data["skipped"]))
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True)
class ChecksRun:
    """The checks' command, how it ended (its exit code; timed out; stopped by a signal to the
    loop), how long it took, its log and its last output, and the tests it counted."""

    command: str
    exit_code: int | None
    timed_out: bool
    interrupted: bool
    duration_s: float
    log: str
    tail: str
    tests: TestCount | None = None

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "command": self.command,
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "interrupted": self.interrupted,
            "duration_s": round(self.duration_s, 3),
            "log": self.log,
            "tail": self.tail,
        }
        if self.tests is not None:
            found["tests"] = self.tests.to_dict()
        return found

    @classmethod
    def from_dict(cls, found: Mapping[str, Any]) -> ChecksRun:
        """A record's `checks`, whose shape the record has checked; what it lacks is unknown."""
        return cls(
            command=str(found.get("command") or ""),
            exit_code=found.get("exit_code"),
            timed_out=bool(found.get("timed_out")),
            interrupted=bool(found.get("interrupted")),
            duration_s=float(found.get("duration_s") or 0.0),
            log=str(found.get("log") or ""),
            tail=str(found.get("tail") or ""),
            tests=TestCount.from_dict(found.get("tests")),
        )
