"""Benchmark tools' own outputs -> {metric name: float}.

Beside `METRIC` lines and `go test -bench` rows (metrics.py), the loop reads what the common
harnesses print or write: criterion (its text, or `cargo criterion --message-format=json`),
Rust's libtest `cargo bench` rows, pytest-benchmark's `--benchmark-json`, Google Benchmark's
`--benchmark_format=json`, hyperfine's `--export-json`, JMH's `-rf json`, BenchmarkDotNet's
full JSON report, Vitest's `vitest bench --outputJson`, mitata's `run({ format: "json" })`,
airspeed velocity's results file, Catch2's `--reporter xml` and Bencher's Metric Format (BMF)
(the documents: documents.py). `auto` recognises each by its shape alone (`detect`).

A metric's name keeps the benchmark's groups, lowercased, with `_` for every other character
(criterion's `fib/20` is `fib_20`, pytest's `test_fib[20]` is `test_fib_20`), so families and
scales read as they do for Go; then its measure. Times are in nanoseconds whatever the tool
printed (`_ns`; a per-operation time `_ns_op`), so one bench read by two tools compares;
throughputs keep their unit (`_ops_s`, `_mib_s`). A benchmark reported several times (repeats)
keeps its median; with `[bench] rows = N` declared, a benchmark reported more than N times in
one run is an error: rows the timed program printed itself would move the median.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath
from typing import Any

from ..errors import MetricParseError
from .documents import DOCUMENTS, document_formats
from .rows import (
    NS_PER,
    PER_OPERATION,
    fastest_rows,
    medians,
    metric_name,
    rows_declared,
    with_minimums,
)

__all__ = [
    "FORMATS",
    "MAX_MAGNITUDE",
    "bench_problem",
    "detect",
    "finite",
    "metric_name",
    "parse_go_bench",
    "read_format",
    "rows_declared",
]

MAX_MAGNITUDE = 1e300
_NUMBER = r"[-+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
# criterion: `<name>  time:   [26.029 µs 26.251 µs 26.505 µs]`, the name alone on the line before
# when it is long; `thrpt:` lines the same way; `change:` lines are a comparison, not a value.
_CRITERION = re.compile(
    rf"^(?P<name>.*?)\s*(?P<what>time|thrpt):\s*\[\s*(?P<lo>{_NUMBER})\s+(?P<lo_unit>\S+)\s+"
    rf"(?P<est>{_NUMBER})\s+(?P<unit>\S+)\s+(?P<hi>{_NUMBER})\s+(?P<hi_unit>\S+)\s*\]\s*$"
)
# Criterion's own lines between the benchmarks, never a long name standing alone: progress
# (`Benchmarking fib: Warming up`), warnings, the change block, outlier counts.
_CRITERION_CHATTER = re.compile(
    r"^(Benchmarking .*: |Warning: |change: |Found \d+ outliers |(No change|Change within|"
    r"Performance has) )"
)
# libtest: `test fib_20 ... bench:      26,251 ns/iter (+/- 1,034)`
_LIBTEST = re.compile(
    rf"^test\s+(?P<name>\S+)\s+\.\.\.\s+bench:\s+(?P<value>{_NUMBER})\s+(?P<unit>\S+)/iter"
)
# BenchmarkName/sub-8   <iterations>   <value> <unit>   <value> <unit> ...
_GO_BENCH_ROW = re.compile(r"^(Benchmark\S+?)(?:-(\d+))?\s+(\d+)((?:\s+[-+0-9.eE]+\s+\S+)+)\s*$")
_GO_UNIT_SUFFIX = {"ns/op": "ns_op", "B/op": "bytes_op", "allocs/op": "allocs_op", "MB/s": "mb_s"}


def bench_problem(fmt: str, output: str, keep: Sequence[str] = ()) -> str | None:
    """What is wrong with the `[bench]` keys about what a run leaves behind, for the config's
    check: the format and file its results are read from, the build output kept (`keep`)."""
    if fmt != "auto" and fmt not in FORMATS:
        return f"'bench.format' is {fmt!r}; it must be one of auto, {', '.join(FORMATS)}"
    path = PurePosixPath(output)
    if output and (path.is_absolute() or ".." in path.parts):
        return (
            f"'bench.output' is {output!r}: a path inside the bench's tree, relative to it "
            "(each arm writes its own)"
        )
    for pattern in keep:
        parts = PurePosixPath(str(pattern).strip("/")).parts
        if not parts or ".." in parts or ".git" in parts:
            return (
                f"'bench.keep' holds {pattern!r}: a build output path inside the tree, as a "
                'gitignore pattern (e.g. "target/")'
            )
    return None


def read_format(name: str, text: str, source: str = "bench output") -> dict[str, float]:
    """The metrics `text` holds in format `name`; a document of that format that cannot be
    read is an error naming `source`."""
    try:
        return FORMATS[name](text)
    except MetricParseError as exc:
        raise MetricParseError(f"{source}: {exc}") from None
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise MetricParseError(f"{source}: not {name} output as expected ({exc})") from None


def detect(text: str) -> list[str]:
    """The formats `text` is recognisably written in (none for plain METRIC lines)."""
    found = document_formats(text)
    if found is not None:
        return found
    found = []
    lines = text.splitlines()
    if any(_criterion_json_line(line) for line in lines):
        found.append("criterion-json")
    if any(_CRITERION.match(line.strip()) for line in lines):
        found.append("criterion")
    if any(_LIBTEST.match(line.strip()) for line in lines):
        found.append("libtest")
    if any(_GO_BENCH_ROW.match(line.strip()) for line in lines):
        found.append("go")
    return found


# -- text formats ------------------------------------------------------------------------------


def _criterion(text: str) -> dict[str, float]:
    rows: dict[str, list[float]] = {}
    alone = ""  # the last line that is not a value: a long name stands alone above its values
    current = ""  # the benchmark the value lines belong to
    for raw in text.splitlines():
        line = raw.strip()
        match = _CRITERION.match(line)
        if match is None:
            if line and not _CRITERION_CHATTER.match(line):
                alone = line
            continue
        named = match["name"].strip()
        value, unit = _number(match["est"]), match["unit"]
        if match["what"] == "time":
            current = named or alone
            rows.setdefault(metric_name(current, "ns"), []).append(value * NS_PER[unit])
        else:  # a throughput, below its time
            rows.setdefault(metric_name(named or current, unit), []).append(value)
    return medians(rows)


def _criterion_json_line(line: str) -> dict[str, Any] | None:
    line = line.strip()
    if not line.startswith("{") or '"benchmark-complete"' not in line:
        return None
    try:
        message = json.loads(line)
    except json.JSONDecodeError:
        return None
    return message if message.get("reason") == "benchmark-complete" else None


def _criterion_json(text: str) -> dict[str, float]:
    """`cargo criterion --message-format=json`: a message a line; each finished benchmark's
    typical time (criterion's estimate) in its unit."""
    rows: dict[str, list[float]] = {}
    for line in text.splitlines():
        message = _criterion_json_line(line)
        if message is None:
            continue
        typical = message["typical"]
        value = float(typical["estimate"]) * NS_PER[typical.get("unit", "ns")]
        rows.setdefault(metric_name(message["id"], "ns"), []).append(value)
    return medians(rows)


def _libtest(text: str) -> dict[str, float]:
    rows: dict[str, list[float]] = {}
    for raw in text.splitlines():
        match = _LIBTEST.match(raw.strip())
        if match is not None:
            value = _number(match["value"]) * NS_PER[match["unit"]]
            rows.setdefault(metric_name(match["name"], "ns"), []).append(value)
    return medians(rows)


def parse_go_bench(text: str) -> dict[str, float]:
    """Parse `go test -bench` result rows into `<bench>_<unit>` metrics.

    `BenchmarkWritePack/100k-2  1  81234567 ns/op  512 B/op  9 allocs/op` gives
    `writepack_100k_ns_op`, `writepack_100k_bytes_op`, `writepack_100k_allocs_op`.
    A benchmark printed several times (-count) keeps its median, and its fastest time per
    operation beside it (rows.minimum_of: `writepack_100k_min_ns_op`).
    """
    rows: dict[str, list[float]] = {}
    for raw in text.splitlines():
        match = _GO_BENCH_ROW.match(raw.strip())
        if not match:
            continue
        bench = metric_name(match.group(1).removeprefix("Benchmark"))
        fields = match.group(4).split()
        for value_text, unit in zip(fields[0::2], fields[1::2], strict=False):
            value = finite(value_text)
            if value is None:
                continue
            suffix = _GO_UNIT_SUFFIX.get(unit) or re.sub(r"[^A-Za-z0-9]+", "_", unit).strip("_")
            rows.setdefault(f"{bench}_{suffix}", []).append(value)
    return with_minimums(medians(rows), fastest_rows(rows, PER_OPERATION))


FORMATS: dict[str, Callable[[str], dict[str, float]]] = {
    "go": parse_go_bench,
    "criterion": _criterion,
    "criterion-json": _criterion_json,
    "libtest": _libtest,
    **DOCUMENTS,
}


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def finite(text: str) -> float | None:
    """A finite number whose medians and ratios stay finite too (1.7e308 + 1.7e308 is inf)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and abs(value) <= MAX_MAGNITUDE else None
