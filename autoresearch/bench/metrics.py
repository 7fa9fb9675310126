"""Bench output -> {metric name: float}: `METRIC name=value` lines and `go test -bench` rows."""

from __future__ import annotations

import math
import re
import statistics

from ..errors import MetricParseError

__all__ = ["parse_go_bench", "parse_metrics", "parse_output"]

METRIC_PREFIX = "METRIC"
MAX_MAGNITUDE = 1e300
_NAME = r"[A-Za-z_][A-Za-z0-9_.\-/]*"
_METRIC_LINE = re.compile(rf"^METRIC\s+({_NAME})\s*=\s*(\S+)\s*$")
# BenchmarkName/sub-8   <iterations>   <value> <unit>   <value> <unit> ...
_GO_BENCH_ROW = re.compile(r"^(Benchmark\S+?)(?:-(\d+))?\s+(\d+)((?:\s+[-+0-9.eE]+\s+\S+)+)\s*$")
_GO_UNIT_SUFFIX = {"ns/op": "ns_op", "B/op": "bytes_op", "allocs/op": "allocs_op", "MB/s": "mb_s"}


def parse_metrics(text: str, source: str = "bench output") -> dict[str, float]:
    """Parse `METRIC name=value` lines; any other line is ignored.

    A line that starts with METRIC but is not well formed, a value that is not a finite number,
    or a name printed twice is an error naming the line: a bench that half-reports would
    otherwise be judged on the half it got right.
    """
    found: dict[str, float] = {}
    seen_at: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
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
        value = _finite(value_text)
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


def parse_go_bench(text: str) -> dict[str, float]:
    """Parse `go test -bench` result rows into `<bench>_<unit>` metrics.

    `BenchmarkWritePack/100k-2  1  81234567 ns/op  512 B/op  9 allocs/op` gives
    `writepack_100k_ns_op`, `writepack_100k_bytes_op`, `writepack_100k_allocs_op`.
    A benchmark printed several times (-count) keeps its median.
    """
    rows: dict[str, list[float]] = {}
    for raw in text.splitlines():
        match = _GO_BENCH_ROW.match(raw.strip())
        if not match:
            continue
        bench = _metric_stem(match.group(1))
        fields = match.group(4).split()
        for value_text, unit in zip(fields[0::2], fields[1::2], strict=False):
            value = _finite(value_text)
            if value is None:
                continue
            suffix = _GO_UNIT_SUFFIX.get(unit) or re.sub(r"[^A-Za-z0-9]+", "_", unit).strip("_")
            rows.setdefault(f"{bench}_{suffix}", []).append(value)
    return {name: statistics.median(values) for name, values in rows.items()}


def parse_output(text: str, *, go_bench: bool = False, source: str = "bench output") -> dict:
    """All metrics in a bench's output; METRIC lines win over go bench rows of the same name."""
    metrics = parse_go_bench(text) if go_bench else {}
    metrics.update(parse_metrics(text, source))
    return metrics


def _metric_stem(bench_name: str) -> str:
    stem = bench_name.removeprefix("Benchmark")
    return re.sub(r"[^A-Za-z0-9]+", "_", stem).strip("_").lower()


def _finite(text: str) -> float | None:
    """A finite number whose medians and ratios stay finite too (1.7e308 + 1.7e308 is inf)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and abs(value) <= MAX_MAGNITUDE else None
