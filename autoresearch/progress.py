"""Live progress in the terminal: experiment n of N, phase, elapsed time, best against baseline."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress", "format_value"]


def format_value(value: float | None, unit: str = "") -> str:
    if value is None:
        return "n/a"
    text = f"{value:.4g}" if abs(value) < 1e6 else f"{value:.0f}"
    return f"{text} {unit}".strip()


class Progress:
    """One line per event on stderr, so a log file of a night's run reads like the terminal."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False):
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self._experiment_started = time.monotonic()
        self._label = ""

    def _say(self, text: str) -> None:
        if not self.quiet:
            print(text, file=self.stream, flush=True)

    def info(self, text: str) -> None:
        self._say(f"autoresearch: {text}")

    def warn(self, text: str) -> None:
        self._say(f"warning: {text}")

    def experiment(self, n: int, total: int | None, title: str) -> None:
        self._experiment_started = time.monotonic()
        of = f"/{total}" if total else ""
        self._label = f"[{n}{of}]"
        self._say(f"{self._label} {title}")

    def about(self, n: int, started: float) -> None:
        """The lines that follow are experiment n's, started at `started` (time.monotonic):
        on a cluster, results land in another order than they were sent."""
        self._label, self._experiment_started = f"[{n}]", started

    def phase(self, text: str) -> None:
        elapsed = time.monotonic() - self._experiment_started
        self._say(f"{self._label} {text} ({elapsed:.0f}s)")

    def outcome(self, status: str, reason: str, best: str) -> None:
        elapsed = time.monotonic() - self._experiment_started
        self._say(f"{self._label} {status}: {reason} [{elapsed:.0f}s] | best {best}")
