"""A pytest plugin: each test's wall time, its own CPU time and its children's, and at the end
how much of the suite is CPU-bound (what a busy machine slows) and how much waits.

    PYTHONPATH=benchmarks python -m pytest -n 0 -p suite_cpu [SUITE_CPU_OUT=tests.tsv]

Run it quiet and then beside busy loops, each with its own SUITE_CPU_OUT, to see which tests
a busy machine costs the most. A test counts as CPU-heavy when its own and its children's CPU
time come to more than 70% of its wall time.
"""

from __future__ import annotations

import os
import resource
import time

import pytest

CPU_HEAVY = 0.7
_rows: list[tuple[str, float, float, float]] = []


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    wall = time.monotonic()
    own, children = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    yield
    row = (
        item.nodeid,
        time.monotonic() - wall,
        _cpu(resource.RUSAGE_SELF) - own,
        _cpu(resource.RUSAGE_CHILDREN) - children,
    )
    _rows.append(row)
    out = os.environ.get("SUITE_CPU_OUT")
    if out:
        with open(out, "a") as handle:
            handle.write("{}\t{:.3f}\t{:.3f}\t{:.3f}\n".format(*row))


def pytest_terminal_summary(terminalreporter):
    if not _rows:
        return
    wall = sum(row[1] for row in _rows)
    heavy_walls = [row[1] for row in _rows if row[2] + row[3] > CPU_HEAVY * row[1]]
    count, heavy = len(heavy_walls), sum(heavy_walls)
    write = terminalreporter.write_line
    write(
        f"suite_cpu: {len(_rows)} tests, {wall:.1f} s wall, "
        f"{sum(row[2] for row in _rows):.1f} s own CPU, "
        f"{sum(row[3] for row in _rows):.1f} s children's CPU"
    )
    write(
        f"suite_cpu: {count} CPU-heavy tests, {heavy:.1f} s of the wall time "
        f"({heavy / max(wall, 1e-9):.0%})"
    )
