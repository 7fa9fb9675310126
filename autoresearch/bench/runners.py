"""Where bench, build and checks commands run: the seam between the loop and a machine.

The loop's logic (patch checks, the decision rule, the journal, git) never runs a command
itself; a runner does, and hands back what `proc.run` returns. `LocalRunner` runs it here, as
a subprocess with a timeout and a process group; the calibration benchmark plugs in a runner
that writes simulated bench output instead, so that it measures the real interleaving and
decision code; a runner for remote bench hosts fits the same place.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from .proc import RunResult, run

__all__ = ["LocalRunner", "Runner"]


class Runner(Protocol):
    def run(
        self,
        command: str,
        *,
        cwd: Path,
        log_path: Path,
        timeout_s: float,
        env: dict[str, str],
        stop: threading.Event | None,
        on_start: Callable[[int], None] | None,
        token: str | None,
    ) -> RunResult:
        """Run `command` in `cwd`, its output in `log_path`, within `timeout_s`."""
        ...


class LocalRunner:
    """This machine, pinned to `cpus` (a taskset list) when given."""

    def __init__(self, cpus: str = ""):
        self.cpus = cpus

    def run(self, command: str, **kwargs) -> RunResult:
        return run(command, cpus=self.cpus, **kwargs)
