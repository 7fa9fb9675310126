"""What every reader of a tool's output shares: the metric's name, nanoseconds per unit of
time, and one value per benchmark from the rows a run reported."""

from __future__ import annotations

import contextlib
import contextvars
import math
import re
import statistics
from collections.abc import Iterator

from ..errors import MetricParseError

__all__ = [
    "NS_PER",
    "PER_OPERATION",
    "fastest_rows",
    "is_minimum",
    "medians",
    "metric_name",
    "minimum_of",
    "rows_declared",
    "with_minimums",
]

# How many rows of one benchmark a run may report (`[bench] rows`; 0: any), while it is read.
_DECLARED = contextvars.ContextVar("declared_rows", default=0)

# Nanoseconds per unit of time, as the tools spell them.
NS_PER = {"ps": 1e-3, "ns": 1.0, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9}
PER_OPERATION = "_ns_op"  # a per-operation time (go test -bench, JMH): its unit is two words


def metric_name(*parts: str) -> str:
    """`fib/20`, `ns` -> `fib_20_ns`: lowercased, `_` for any run of other characters."""
    text = "_".join(str(p) for p in parts if p not in (None, ""))
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def minimum_of(metric: str) -> str | None:
    """The name of a timing's least disturbed value, beside its median: `fib_20_ns` ->
    `fib_20_min_ns`, `fib_ns_op` -> `fib_min_ns_op` (None for a name without a unit, or one
    that is a minimum already). A harness that reports each benchmark's fastest round gets it
    read under this name: on a machine whose speed comes and goes (a shared VM), it moves far
    less than the median, at the price of what only the slower rounds show (allocation,
    collection, cache misses)."""
    stem, unit = _unit(metric)
    if not stem or stem.endswith("_min"):
        return None
    return f"{stem}_min_{unit}"


def is_minimum(metric: str) -> bool:
    """Whether `metric` is named as a least disturbed value (minimum_of's names)."""
    return _unit(metric)[0].endswith("_min")


def _unit(metric: str) -> tuple[str, str]:
    """A metric's name and its unit: the last word, or a per-operation time's two (`ns_op`)."""
    if metric.endswith(PER_OPERATION):
        return metric.removesuffix(PER_OPERATION), PER_OPERATION[1:]
    stem, _, unit = metric.rpartition("_")
    return stem, unit


def fastest_rows(rows: dict[str, list[float]], unit: str) -> dict[str, float]:
    """Each timing (its name ending in `unit`) printed more than once (a harness's
    repetitions): its fastest, by its median's name, for with_minimums."""
    return {name: min(v) for name, v in rows.items() if len(v) > 1 and name.endswith(unit)}


def with_minimums(found: dict[str, float], minimums: dict[str, float]) -> dict[str, float]:
    """`found` with each of `minimums` (by its median's name) under `minimum_of` that name,
    where no benchmark of the run bears that name itself."""
    merged = dict(found)
    for name, value in minimums.items():
        fastest = minimum_of(name)
        if fastest is not None and fastest not in found:
            merged[fastest] = value
    return merged


@contextlib.contextmanager
def rows_declared(most: int) -> Iterator[None]:
    """Read with at most `most` rows of each benchmark (0: any) until the block ends."""
    token = _DECLARED.set(most)
    try:
        yield
    finally:
        _DECLARED.reset(token)


def medians(rows: dict[str, list[float]]) -> dict[str, float]:
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
