"""Benchmark tools' own outputs -> {metric name: float}.

Beside `METRIC` lines and `go test -bench` rows (metrics.py), the loop reads what the common
harnesses print or write: criterion (its text, or `cargo criterion --message-format=json`),
Rust's libtest `cargo bench` rows, pytest-benchmark's `--benchmark-json`, Google Benchmark's
`--benchmark_format=json`, hyperfine's `--export-json`, JMH's `-rf json`, BenchmarkDotNet's
full JSON report, Vitest's `vitest bench --outputJson`, mitata's `run({ format: "json" })` and
Bencher's Metric Format (BMF).

A metric's name keeps the benchmark's groups, lowercased, with `_` for every other character
(criterion's `fib/20` is `fib_20`, pytest's `test_fib[20]` is `test_fib_20`), so families and
scales read as they do for Go; then its measure. Times are in nanoseconds whatever the tool
printed (`_ns`; a per-operation time `_ns_op`), so one bench read by two tools compares;
throughputs keep their unit (`_ops_s`, `_mib_s`). A benchmark reported several times (repeats)
keeps its median; with `[bench] rows = N` declared, a benchmark reported more than N times in
one run is an error: rows the timed program printed itself would move the median.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import math
import re
import statistics
from collections.abc import Callable, Iterator
from pathlib import PurePosixPath
from typing import Any

from ..errors import MetricParseError

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
# How many rows of one benchmark a run may report (`[bench] rows`; 0: any), while it is read.
_DECLARED = contextvars.ContextVar("declared_rows", default=0)

# Nanoseconds per unit of time, as the tools spell them.
NS_PER = {"ps": 1e-3, "ns": 1.0, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9}
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


def metric_name(*parts: str) -> str:
    """`fib/20`, `ns` -> `fib_20_ns`: lowercased, `_` for any run of other characters."""
    text = "_".join(str(p) for p in parts if p not in (None, ""))
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def bench_problem(fmt: str, output: str, keep: list[str] = ()) -> str | None:
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
    document = _json_document(text)
    if document is not None:
        return [name for name, looks in _JSON_SHAPES.items() if looks(document)]
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
    return _medians(rows)


def _criterion_json_line(line: str) -> dict | None:
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
    return _medians(rows)


def _libtest(text: str) -> dict[str, float]:
    rows: dict[str, list[float]] = {}
    for raw in text.splitlines():
        match = _LIBTEST.match(raw.strip())
        if match is not None:
            value = _number(match["value"]) * NS_PER[match["unit"]]
            rows.setdefault(metric_name(match["name"], "ns"), []).append(value)
    return _medians(rows)


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
        bench = metric_name(match.group(1).removeprefix("Benchmark"))
        fields = match.group(4).split()
        for value_text, unit in zip(fields[0::2], fields[1::2], strict=False):
            value = finite(value_text)
            if value is None:
                continue
            suffix = _GO_UNIT_SUFFIX.get(unit) or re.sub(r"[^A-Za-z0-9]+", "_", unit).strip("_")
            rows.setdefault(f"{bench}_{suffix}", []).append(value)
    return _medians(rows)


# -- JSON documents ----------------------------------------------------------------------------


def _pytest_benchmark(text: str) -> dict[str, float]:
    """`pytest --benchmark-json=FILE`: each test's median, in seconds there."""
    rows: dict[str, list[float]] = {}
    for bench in json.loads(text)["benchmarks"]:
        name = metric_name(bench.get("group") or "", bench["name"], "ns")
        rows.setdefault(name, []).append(float(bench["stats"]["median"]) * 1e9)
    return _medians(rows)


def _google_benchmark(text: str) -> dict[str, float]:
    """`--benchmark_format=json` (or `--benchmark_out`): the real and CPU time per iteration of
    each run (the median of repetitions), and its counters (`bytes_per_second`, ...)."""
    rows: dict[str, list[float]] = {}
    medians: dict[str, dict[str, float]] = {}
    reserved = {
        "name", "family_index", "per_family_instance_index", "run_name", "run_type",
        "repetitions", "repetition_index", "threads", "iterations", "real_time", "cpu_time",
        "time_unit", "aggregate_name", "aggregate_unit", "label", "error_occurred",
        "error_message", "big_o", "rms",
    }  # fmt: skip
    for bench in json.loads(text)["benchmarks"]:
        if bench.get("error_occurred"):
            continue
        base = bench.get("run_name") or bench["name"]
        scale = NS_PER[bench.get("time_unit", "ns")]
        values = {
            metric_name(base, "ns"): float(bench["real_time"]) * scale,
            metric_name(base, "cpu_ns"): float(bench["cpu_time"]) * scale,
        }
        for key, value in bench.items():
            if key not in reserved and isinstance(value, int | float):
                values[metric_name(base, key)] = float(value)
        if bench.get("run_type") == "aggregate":
            if bench.get("aggregate_name") == "median":
                medians[base] = values
            continue
        for name, value in values.items():
            rows.setdefault(name, []).append(value)
    found = _medians(rows)
    for (
        values
    ) in medians.values():  # only the aggregates were written (--benchmark_report_aggregates_only)
        for name, value in values.items():
            found.setdefault(name, value)
    return found


def _hyperfine(text: str) -> dict[str, float]:
    """`hyperfine --export-json FILE`: each command's median, in seconds there; named by its
    `--command-name` or its command line, its parameters appended where two share a name."""
    results = json.loads(text)["results"]
    names = [metric_name(r["command"]) for r in results]
    found = {}
    for result, name in zip(results, names, strict=True):
        if names.count(name) > 1:
            name = metric_name(name, *(result.get("parameters") or {}).values())
        found[f"{name}_ns"] = float(result["median"]) * 1e9
    return found


def _jmh(text: str) -> dict[str, float]:
    """`-rf json -rff FILE`: each benchmark's score in its unit (`ns/op` -> `_ns_op`,
    `ops/s` -> `_ops_s`), named by its class, method and parameters."""
    found = {}
    for bench in json.loads(text):
        metric = bench["primaryMetric"]
        parts = bench["benchmark"].split(".")[-2:]
        params = [f"{k}_{v}" for k, v in (bench.get("params") or {}).items()]
        name, value = _jmh_unit(metric["scoreUnit"], float(metric["score"]))
        found[metric_name(*parts, *params, name)] = value
    return found


def _jmh_unit(unit: str, score: float) -> tuple[str, float]:
    top, _, bottom = unit.partition("/")
    if top in NS_PER:  # time per operation, in nanoseconds
        return f"ns_{bottom}", score * NS_PER[top]
    if bottom in NS_PER:  # operations per time, per second
        return f"{top}_s", score * 1e9 / NS_PER[bottom]
    return unit, score


def _benchmarkdotnet(text: str) -> dict[str, float]:
    """BenchmarkDotNet's `*-report-full.json`: each benchmark's median (in nanoseconds there)
    and the bytes it allocates per operation."""
    found = {}
    for bench in json.loads(text)["Benchmarks"]:
        base = metric_name(bench["Type"], bench["Method"], bench.get("Parameters") or "")
        found[f"{base}_ns"] = float(bench["Statistics"]["Median"])
        allocated = (bench.get("Memory") or {}).get("BytesAllocatedPerOperation")
        if isinstance(allocated, int | float):
            found[f"{base}_bytes_op"] = float(allocated)
    return found


def _bmf(text: str) -> dict[str, float]:
    """Bencher Metric Format: {benchmark: {measure: {"value": ...}}}."""
    found = {}
    for bench, measures in json.loads(text).items():
        for measure, result in measures.items():
            found[metric_name(bench, measure)] = float(result["value"])
    return found


def _vitest(text: str) -> dict[str, float]:
    """`vitest bench --outputJson FILE`: each benchmark's median (milliseconds there), named by
    its `describe` groups and its name; by its file too where two files share a name."""
    named: dict[str, list[tuple[str, float]]] = {}
    for file in json.loads(text)["files"]:
        stem = PurePosixPath(file["filepath"]).name.split(".")[0]
        for group in file["groups"]:
            path = group["fullName"].split(" > ")[1:]  # the file first, then the describes
            for bench in group["benchmarks"]:
                value = bench.get("median", bench.get("mean"))
                name = metric_name(*path, bench["name"], "ns")
                named.setdefault(name, []).append((stem, float(value) * NS_PER["ms"]))
    found = {}
    for name, rows in named.items():
        for stem, value in rows:
            found[metric_name(stem, name) if len(rows) > 1 else name] = value
    return found


def _mitata(text: str) -> dict[str, float]:
    """mitata's `run({ format: "json" })`: each run's median (`p50`, nanoseconds), named by
    its group and its name."""
    document = json.loads(text)
    groups = [g.get("name") or "" for g in document.get("layout") or []]
    found = {}
    for bench in document["benchmarks"]:
        group = groups[bench["group"]] if isinstance(bench.get("group"), int) else ""
        for run in bench["runs"]:
            if run.get("stats"):  # a run that threw has an error instead
                found[metric_name(group, run["name"], "ns")] = float(run["stats"]["p50"])
    return found


def _json_document(text: str) -> Any:
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        return None


def _bmf_shape(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and bool(doc)
        and all(
            isinstance(m, dict)
            and m
            and all(isinstance(r, dict) and "value" in r for r in m.values())
            for m in doc.values()
        )
    )


def _listing(key: str, *beside: str) -> Callable[[Any], bool]:
    """A document whose `key` is a list (of benchmarks), with `beside` keys too: a list, so
    that a BMF document with a benchmark of that name is not taken for it."""
    return lambda d: (
        isinstance(d, dict) and isinstance(d.get(key), list) and all(k in d for k in beside)
    )


_JSON_SHAPES: dict[str, Callable[[Any], bool]] = {
    "pytest-benchmark": _listing("benchmarks", "machine_info"),
    "google-benchmark": lambda d: _listing("benchmarks", "context")(d) and "layout" not in d,
    "hyperfine": _listing("results"),
    "jmh": lambda d: isinstance(d, list) and bool(d) and "primaryMetric" in d[0],
    "benchmarkdotnet": _listing("Benchmarks"),
    "vitest": lambda d: _listing("files")(d) and all("groups" in f for f in d["files"]),
    "mitata": _listing("benchmarks", "layout", "context"),
    "bmf": _bmf_shape,
}

FORMATS: dict[str, Callable[[str], dict[str, float]]] = {
    "go": parse_go_bench,
    "criterion": _criterion,
    "criterion-json": _criterion_json,
    "libtest": _libtest,
    "pytest-benchmark": _pytest_benchmark,
    "google-benchmark": _google_benchmark,
    "hyperfine": _hyperfine,
    "jmh": _jmh,
    "benchmarkdotnet": _benchmarkdotnet,
    "vitest": _vitest,
    "mitata": _mitata,
    "bmf": _bmf,
}


def _number(text: str) -> float:
    return float(text.replace(",", ""))


@contextlib.contextmanager
def rows_declared(most: int) -> Iterator[None]:
    """Read with at most `most` rows of each benchmark (0: any) until the block ends."""
    token = _DECLARED.set(most)
    try:
        yield
    finally:
        _DECLARED.reset(token)


def _medians(rows: dict[str, list[float]]) -> dict[str, float]:
    most = _DECLARED.get()
    for name, values in rows.items():
        if most and len(values) > most:
            raise MetricParseError(
                f"{name}: {len(values)} rows in one run, and the bench declares {most} "
                "([bench] rows): rows a timed program printed itself would move the median"
            )
    return {
        name: statistics.median(values)
        for name, values in rows.items()
        if all(math.isfinite(v) for v in values)
    }


def finite(text: str) -> float | None:
    """A finite number whose medians and ratios stay finite too (1.7e308 + 1.7e308 is inf)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and abs(value) <= MAX_MAGNITUDE else None
