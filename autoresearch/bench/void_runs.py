"""A bench run that measured nothing: its commands failed while the script went on, or it
printed a zero where a zero is no measurement.

A script that runs `go test` in a loop, or pipes a harness through `grep`, exits 0 whatever
its commands did; what it then prints (`METRIC t_ms=0`, a default, the last good value) is not
a measurement, and on a lower-is-better metric a zero is a perfect score. So a run is read
twice: its metrics, and its own output for the marks of a failed command (Go's `FAIL` and
`panic:`, Rust's panic, Python's traceback, a shell's "command not found", the errors a
denied write or read prints). Either is a failed run with that reason, in every arm and
phase, and in `check`'s first run, where a confined run's denied path is named
(loop/preflight.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import MetricParseError
from .metrics import read_run_metrics, run_output
from .proc import read_log

if TYPE_CHECKING:
    from ..config import Config

__all__ = ["DENIED", "counts", "denied_path", "read_sample", "said_failed", "void_reason"]

# Lines that say a command of the run failed, each with what it is.
FAILED_LINES = (
    (re.compile(r"^(?:--- )?FAIL(?::|\s|$)"), "a Go test or benchmark failed"),
    (re.compile(r"^panic: "), "a Go program panicked"),
    (re.compile(r"thread '[^']*' panicked at"), "a Rust program panicked"),
    (re.compile(r"^Traceback \(most recent call last\):"), "a Python program raised"),
    (re.compile(r": (?:command )?not found$"), "a program it runs was not found"),
)
# A write or read the system refused: in a confined run, what the sandbox denied.
DENIED = re.compile(r"read-only file system|permission denied", re.IGNORECASE)

# Words in a metric's name (or its unit) that say it counts: zero is a value there (an
# allocation win: 4 allocs/op to 0), where a time or a rate of zero measured nothing.
COUNT_WORDS = ("alloc", "count", "bytes", "b_op", "error", "miss", "fault", "retries", "num")


def read_sample(
    config: Config, log: Path, tree: Path, sentinels_only: bool = False, holdout: bool = False
) -> tuple[dict[str, float] | None, str]:
    """One run's metrics, read from what it reported (its channel, its log, its output file
    in `tree`), or None and why it is no sample: unreadable, without a metric it was run
    for, or having measured nothing (`void_reason`)."""
    if sentinels_only:
        what, needed = "bench.sentinel_command", [(s.name, s.unit) for s in config.sentinel]
    elif holdout:
        spec = config.holdout_metric
        what, needed = "holdout.command", [(spec.name, spec.unit)]
    else:
        what, needed = "bench", [(config.metric.name, config.metric.unit)]
    try:
        text, source = run_output(log)
        values = read_run_metrics(config.bench, text, tree, source, written=not sentinels_only)
    except MetricParseError as exc:
        return None, str(exc)
    missing = [name for name, _ in needed if name not in values]
    if missing:
        return None, f"{what} printed no 'METRIC {missing[0]}=...' line; log: {log}"
    void = void_reason(read_log(log), values, needed)
    if void is not None:
        return None, f"{what} measured nothing: {void}; log: {log}"
    return values, ""


def said_failed(text: str) -> str | None:
    """What the run's output says failed (the first such line, with what it means), or
    None."""
    for line in text.splitlines():
        line = line.strip()
        if DENIED.search(line):
            return f"a write or read was refused: {_cut(line)!r}"
        for pattern, what in FAILED_LINES:
            if pattern.search(line):
                return f"{what}: {_cut(line)!r}"
    return None


def counts(name: str, unit: str = "") -> bool:
    """Whether a metric counts something (a zero is a value), by its name or its unit."""
    said = f"{name} {unit}".lower()
    return any(word in said for word in COUNT_WORDS)


def void_reason(
    output: str, values: dict[str, float], needed: Iterable[tuple[str, str]]
) -> str | None:
    """Why a run that exited 0 measured nothing, or None: its `output` says a command
    failed, or a `needed` metric (name, unit) that is not a count is zero."""
    said = said_failed(output)
    if said is not None:
        return f"its output says a command failed ({said})"
    for name, unit in needed:
        if values.get(name) == 0 and not counts(name, unit):
            return (
                f"it printed {name}=0, which no run of a time or a rate measures (its commands "
                f"failed, and the script printed a default?); a metric that counts says so in "
                f"its name or unit ({', '.join(COUNT_WORDS[:3])}, ...)"
            )
    return None


def denied_path(text: str) -> str | None:
    """The path a refused write or read names in the run's output, or None."""
    for line in text.splitlines():
        if DENIED.search(line):
            found = re.findall(r"(/[^\s:'\"‘’`“”]+)", line)  # GNU tools quote it ‘so’
            if found:
                return max(found, key=len)
    return None


def _cut(line: str, most: int = 160) -> str:
    return line if len(line) <= most else line[: most - 1] + "…"
