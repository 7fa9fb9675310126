"""The loop's own cost per experiment: everything but the bench and the checks.

Builds a small repository and one of 20,000 files, each with a no-op bench (it counts files and
prints a METRIC line) and no-op checks, queues patches of which half are true wins, runs the
real loop, and subtracts the bench and checks time recorded in the journal from the wall time;
quiet, then with another process keeping a core busy.

    python benchmarks/loop_overhead.py [--experiments 30] [--files 10 20000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from machine_load import a_core_busy
from results import record

from autoresearch.config import load_config
from autoresearch.journal.store import read_journal
from autoresearch.loop.driver import run_session
from autoresearch.loop.session import RunOptions
from autoresearch.progress import Progress

GOAL_S = 0.25
BENCH = """#!/usr/bin/env bash
# No-op bench: each file under src/gain makes it 20 ms faster, each under src/loss 50 ms slower.
gain=$(ls src/gain 2>/dev/null | wc -l)
loss=$(ls src/loss 2>/dev/null | wc -l)
echo "METRIC t_ms=$((1000 - 20 * gain + 50 * loss))"
"""
CONFIG = """
[session]
name = "overhead"
[bench]
command = "./bench.sh"
calibration_runs = 4
[checks]
command = "./checks.sh"
[metric]
name = "t_ms"
[scope]
include = ["src/**"]
[budget]
max_experiments = {n}
[decision]
min_runs = 6
max_runs = 6
looks = 1
confirm = false
[proposer]
dir = "queue"
"""


def make_repo(root: Path, files: int, experiments: int) -> Path:
    repo = root / f"repo-{files}"
    src = repo / "src" / "bulk"
    for i in range(files):
        d = src / f"d{i // 200:03d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:05d}.txt").write_text(f"file {i}\n")
    (repo / "bench.sh").write_text(BENCH)
    (repo / "checks.sh").write_text("#!/usr/bin/env bash\nexit 0\n")
    os.chmod(repo / "bench.sh", 0o755)
    os.chmod(repo / "checks.sh", 0o755)
    (repo / "autoresearch.toml").write_text(CONFIG.format(n=experiments))
    (repo / ".gitignore").write_text("experiments.jsonl\nqueue/\n")
    queue = repo / "queue"
    queue.mkdir()
    for i in range(experiments):
        kind = "gain" if i % 2 == 0 else "loss"
        path = f"src/{kind}/{i:04d}.txt"
        (queue / f"{i:04d}.patch").write_text(
            f"Title: {kind} {i}\n\ndiff --git a/{path} b/{path}\nnew file mode 100644\n"
            f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{i}\n"
        )
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@b",
    }
    # Packed, as a clone is: 20,000 loose objects would start a background `gc --auto` at the
    # first commit, repacking beside the loop being measured.
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "gc.auto=0", "commit", "-q", "-m", "base"],
        ["gc", "-q"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True, env=env)
    return repo


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def measure(root: Path, files: int, experiments: int) -> dict:
    repo = make_repo(root, files, experiments)
    config = load_config(repo / "autoresearch.toml")
    started = time.monotonic()
    outcome = run_session(config, RunOptions(), Progress(quiet=True))
    wall = time.monotonic() - started
    journal = read_journal(config.journal_path)
    records = journal.experiments
    assert len(records) == experiments, outcome
    bench = sum(sum(r.bench_durations_s) for r in records)
    bench += sum(c.duration_s for c in journal.calibrations[1:])  # recalibrations after keeps
    checks = sum(r.checks.duration_s for r in records if r.checks is not None)
    window = _ts(records[-1].ended_at) - _ts(records[0].started_at)
    per_record = [
        r.duration_s - sum(r.bench_durations_s) - (r.checks.duration_s if r.checks else 0.0)
        for r in records
    ]
    return {
        "files": files,
        "experiments": experiments,
        "kept": outcome.kept,
        "wall_s": wall,
        "overhead_per_experiment_s": (window - bench - checks) / experiments,
        "median_in_experiment_s": statistics.median(per_record),
        "bench_s_per_run": bench / (sum(len(r.bench_durations_s) for r in records) or 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=30)
    parser.add_argument("--files", type=int, nargs="+", default=[10, 20_000])
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for load in ("quiet", "a core busy"):
            with a_core_busy(load != "quiet"):
                for files in args.files:
                    print(
                        f"{load}: {args.experiments} experiments on {files} files ...",
                        file=sys.stderr,
                    )
                    root = Path(tmp) / f"{load}-{files}".replace(" ", "-")
                    root.mkdir()
                    rows.append({"load": load, **measure(root, files, args.experiments)})
    print(
        "| machine | files | experiments | kept | overhead per experiment | of which inside the "
        "experiment (median) | no-op bench run |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['load']} | {r['files']:,} | {r['experiments']} | {r['kept']} | "
            f"{r['overhead_per_experiment_s'] * 1000:.0f} ms | "
            f"{r['median_in_experiment_s'] * 1000:.0f} ms | {r['bench_s_per_run'] * 1000:.0f} ms |"
        )
    goal = f"goal: under {GOAL_S * 1000:.0f} ms per experiment on 20,000 files"
    record("loop_overhead", [_as_data(r) for r in rows], notes=goal)
    worst = max(r["overhead_per_experiment_s"] for r in rows if r["files"] >= 20_000)
    print(
        f"\ngoal: under {GOAL_S * 1000:.0f} ms per experiment on 20,000 files: "
        f"{'met' if worst < GOAL_S else 'MISSED'} (worst {worst * 1000:.0f} ms)"
    )
    return 0 if worst < GOAL_S else 1


def _as_data(r: dict) -> dict:
    return {
        "condition": r["load"],
        "files": f"{r['files']:,}",
        "experiments": r["experiments"],
        "kept": r["kept"],
        "overhead per experiment": f"{r['overhead_per_experiment_s'] * 1000:.0f} ms",
        "inside the experiment (median)": f"{r['median_in_experiment_s'] * 1000:.0f} ms",
        "no-op bench run": f"{r['bench_s_per_run'] * 1000:.0f} ms",
    }


if __name__ == "__main__":
    sys.exit(main())
