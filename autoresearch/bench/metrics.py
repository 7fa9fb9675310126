"""Bench output -> {metric name: float}: `METRIC name=value` lines, `go test -bench` rows, and
the other tools' formats (readers/formats.py), from the bench's output or a file it writes.

The bench's output is the workload's too: a program that prints `METRIC t_ms=1` speaks for
itself. So each bench run is also given a channel the workload need never hold: a file
descriptor named by `AUTORESEARCH_METRIC_FD`, writing to a file beside the run's log. A bench
script that writes its METRIC lines there, and closes it for the program it times (`init`'s
scripts and the bundled target do), is read from it alone: whatever the program prints is
then only its log."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import MetricParseError, UserError
from ..files import read_bounded
from ..readers.formats import (
    MAX_MAGNITUDE,
    detect,
    finite,
    parse_go_bench,
    read_format,
    rows_declared,
)
from .proc import read_log

if TYPE_CHECKING:
    from ..config import BenchConfig

__all__ = [
    "METRIC_FD_ENV",
    "metric_channel",
    "parse_go_bench",
    "parse_metrics",
    "read_run_metrics",
    "run_output",
]

METRIC_FD_ENV = "AUTORESEARCH_METRIC_FD"
MAX_CHANNEL_BYTES = 16 * 1024 * 1024  # METRIC lines and a results document, not a dump
METRIC_PREFIX = "METRIC"
_NAME = r"[A-Za-z_][A-Za-z0-9_.\-/]*"
_METRIC_LINE = re.compile(rf"^METRIC\s+({_NAME})\s*=\s*(\S+)\s*$")
# METRIC text after other output on the same line: a workload that printed a forged line and
# no newline, so that the bench's real line was glued onto its own.
_GLUED = re.compile(rf"\S\s*METRIC\s+{_NAME}\s*=")


def parse_metrics(text: str, source: str = "bench output") -> dict[str, float]:
    """Parse `METRIC name=value` lines; any other line is ignored.

    A line that starts with METRIC but is not well formed, a value that is not a finite number,
    a name printed twice, METRIC text in the middle of a line, or output that ends inside a
    line holding METRIC text is an error naming the line: a bench that half-reports would
    otherwise be judged on the half it got right, and a workload that prints a forged line
    without its newline would have the bench's real line glued onto it, and ignored.
    """
    found: dict[str, float] = {}
    seen_at: dict[str, int] = {}
    lines = text.splitlines()
    if lines and not text.endswith(("\n", "\r")) and METRIC_PREFIX in lines[-1]:
        raise MetricParseError(
            f"{source}, line {len(lines)}: the output ends inside a line holding METRIC text "
            "(no newline after it): a METRIC line counts only whole"
        )
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        if _GLUED.search(line):
            raise MetricParseError(
                f"{source}, line {lineno}: METRIC text in the middle of a line ({_cut(line)!r}):"
                " a METRIC line counts only whole, on a line of its own"
            )
        if not line.startswith(METRIC_PREFIX) or not (
            len(line) == len(METRIC_PREFIX) or line[len(METRIC_PREFIX)].isspace()
        ):
            continue
        match = _METRIC_LINE.match(line)
        if not match:
            raise MetricParseError(
                f"{source}, line {lineno}: malformed METRIC line {raw.strip()!r} "
                "(expected 'METRIC name=value')"
            )
        name, value_text = match.groups()
        value = finite(value_text)
        if value is None:
            raise MetricParseError(
                f"{source}, line {lineno}: METRIC {name} has value {value_text!r}, "
                f"which is not a finite number of magnitude at most {MAX_MAGNITUDE:g}"
            )
        if name in found:
            raise MetricParseError(
                f"{source}, line {lineno}: METRIC {name} printed twice "
                f"(first on line {seen_at[name]})"
            )
        found[name] = value
        seen_at[name] = lineno
    return found


def metric_channel(log: Path) -> Path:
    """Where the METRIC channel of the run logged at `log` is written."""
    return log.with_name(log.name + ".metrics")


def run_output(log: Path | str) -> tuple[str, str]:
    """What one bench run reported and where: its METRIC channel when it wrote anything there,
    else its log (a bench that never uses the channel)."""
    channel = metric_channel(Path(log))
    # What the loop kept of the channel (channel.py): at most one byte past the limit.
    try:
        data = read_bounded(channel, MAX_CHANNEL_BYTES + 1, "METRIC channel")
    except UserError:
        data = b""
    if len(data) > MAX_CHANNEL_BYTES:
        raise MetricParseError(
            f"{channel}: more than {MAX_CHANNEL_BYTES // 2**20} MB written to the METRIC channel"
        )
    if data:
        return data.decode("utf-8", errors="replace"), str(channel)
    return read_log(log), str(log)


def _cut(line: str, most: int = 120) -> str:
    return line if len(line) <= most else line[: most - 1] + "…"


def read_run_metrics(
    bench: BenchConfig, text: str, tree: Path, source: str, written: bool = True
) -> dict[str, float]:
    """The metrics of one bench run: its output `text` (its log, `source`) and the file it
    wrote (`bench.output`, in its `tree`; not for `written=False`, the sentinel command), read
    in `bench.format`. METRIC lines win over anything else of the same name.

    `format = "auto"`: a run that printed METRIC lines is read for those (and `go test -bench`
    rows with `go_bench`); otherwise, and for the output file, each format recognised in it."""
    with rows_declared(bench.rows):
        return _read_run(bench, text, tree, source, written)


def _read_run(
    bench: BenchConfig, text: str, tree: Path, source: str, written: bool
) -> dict[str, float]:
    metrics: dict[str, float] = {}
    output = bench.output if written else ""
    if output:
        path = tree / output
        try:  # the run's: read as the one reader reads what a run left (files.py)
            data = read_bounded(path, MAX_CHANNEL_BYTES, "bench output", follow=False)
        except UserError as exc:
            said = (
                f"the bench wrote no {output} (bench.output) in {tree}"
                if not path.exists() and not path.is_symlink()
                else f"the bench's {output} (bench.output) is not read: {exc}"
            )
            raise MetricParseError(f"{said}; its log: {source}") from None
        results = data.decode("utf-8", errors="replace")
        metrics.update(_read(bench.format, results, str(path), required=True))
    lines = parse_metrics(text, source)
    if not output and (bench.format != "auto" or not lines):
        metrics.update(_read(bench.format, text, source, required=False))
    if bench.go_bench:
        metrics.update(read_format("go", text, source))
    metrics.update(lines)
    return metrics


def _read(fmt: str, text: str, source: str, required: bool) -> dict[str, float]:
    """`text` in format `fmt`, or in every format found in it (`auto`)."""
    if fmt != "auto":
        return read_format(fmt, text, source)
    found = detect(text)
    if required and not found:
        raise MetricParseError(
            f"{source}: no benchmark format recognised (set bench.format to the tool's)"
        )
    metrics: dict[str, float] = {}
    for name in found:
        metrics.update(read_format(name, text, source))
    return metrics
