"""What an autoresearch process pays for BLAS thread pools it never uses.

numpy and scipy each load an OpenBLAS whose pool starts a thread per core, and an idle pool
thread spins for a while before it sleeps. The command line pins the pool to one thread
(bench/environ.py). This starts `python -c "import autoresearch.loop.driver"` (what every
`run`, `try` or `confirm` loads) with the pool as it comes and pinned, alternating, and prints
the median wall time and CPU time (all threads) of a start, then the same with a process
keeping a core busy beside it.

    python benchmarks/blas_threads.py [--starts 15]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

from machine_load import a_core_busy
from results import record

from autoresearch.bench.environ import BLAS_THREADS_ENV, PINNED_ENV

IMPORT = [sys.executable, "-c", "import autoresearch.loop.driver"]


def start(env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s) of one start."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run(IMPORT, env=env, check=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def measure(starts: int) -> dict[str, list[tuple[float, float]]]:
    base = {k: v for k, v in os.environ.items() if k not in (BLAS_THREADS_ENV, PINNED_ENV)}
    ways = {"as it comes": base, "pinned": {**base, BLAS_THREADS_ENV: "1"}}
    found: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
    for _ in range(starts):
        for name, env in ways.items():
            found[name].append(start(env))
    return found


def report(label: str, found: dict[str, list[tuple[float, float]]]) -> list[dict]:
    rows = []
    for name, samples in found.items():
        wall = statistics.median(s[0] for s in samples) * 1000
        cpu = statistics.median(s[1] for s in samples) * 1000
        print(f"| {label} | {name} | {wall:.0f} ms | {cpu:.0f} ms |")
        rows.append(
            {
                "condition": label,
                "BLAS pool": name,
                "wall (median)": f"{wall:.0f} ms",
                "CPU (median)": f"{cpu:.0f} ms",
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=15, help="starts of each kind per machine")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs; {args.starts} starts each, alternating")
    print("| machine | BLAS pool | wall (median) | CPU (median) |\n|---|---|---:|---:|")
    rows = report("quiet", measure(args.starts))
    with a_core_busy():
        rows += report("a core busy", measure(args.starts))
    record("blas_threads", rows, notes=f"{args.starts} starts of each kind, alternating")


if __name__ == "__main__":
    main()
