"""How a session with a 100,000-experiment journal feels, beside one with a tiny journal.

Builds two repositories with the same no-op bench (it prints a METRIC line and stamps the time
it ran), runs the real loop on each for two experiments, then inflates one journal to
`--records` experiment records made with the project's own record classes (both arms'
samples for four metrics, as the loop writes them) and keeps its review index current, as the
loop does after each append. Then, alternating the two sessions, it times each command as a
user runs it (the `autoresearch` console command pip installed beside this interpreter, in a
process of its own; not a version manager's shim found first on PATH, which adds its own
start-up to every command) and reads its peak memory:

- `run` resume: from the command's start to its first bench run (the bench's time stamp);
  the run is then stopped and the next resume recovers it, as after Ctrl-C;
- `history --last 20 --json`, `status`, `state`, `report`, `pr`, `plot`.

Quiet, then with another process keeping a core busy, it prints medians, the peak memory,
each goal and MISSED where it is missed. The first `status` after the inflation folds the
whole index into the summary (once: a session's own status calls keep it current); the median
of three is the status a user sees.

    python benchmarks/journal_scale.py [--records 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine_load import a_core_busy
from results import record
from synthetic_journal import experiment

import autoresearch
from autoresearch.atomic import json_safe
from autoresearch.journal.index import update_index

BENCH = """#!/usr/bin/env bash
# No-op bench: stamps when it first ran for the benchmark, then prints its one metric, which
# each queued patch (a file more in src/) makes smaller: the tiny session keeps them, and its
# `pr` has a change to describe.
[ -n "$STAMP" ] && [ ! -e "$STAMP" ] && date +%s.%N > "$STAMP"
echo "METRIC t_ms=$((1000 / $(ls src | wc -l)))"
"""
CONFIG = """
[session]
name = "scale"
[bench]
command = "./bench.sh"
calibration_runs = 4
[checks]
command = "true"
[metric]
name = "t_ms"
[scope]
include = ["src/**"]
[budget]
max_experiments = 10000000
[decision]
min_runs = 4
max_runs = 4
looks = 1
confirm = false
[proposer]
dir = "queue"
[sandbox]
writable = ["{stamps}"]
"""
# (command, goal in seconds, goal for peak memory in MiB or None)
GOALS = {
    "run resume": (1.0, 300),
    "history --last 20 --json": (0.3, None),
    "status": (0.3, None),
    "state": (0.3, None),
    "report": (2.0, 300),
    "pr": (2.0, None),
    "plot": (3.0, None),
}


def _console_script() -> str:
    """The `autoresearch` command pip installed for this interpreter, else the one on PATH."""
    beside = Path(sys.executable).parent / "autoresearch"
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else "autoresearch"


AUTORESEARCH = _console_script()


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def make_repo(root: Path, name: str) -> Path:
    repo = root / name
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "a.txt").write_text("a\n")
    (repo / "bench.sh").write_text(BENCH)
    os.chmod(repo / "bench.sh", 0o755)
    (repo / "autoresearch.toml").write_text(CONFIG.format(stamps=root / "stamps"))
    (repo / ".gitignore").write_text("experiments.jsonl\n.experiments.jsonl.*\nqueue/\n")
    (repo / "queue").mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "base")
    return repo


def queue_patch(repo: Path, n: int) -> None:
    """A patch that adds one file: the next experiment the run picks up."""
    path = f"src/q{n:06d}.txt"
    (repo / "queue" / f"{n:06d}.patch").write_text(
        f"Title: idea {n}\n\ndiff --git a/{path} b/{path}\nnew file mode 100644\n"
        f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{n}\n"
    )


def inflate(journal: Path, records: int) -> None:
    """Append `records` experiments after the session's own, as one write, then index them."""
    lines = journal.read_text().splitlines()
    last = [json.loads(line) for line in lines if '"type": "experiment"' in line][-1]
    rng = random.Random(1)
    metrics = {"t_ms": 100.0}
    with open(journal, "ab") as handle:
        for n in range(last["n"] + 1, last["n"] + 1 + records):
            status = rng.choice(["discard", "inconclusive", "crash"])
            record = experiment(
                rng, "scale", n, status, 1.0, 1.02, metrics, parent=last["parent_commit"]
            )
            line = json.dumps(json_safe(record.to_dict()), ensure_ascii=False)
            handle.write(line.encode() + b"\n")
    update_index(journal)


def timed(argv: list[str], cwd: Path) -> tuple[float, float]:
    """Wall seconds and peak MiB of one command run to its end."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    err = child.stderr.read().decode(errors="replace")
    child.stderr.close()
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} in {cwd} failed ({child.returncode}):\n{err}")
    return elapsed, usage.ru_maxrss / 1024


def resume(repo: Path, stamp: Path, n: int) -> tuple[float, float]:
    """Seconds from `run`'s start to its first bench run, and its peak MiB until then."""
    queue_patch(repo, n)
    stamp.unlink(missing_ok=True)
    started = time.time()
    child = subprocess.Popen(
        [AUTORESEARCH, "run", "--quiet", "--no-confirm", "--env", f"STAMP={stamp}"],
        cwd=repo,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 600
    while not stamp.exists() or not stamp.read_text().strip():
        if child.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"autoresearch run in {repo} ended or hung before its first bench")
        time.sleep(0.01)
    first_bench = float(stamp.read_text())
    os.killpg(child.pid, signal.SIGKILL)  # a crash: the next resume recovers the experiment
    _, _, usage = os.wait4(child.pid, 0)
    return first_bench - started, usage.ru_maxrss / 1024


def measure(repos: dict[str, Path], stamps: Path, repeat: int, first: int) -> dict:
    """Each command's (seconds, peak MiB) per session; `first` numbers the patches queued for
    the resumes, new ones each call."""
    commands = {
        "history --last 20 --json": ["history", "--last", "20", "--json"],
        "status": ["status"],
        "state": ["state"],
        "report": ["report"],
        "pr": ["pr"],
        "plot": ["plot", "--out", str(stamps)],
    }
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for rep in range(repeat):
        for label, repo in repos.items():  # the two sessions side by side in each repetition
            print(f"repetition {rep + 1}/{repeat}: {label} ...", file=sys.stderr)
            sample = resume(repo, stamps / f"{label}.stamp", first + rep)
            results.setdefault(("run resume", label), []).append(sample)
            for name, args in commands.items():
                sample = timed([AUTORESEARCH, *args], repo)
                results.setdefault((name, label), []).append(sample)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    big = f"{args.records:,}"
    # The commands as an installed package runs them: its bytecode compiled once (an editable
    # checkout under PYTHONDONTWRITEBYTECODE would compile every module at every command).
    compileall.compile_dir(Path(autoresearch.__file__).parent, quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "stamps").mkdir()
        repos = {"tiny": make_repo(root, "tiny"), big: make_repo(root, "big")}
        for repo in repos.values():
            for n in (1, 2):
                queue_patch(repo, n)
            subprocess.run(
                [AUTORESEARCH, "run", "--quiet", "--no-confirm", "--max-experiments", "2"],
                cwd=repo,
                check=True,
                capture_output=True,
            )
        print(f"inflating the journal by {big} records ...", file=sys.stderr)
        # In a process of its own: a child forked from a big parent would report the parent's
        # memory as its own peak (ru_maxrss survives fork and exec).
        journal = repos[big] / "experiments.jsonl"
        subprocess.run(
            [sys.executable, __file__, "--inflate", str(journal), str(args.records)], check=True
        )
        size = (repos[big] / "experiments.jsonl").stat().st_size / 2**20
        tables = {}
        for first, load in ((10_000_000, "quiet"), (20_000_000, "a core busy")):
            with a_core_busy(load != "quiet"):
                tables[load] = measure(repos, root / "stamps", args.repeat, first)
    print(f"journal of {big} experiment records ({size:.0f} MiB) beside a tiny one (3 records);")
    print(f"medians of {args.repeat}, peak memory the largest seen")
    rows: list[dict] = []
    missed = sum(table(name, results, big, rows) for name, results in tables.items())
    print(f"\n{len(GOALS) * len(tables) - missed} of {len(GOALS) * len(tables)} goals met")
    how = "PATH's" if AUTORESEARCH == "autoresearch" else "the console script beside Python:"
    notes = f"{big} records, {size:.0f} MiB; medians of {args.repeat}; {how} autoresearch"
    record("journal_scale", rows, notes=notes)
    return 1 if missed else 0


def table(load: str, results: dict, big: str, rows: list[dict]) -> int:
    """Print one machine state's table, its rows added to `rows` as data (results.py); how
    many goals it missed."""
    print(f"\n{load}:\n")
    print(f"| command | tiny | {big} | peak MiB (tiny / {big}) | goal | |")
    print("|---|---:|---:|---:|---|---|")
    missed = 0
    for name, (goal_s, goal_mib) in GOALS.items():
        tiny, large = results[(name, "tiny")], results[(name, big)]
        t_small = statistics.median(s for s, _ in tiny)
        t_large = statistics.median(s for s, _ in large)
        m_small, m_large = max(m for _, m in tiny), max(m for _, m in large)
        ok = t_large <= goal_s and (goal_mib is None or m_large <= goal_mib)
        if name == "status":
            ok = ok and t_small <= goal_s
        missed += not ok
        goal = f"≤ {goal_s:g} s" + (f", ≤ {goal_mib} MiB" if goal_mib else "")
        print(
            f"| {name} | {t_small:.2f} s | {t_large:.2f} s | {m_small:.0f} / {m_large:.0f} "
            f"| {goal} | {'met' if ok else 'MISSED'} |"
        )
        rows.append(
            {
                "condition": load,
                "command": name,
                "tiny": f"{t_small:.2f} s",
                big: f"{t_large:.2f} s",
                "peak MiB": f"{m_small:.0f} / {m_large:.0f}",
                "goal": f"{goal}: {'met' if ok else 'MISSED'}",
            }
        )
    return missed


if __name__ == "__main__":
    if sys.argv[1:2] == ["--inflate"]:
        sys.exit(inflate(Path(sys.argv[2]), int(sys.argv[3])))
    sys.exit(main())
