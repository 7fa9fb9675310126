"""A pytest plugin: each test's wall time, its own CPU time and its children's, and at the end
how much of the suite is CPU-bound (what a busy machine slows) and how much waits.

    PYTHONPATH=benchmarks python -m pytest -n 0 -p suite_cpu [SUITE_CPU_OUT=tests.tsv]

Run it quiet and then beside busy loops, each with its own SUITE_CPU_OUT, to see which tests
a busy machine costs the most. A test counts as CPU-heavy when its own and its children's CPU
time come to more than 70% of its wall time. Under xdist (the suite's default) each worker
writes its rows to SUITE_CPU_OUT and the summary is read from there, by test module:

    rm -f tests.tsv; SUITE_CPU_OUT=tests.tsv PYTHONPATH=benchmarks python -m pytest -p suite_cpu
    python benchmarks/suite_cpu.py tests.tsv [--top 25] [--over 1]

"off CPU" is a module's wall time that neither it nor its children spent on a CPU: sleeps,
timeouts and waits for another process, and, with more workers than cores, time ready to run
behind the other workers. On two cores the suite's floor is its CPU time over two.
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import sys
import time
from pathlib import Path

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
    wall, own, children = _totals(_rows)
    heavy_walls = [row[1] for row in _rows if row[2] + row[3] > CPU_HEAVY * row[1]]
    count, heavy = len(heavy_walls), sum(heavy_walls)
    write = terminalreporter.write_line
    write(
        f"suite_cpu: {len(_rows)} tests, {wall:.1f} s wall, {own:.1f} s own CPU, "
        f"{children:.1f} s children's CPU"
    )
    write(
        f"suite_cpu: {count} CPU-heavy tests, {heavy:.1f} s of the wall time "
        f"({heavy / max(wall, 1e-9):.0%})"
    )


def _totals(rows: list[tuple[str, float, float, float]]) -> tuple[float, float, float]:
    """Wall, own CPU and children's CPU, summed over `rows`."""
    return sum(r[1] for r in rows), sum(r[2] for r in rows), sum(r[3] for r in rows)


def by_module(rows: list[tuple[str, float, float, float]]) -> dict[str, list[float]]:
    """Per test module: [tests, wall, own CPU, children's CPU]."""
    modules: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for nodeid, wall, own, children in rows:
        module = modules[nodeid.split("::")[0]]
        module[0] += 1
        module[1] += wall
        module[2] += own
        module[3] += children
    return modules


def _read(path: str) -> list[tuple[str, float, float, float]]:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise SystemExit(f"{path}: cannot read it ({error.strerror})") from None
    rows = []
    for number, line in enumerate(lines, 1):
        test, *times = line.split("\t")
        try:
            wall, own, children = map(float, times)
        except ValueError:  # not three numbers
            said = "not a suite_cpu row (test, wall, own, children)"
            raise SystemExit(f"{path}:{number}: {said}") from None
        rows.append((test, wall, own, children))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description="Where the suite's time goes, by test module.")
    parser.add_argument("tsv", help="the SUITE_CPU_OUT file of a run")
    parser.add_argument("--top", type=int, default=25, help="modules shown (by wall time)")
    parser.add_argument(
        "--over",
        type=float,
        metavar="SECONDS",
        help="also list the tests whose own and children's CPU came to more than SECONDS "
        "(run on the fast suite: the ones to make cheaper or to mark e2e)",
    )
    args = parser.parse_args()
    rows = _read(args.tsv)
    if not rows:
        raise SystemExit(f"{args.tsv}: no rows; run the suite with SUITE_CPU_OUT={args.tsv}")
    modules = sorted(by_module(rows).items(), key=lambda item: -item[1][1])
    print(f"{'module':44} {'tests':>5} {'wall s':>7} {'own s':>6} {'child s':>7} {'off CPU':>7}")
    for name, (tests, wall, own, children) in modules[: args.top]:
        waits = max(wall - own - children, 0.0)
        print(f"{name:44} {tests:5.0f} {wall:7.1f} {own:6.1f} {children:7.1f} {waits:7.1f}")
    wall, own, children = _totals(rows)
    print(
        f"{len(rows)} tests: {wall:.1f} s wall summed over the workers, {own:.1f} s own CPU, "
        f"{children:.1f} s children's CPU; on 2 cores the CPU alone takes "
        f"{(own + children) / 2:.1f} s"
    )
    if args.over is not None:
        _list_over(rows, args.over)
    return 0


def _list_over(rows: list[tuple[str, float, float, float]], seconds: float) -> None:
    costly = sorted((r for r in rows if r[2] + r[3] > seconds), key=lambda r: -(r[2] + r[3]))
    print(f"{len(costly)} tests over {seconds:g} s of CPU:")
    for test, _wall, own, children in costly:
        print(f"{own + children:7.2f} s  {test}")


if __name__ == "__main__":
    sys.exit(main())
