"""What waiting for a command's exit costs: `proc.run`'s pidfd wait against Popen's polling.

Runs a short command many times through the real `proc.run` (own session, log relay, tree
clean-up), once waiting on a pidfd and once with the pidfd withheld (Popen.wait's sleeps,
which grow to 50 ms), alternating, and prints the median recorded duration of each.

    python benchmarks/wait_latency.py [--runs 40] [--rounds 3] [--command "python3 -S -c pass"]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
from pathlib import Path

from autoresearch.bench import proc


@contextlib.contextmanager
def _no_pidfd(pid: int):
    yield None


def _durations(command: str, runs: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        out = []
        for i in range(runs):
            log = Path(tmp) / f"{i}.log"
            out.append(proc.run(command, cwd=Path(tmp), timeout_s=60, log_path=log).duration_s)
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="runs per round and way")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--command", default="python3 -S -c pass")
    args = parser.parse_args()
    ways = {"pidfd": proc._exit_fd, "polling": _no_pidfd}
    medians: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.rounds):
        for name, exit_fd in ways.items():
            proc._exit_fd = exit_fd
            medians[name].append(statistics.median(_durations(args.command, args.runs)))
    for name, values in medians.items():
        shown = ", ".join(f"{1000 * v:.1f}" for v in values)
        print(f"{name:8s} median duration per round (ms): {shown}")


if __name__ == "__main__":
    main()
