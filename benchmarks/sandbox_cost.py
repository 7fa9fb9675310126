"""What confinement costs a run: the same command through the runner, unconfined and confined
by bubblewrap, interleaved, quiet and with another process keeping a core busy.

    python benchmarks/sandbox_cost.py [--runs 40] [--command "true"]

Prints the median wall time of each and the difference per run, against the goal (under 50 ms
a run); with `--command "./autoresearch.sh --run"` (after `./autoresearch.sh --build`) it
also says what share of a bundled bench run that is (goal: under 2%).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from machine_load import a_core_busy
from results import record

from autoresearch.bench.bwrap import bwrap_problem
from autoresearch.bench.covers import hidden_homes
from autoresearch.bench.runners import LocalRunner
from autoresearch.bench.sandbox import Sandbox

ROOT = Path(__file__).resolve().parent.parent
GOAL_MS = 50.0
GOAL_SHARE = 0.02


def timings(command: str, runs: int, cwd: Path, logs: Path) -> dict[str, list[float]]:
    """Wall seconds of `runs` runs each way, alternating so that drift hits both alike."""
    # Confined as the loop confines a target's runs: its tree seen at one path, what is around
    # it out of sight, and of your home and checkout only the ways to its tools.
    confined = LocalRunner(sandbox=Sandbox(one_path=True, hide=hidden_homes(cwd)))
    runners = {"unconfined": LocalRunner(), "confined": confined}
    found: dict[str, list[float]] = {name: [] for name in runners}
    for i in range(runs):
        order = list(runners) if i % 2 == 0 else list(reversed(runners))
        for name in order:
            result = runners[name].run(
                command,
                cwd=cwd,
                env={},
                log_path=logs / f"{name}-{i}.log",
                timeout_s=600,
                stop=None,
                on_start=None,
                token=None,
            )
            if not result.ok:
                raise SystemExit(f"{name} run failed: {result.describe()}: {result.tail}")
            found[name].append(result.duration_s)
    return found


def report(label: str, found: dict[str, list[float]]) -> dict:
    """Print one condition's row; the row as data (results.py)."""
    plain = statistics.median(found["unconfined"])
    confined = statistics.median(found["confined"])
    cost_ms = (confined - plain) * 1000
    share = (confined - plain) / plain if plain else float("nan")
    verdict = "met" if cost_ms < GOAL_MS else "MISSED"
    print(
        f"| {label} | {plain * 1000:.1f} ms | {confined * 1000:.1f} ms | {cost_ms:+.1f} ms "
        f"({verdict}, goal < {GOAL_MS:g} ms) | {share:+.1%} of a run"
        f"{'' if abs(share) < GOAL_SHARE else ' (over 2%)'} |"
    )
    return {
        "condition": label,
        "unconfined (median)": f"{plain * 1000:.1f} ms",
        "confined (median)": f"{confined * 1000:.1f} ms",
        "cost per run": f"{cost_ms:+.1f} ms ({verdict}, goal < {GOAL_MS:g} ms)",
        "share of a run": f"{share:+.1%}",
        "runs each way": len(found["confined"]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="runs each way per condition")
    parser.add_argument("--command", default="true", help="the command, run in --cwd")
    parser.add_argument("--cwd", default=str(ROOT), help="where it runs (the confined tree)")
    args = parser.parse_args()
    problem = bwrap_problem()
    if problem is not None:
        raise SystemExit(f"no sandbox here: {problem}")
    print(f"`{args.command}` in {args.cwd}, {args.runs} runs each way, interleaved\n")
    print("| condition | unconfined (median) | confined (median) | cost per run | share |")
    print("|---|---:|---:|---:|---:|")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        rows.append(report("quiet", timings(args.command, args.runs, Path(args.cwd), Path(tmp))))
        with a_core_busy():
            found = timings(args.command, args.runs, Path(args.cwd), Path(tmp))
            rows.append(report("a core busy", found))
    record("sandbox_cost", rows, notes=f"`{args.command}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
