"""What waiting for a command's exit costs: `proc.run`'s pidfd wait against Popen's polling.

Runs a short command many times through the real `proc.run` (own session, log relay, tree
clean-up), once waiting on a pidfd and once with the pidfd withheld (Popen.wait's sleeps,
which grow to 50 ms), alternating, and prints the median recorded duration of each; then the
same for the loop's git calls (`Repo.run`, thousands a night): `git rev-parse HEAD` through
`capture.capture` (a pidfd), through `Popen.communicate(timeout=)` (its polling wait) and through
GitPython's `execute(kill_after_timeout=)` (a watchdog thread a call), wall time per call.
Quiet and with a core busy; the rows written as data (results.py).

    python benchmarks/wait_latency.py [--runs 40] [--rounds 3] [--command "python3 -S -c pass"]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import git
from machine_load import a_core_busy
from results import record

from autoresearch.bench import proc
from autoresearch.repo.gitrepo import GIT_TIMEOUT_S, Repo

GIT_CALLS = 200  # per round and way


_WITH_PIDFD = proc.exit_fd


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
    rows = []
    for busy in (False, True):
        with a_core_busy(busy):
            condition = "a core busy" if busy else "quiet"
            print(condition)
            rows.append({"condition": condition, **_waits(args), **_git_calls(args.rounds)})
    record("wait_latency", rows, notes=f"`{args.command}`, {args.runs} runs a round and way")


def _waits(args) -> dict:
    """The median recorded duration of `args.command` each way, per round."""
    ways = {"pidfd": proc.exit_fd, "polling": _no_pidfd}
    medians: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.rounds):
        for name, exit_fd in ways.items():
            proc.exit_fd = exit_fd
            medians[name].append(statistics.median(_durations(args.command, args.runs)))
    proc.exit_fd = _WITH_PIDFD
    row = {}
    for name, values in medians.items():
        shown = ", ".join(f"{1000 * v:.1f}" for v in values)
        print(f"{name:8s} median duration per round (ms): {shown}")
        row[f"command, {name} (ms a round)"] = shown
    return row


def _git_calls(rounds: int) -> dict:
    """Wall time per `git rev-parse HEAD` each way, per round."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["git", "init", "-q", tmp], check=True)
        subprocess.run(
            ["git", "-C", tmp, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q",
             "--allow-empty", "-m", "x"],
            check=True,
        )  # fmt: skip
        repo, argv = Repo(Path(tmp)), ["git", "rev-parse", "HEAD"]
        gitpython = git.Repo(tmp).git
        ways = {
            "capture": lambda: repo.run("rev-parse", "HEAD"),
            "communicate": lambda: subprocess.run(
                argv, cwd=tmp, capture_output=True, timeout=GIT_TIMEOUT_S
            ),
            "gitpython": lambda: gitpython.execute(
                argv, with_exceptions=False, kill_after_timeout=GIT_TIMEOUT_S
            ),
        }
        per_call: dict[str, list[float]] = {name: [] for name in ways}
        proc.exit_fd = _WITH_PIDFD
        for _ in range(rounds):
            for name, call in ways.items():
                started = time.perf_counter()
                for _ in range(GIT_CALLS):
                    call()
                per_call[name].append((time.perf_counter() - started) / GIT_CALLS)
    row = {}
    for name, values in per_call.items():
        shown = ", ".join(f"{1000 * v:.2f}" for v in values)
        print(f"git rev-parse via {name:11s} ms per call, per round: {shown}")
        row[f"git via {name} (ms a call)"] = shown
    return row


if __name__ == "__main__":
    main()
