"""Repeated bench runs -> samples per metric, or the reason there are none."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .config import Config
from .errors import MetricParseError
from .metrics import parse_output
from .proc import RunResult, read_log, run

__all__ = ["Measurement", "measure"]


@dataclass
class Measurement:
    """Samples from `runs` bench runs; `failure` is a record status when they could not all run."""

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


def measure(
    config: Config,
    *,
    cwd: Path,
    log_for: Callable[[int], Path],
    count: int,
    stop: threading.Event | None = None,
    env: dict[str, str] | None = None,
    on_run: Callable[[int, int], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> Measurement:
    """Run the bench `count` times in `cwd`; the first failed run ends the measurement."""
    result = Measurement()
    primary = config.metric.name
    for index in range(1, count + 1):
        if on_run:
            on_run(index, count)
        outcome = run(
            config.bench.command,
            cwd=cwd,
            log_path=log_for(index),
            timeout_s=config.bench.timeout_s,
            env={**config.bench.env, **(env or {})},
            stop=stop,
            on_start=on_start,
        )
        result.runs.append(outcome)
        if outcome.timed_out:
            result.failure, result.detail = "timeout", f"bench {outcome.describe()}"
            return result
        if outcome.interrupted:
            result.failure, result.detail = "interrupted", "bench stopped by a signal"
            return result
        if outcome.exit_code != 0:
            result.failure = "crash"
            result.detail = f"bench failed ({outcome.describe()}); log: {outcome.log_path}"
            return result
        try:
            values = parse_output(
                read_log(outcome.log_path), go_bench=config.bench.go_bench, source=outcome.log_path
            )
        except MetricParseError as exc:
            result.failure, result.detail = "crash", str(exc)
            return result
        if primary not in values:
            result.failure = "crash"
            result.detail = f"bench printed no 'METRIC {primary}=...' line; log: {outcome.log_path}"
            return result
        for name, value in values.items():
            result.samples.setdefault(name, []).append(value)
    return result
