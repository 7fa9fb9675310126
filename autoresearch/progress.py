"""Live progress in the terminal: experiment n of N, phase, elapsed time, best against baseline."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import TextIO

__all__ = ["Plan", "Progress", "counted", "format_value"]


def format_value(value: float | None, unit: str = "") -> str:
    if value is None:
        return "n/a"
    text = f"{value:.4g}" if abs(value) < 1e6 else f"{value:.0f}"
    return f"{text} {unit}".strip()


def counted(n: int, noun: str) -> str:
    """`1 experiment`, `2 experiments`: a count with its noun."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


class Progress:
    """One line per event on stderr, so a log file of a night's run reads like the terminal."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False):
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self._experiment_started = time.monotonic()
        self._label = ""
        self._n: int | None = None  # the experiment the label names

    def _say(self, text: str) -> None:
        if not self.quiet:
            print(text, file=self.stream, flush=True)

    def info(self, text: str) -> None:
        self._say(f"autoresearch: {text}")

    def warn(self, text: str) -> None:
        self._say(f"warning: {text}")

    def experiment(self, n: int, of: str | None, title: str) -> None:
        """Experiment n starts; `of` is its run's count (Plan.count), None when unknown."""
        self._experiment_started = time.monotonic()
        self._label = f"[{n}/{of}]" if of else f"[{n}]"
        self._n = n
        self._say(f"{self._label} {title}")

    def about(self, n: int, started: float) -> None:
        """The lines that follow are experiment n's, started at `started` (time.monotonic):
        on several slots, results land in another order than they were sent."""
        if n != self._n:
            self._label, self._experiment_started, self._n = f"[{n}]", started, n

    def phase(self, text: str) -> None:
        elapsed = time.monotonic() - self._experiment_started
        self._say(f"{self._label} {text} ({elapsed:.0f}s)")

    def outcome(self, status: str, reason: str, best: str) -> None:
        elapsed = time.monotonic() - self._experiment_started
        self._say(f"{self._label} {status}: {reason} [{elapsed:.0f}s] | best {best}")


@dataclass
class Plan:
    """A run's count of experiments, "n of N", with N fixed at the run's first experiment.

    A reader who saw [1/10] must not find [4/12] and then [27/27]: N is what the proposers
    said they had at the start (within the budget), or the budget itself, marked "<=", when a
    proposer cannot say (a search does not know how long it will take). Work the night adds
    past a known plan (a second look at a near miss, a patch dropped into the queue) shows as
    "+k" beside N, each time with a line saying why; N itself never moves."""

    total: int | None = None
    firm: bool = True  # the proposers' own count, not the budget's cap
    added: int = 0
    looks: int = 0  # second looks pending when last counted

    def count(
        self, n: int, pending: int | None, looks: int, budget_left: int
    ) -> tuple[str, str | None]:
        """Experiment n's "N" (or "N+k", "<=N"), and why the night grew, when it just did.
        `pending`: proposals left (None: unknown); `looks`: second looks pending;
        `budget_left`: experiments the budget still allows, this one included."""
        ahead = None if pending is None else max(1, min(pending + looks, budget_left))
        grew = None
        if self.total is None:
            self.firm = ahead is not None
            self.total = n - 1 + (ahead if ahead is not None else max(1, budget_left))
        elif self.firm:
            want = max(n, n - 1 + ahead) if ahead is not None else n
            more = want - (self.total + self.added)
            if more > 0:
                self.added += more
                why = (
                    "a second look at a near miss"
                    if looks > self.looks
                    else "new proposals arrived"
                )
                grew = f"{more} more experiment{'s' if more > 1 else ''} than planned: {why}"
        self.looks = looks
        if not self.firm:
            return f"<={self.total}", grew
        return (f"{self.total}+{self.added}" if self.added else str(self.total)), grew
