"""Result documents a harness writes whole (JSON, XML) -> {metric name: float}: one reader
a tool, and the shape each is recognised by (`formats.detect`)."""

from __future__ import annotations

import itertools
import json
import math
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

from .rows import NS_PER, fastest_rows, medians, metric_name, with_minimums

__all__ = ["DOCUMENTS", "document_formats"]


def _pytest_benchmark(text: str) -> dict[str, float]:
    """`pytest --benchmark-json=FILE`: each test's median, in seconds there, and its fastest
    round (rows.minimum_of)."""
    rows: dict[str, list[float]] = {}
    fastest: dict[str, list[float]] = {}
    for bench in json.loads(text)["benchmarks"]:
        name = metric_name(bench.get("group") or "", bench["name"], "ns")
        rows.setdefault(name, []).append(float(bench["stats"]["median"]) * 1e9)
        if isinstance(bench["stats"].get("min"), int | float):
            fastest.setdefault(name, []).append(float(bench["stats"]["min"]) * 1e9)
    return with_minimums(medians(rows), medians(fastest))


def _google_benchmark(text: str) -> dict[str, float]:
    """`--benchmark_format=json` (or `--benchmark_out`): the real and CPU time per iteration of
    each run (the median of repetitions, and their fastest under rows.minimum_of's name), and
    its counters (`bytes_per_second`, ...)."""
    rows: dict[str, list[float]] = {}
    aggregated: dict[str, dict[str, float]] = {}
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
                aggregated[base] = values
            continue
        for name, value in values.items():
            rows.setdefault(name, []).append(value)
    found = medians(rows)
    # Only the aggregates were written (--benchmark_report_aggregates_only): their medians.
    for values in aggregated.values():
        for name, value in values.items():
            found.setdefault(name, value)
    # Repeated (--benchmark_repetitions): each timing's fastest repetition beside its median.
    return with_minimums(found, fastest_rows(rows, "_ns"))


def _hyperfine(text: str) -> dict[str, float]:
    """`hyperfine --export-json FILE`: each command's median, in seconds there, and its fastest
    run; named by its `--command-name` or its command line, its parameters appended where two
    share a name."""
    results = json.loads(text)["results"]
    names = [metric_name(r["command"]) for r in results]
    found, fastest = {}, {}
    for result, name in zip(results, names, strict=True):
        if names.count(name) > 1:
            name = metric_name(name, *(result.get("parameters") or {}).values())
        found[f"{name}_ns"] = float(result["median"]) * 1e9
        if isinstance(result.get("min"), int | float):
            fastest[f"{name}_ns"] = float(result["min"]) * 1e9
    return with_minimums(found, fastest)


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
    """`vitest bench --outputJson FILE`: each benchmark's median (milliseconds there) and its
    fastest sample, named by its `describe` groups and its name; by its file too where two
    files share a name."""
    named: dict[str, list[tuple[str, float, float | None]]] = {}
    for file in json.loads(text)["files"]:
        stem = PurePosixPath(file["filepath"]).name.split(".")[0]
        for group in file["groups"]:
            path = group["fullName"].split(" > ")[1:]  # the file first, then the describes
            for bench in group["benchmarks"]:
                value = float(bench.get("median", bench.get("mean"))) * NS_PER["ms"]
                low = bench.get("min")
                low = float(low) * NS_PER["ms"] if isinstance(low, int | float) else None
                name = metric_name(*path, bench["name"], "ns")
                named.setdefault(name, []).append((stem, value, low))
    found, fastest = {}, {}
    for name, rows in named.items():
        for stem, value, low in rows:
            full = metric_name(stem, name) if len(rows) > 1 else name
            found[full] = value
            if low is not None:
                fastest[full] = low
    return with_minimums(found, fastest)


def _mitata(text: str) -> dict[str, float]:
    """mitata's `run({ format: "json" })`: each run's median (`p50`, nanoseconds) and its
    fastest sample, named by its group and its name."""
    document = json.loads(text)
    groups = [g.get("name") or "" for g in document.get("layout") or []]
    found, fastest = {}, {}
    for bench in document["benchmarks"]:
        group = groups[bench["group"]] if isinstance(bench.get("group"), int) else ""
        for run in bench["runs"]:
            if run.get("stats"):  # a run that threw has an error instead
                name = metric_name(group, run["name"], "ns")
                found[name] = float(run["stats"]["p50"])
                if isinstance(run["stats"].get("min"), int | float):
                    fastest[name] = float(run["stats"]["min"])
    return with_minimums(found, fastest)


def _asv(text: str) -> dict[str, float]:
    """airspeed velocity's results file (`.asv/results/<machine>/<commit>-<env>.json`): each
    benchmark's result (the median of its samples for a timing), one per combination of its
    parameters, named by its dotted name and the parameters' values. Timings (`time_*`) in
    seconds there, memory (`mem_*`, `peakmem_*`) in bytes, `track_*` in its own unit."""
    document = json.loads(text)
    column = document["result_columns"].index("result")
    params_at = document["result_columns"].index("params")
    found = {}
    for name, row in document["results"].items():
        values = row[column]
        if not isinstance(values, list):  # a benchmark that failed or was skipped
            continue
        combos = list(itertools.product(*row[params_at])) if row[params_at] else [()]
        kind = name.rsplit(".", 1)[-1].split("_", 1)[0]
        scale, unit = _ASV_UNITS.get(kind, (1.0, ""))
        for combo, value in zip(combos, values, strict=False):
            if isinstance(value, int | float) and math.isfinite(value):
                parts = (name, *(str(v).strip("'\"") for v in combo), unit)
                found[metric_name(*parts)] = float(value) * scale
    return found


# asv's benchmark kinds by their name's prefix: (to the loop's unit, its suffix).
_ASV_UNITS = {
    "time": (1e9, "ns"),
    "timeraw": (1e9, "ns"),
    "mem": (1.0, "bytes"),
    "peakmem": (1.0, "bytes"),
}


def _catch2(text: str) -> dict[str, float]:
    """Catch2's XML reporter (`--reporter xml`, v2 or v3): each benchmark's mean (Catch2
    reports no median; nanoseconds there), named by its name, and by its test case too where
    two test cases have a benchmark of one name."""
    root = _xml(text)
    named: dict[str, list[tuple[str, float]]] = {}
    for case in root.iter("TestCase"):
        for bench in case.iter("BenchmarkResults"):
            mean = bench.find("mean")
            if mean is None:
                continue
            name = metric_name(bench.get("name", ""), "ns")
            named.setdefault(name, []).append((case.get("name", ""), float(mean.get("value", ""))))
    found = {}
    for name, rows in named.items():
        for case_name, value in rows:
            found[metric_name(case_name, name) if len(rows) > 1 else name] = value
    return found


def document_formats(text: str) -> list[str] | None:
    """The formats a whole document `text` is recognisably in; None when it is no document
    (no JSON, no XML) and the text formats are to be tried."""
    stripped = text.strip()
    if stripped.startswith("<"):
        try:
            root = _xml(stripped)
        except ValueError:
            return None
        return ["catch2"] if root.find(".//BenchmarkResults") is not None else []
    document = _json_document(stripped)
    if document is None:
        return None
    return [name for name, looks in _JSON_SHAPES.items() if looks(document)]


def _xml(text: str) -> ET.Element:
    """An XML document's root. The bench's output is the candidate's to write: a document
    type (where entities that expand a billion times are declared) is refused, not read."""
    if "<!DOCTYPE" in text or "<!ENTITY" in text:
        raise ValueError("an XML document type declaration, which no harness writes")
    try:
        return ET.fromstring(text.strip())
    except ET.ParseError as exc:
        raise ValueError(f"not well-formed XML ({exc})") from None


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
    "asv": lambda d: isinstance(d, dict) and "result_columns" in d and "results" in d,
    "bmf": _bmf_shape,
}

DOCUMENTS: dict[str, Callable[[str], dict[str, float]]] = {
    "pytest-benchmark": _pytest_benchmark,
    "google-benchmark": _google_benchmark,
    "hyperfine": _hyperfine,
    "jmh": _jmh,
    "benchmarkdotnet": _benchmarkdotnet,
    "vitest": _vitest,
    "mitata": _mitata,
    "asv": _asv,
    "catch2": _catch2,
    "bmf": _bmf,
}
