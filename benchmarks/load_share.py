"""What two busy loops cost each kind of work the test suite does, on this machine's scheduler.

The suite's loaded-to-quiet ratio is the sum of its parts' ratios, weighted by their share of
the quiet time: this measures those parts one by one. Beside N processes each keeping a core
busy (`python3 -c 'while True: pass'`, started by this script, so in its session, as `&` in a
shell puts them in the shell's), it times, a quiet round and a loaded one in turn, the median
of the repeats:

- cpu, loops' session: a CPU-bound Python process in the busy loops' session (the test
  runner itself, when started from the same shell as the loops);
- cpu, own session: the same in a session of its own (as the loop and the tests start their
  children): on a kernel with sched_autogroup_enabled, a group of its own;
- short processes: 100 processes of about 10 ms each in sessions of their own (the synthetic
  bench's runs, git calls);
- sleep: a child that sleeps 0.5 s (waits on a timeout, a deadline, a slow fake).

With N busy loops on C cores, a CPU-bound process gets at best C/(N+1) of a core (1.5x with
two loops on two cores) and a half when it shares one core with one loop (2x): no change to
the suite lowers that; only its share of the suite's time.

    python benchmarks/load_share.py [--repeats 5] [--loops 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from machine_load import cores_busy
from results import record

CPU = [sys.executable, "-S", "-c", "x = 0\nfor i in range(12_000_000): x += i"]
SHORT = [sys.executable, "-S", "-c", "import random"]


def timed(argv: list[str], own_session: bool, times: int = 1) -> float:
    start = time.perf_counter()
    for _ in range(times):
        subprocess.run(argv, start_new_session=own_session, check=True)
    return time.perf_counter() - start


WORKLOADS: dict[str, Callable[[], float]] = {
    "cpu, loops' session": lambda: timed(CPU, own_session=False),
    "cpu, own session": lambda: timed(CPU, own_session=True),
    "100 short processes": lambda: timed(SHORT, own_session=True, times=100),
    "sleep 0.5 s": lambda: timed(["sleep", "0.5"], own_session=True),
}


def a_round(samples: dict[str, list[float]]) -> None:
    for name, workload in WORKLOADS.items():
        samples[name].append(workload())


def measure(loops: int, repeats: int) -> tuple[dict[str, float], dict[str, float]]:
    """Median seconds of each workload quiet and beside `loops` busy loops, a quiet round and
    a loaded one in turn (the machine's own drift falls on both alike)."""
    quiet: dict[str, list[float]] = {name: [] for name in WORKLOADS}
    loaded: dict[str, list[float]] = {name: [] for name in WORKLOADS}
    for _ in range(repeats):
        a_round(quiet)
        with cores_busy(loops):
            time.sleep(0.5)  # the loops running before the first measurement
            a_round(loaded)
    median = statistics.median
    return (
        {name: median(values) for name, values in quiet.items()},
        {name: median(values) for name, values in loaded.items()},
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs of each workload (5)")
    parser.add_argument("--loops", type=int, default=2, help="busy loops beside them (2)")
    args = parser.parse_args()
    autogroup = Path("/proc/sys/kernel/sched_autogroup_enabled")
    grouped = autogroup.read_text().strip() if autogroup.exists() else "absent"
    print(f"{os.cpu_count()} cores, {args.loops} busy loops, sched_autogroup_enabled={grouped}")
    quiet, busy = measure(args.loops, args.repeats)
    print(f"{'workload':24} {'quiet s':>9} {'loaded s':>9} {'ratio':>6}")
    rows = []
    for name in WORKLOADS:
        print(f"{name:24} {quiet[name]:9.3f} {busy[name]:9.3f} {busy[name] / quiet[name]:6.2f}")
        rows.append(
            {
                "condition": f"{args.loops} busy loops",
                "workload": name,
                "quiet": f"{quiet[name]:.3f} s",
                "loaded": f"{busy[name]:.3f} s",
                "ratio": f"{busy[name] / quiet[name]:.2f}",
            }
        )
    record("load_share", rows, notes=f"sched_autogroup_enabled={grouped}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
