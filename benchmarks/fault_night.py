"""The fault suite's night: a synthetic target driven through the CLI as a user drives it, and
the invariants checked after each fault (see faults.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from synthetic import Target, git, make_target  # noqa: E402

from autoresearch.bench.proc import find_processes, process_token  # noqa: E402
from autoresearch.journal.store import read_journal  # noqa: E402
from autoresearch.loop.recovery import kept_commits  # noqa: E402
from autoresearch.loop.session import open_session, session_paths  # noqa: E402
from autoresearch.process.procfs import stat_of  # noqa: E402
from autoresearch.progress import Progress  # noqa: E402
from autoresearch.proposers.queue import read_hypothesis  # noqa: E402
from autoresearch.repo.workspace import open_workspace  # noqa: E402

EXIT_CODES = {0, 1, 3}  # done, a one-line error, ran but interrupted


@dataclass
class Tally:
    """What one category injected and what held."""

    name: str
    faults: int = 0
    survived: int = 0
    records_lost: int = 0
    records_duplicated: int = 0
    commits_unrecorded: int = 0
    dirty_trees: int = 0
    processes_left: int = 0
    tracebacks: int = 0
    notes: list[str] = field(default_factory=list)
    # The suite's own failure in this category (a host that would not start, ...): not a
    # fault the loop failed, but the category's figures are incomplete.
    harness_error: str | None = None

    def add(self, problems: dict[str, int], note: str) -> None:
        self.faults += 1
        for key, value in problems.items():
            setattr(self, key, getattr(self, key) + value)
        if any(problems.values()):
            self.notes.append(f"{note}: {problems}")
        else:
            self.survived += 1


class Night:
    """A synthetic target with a queue, and the CLI driven as a user drives it."""

    def __init__(self, root: Path, config: dict | None = None):
        self.target: Target = make_target(root / "repo")
        self.target.configure(
            **{"max_runs": 6, "min_runs": 4, "max_experiments": 1000, **(config or {})}
        )
        git(self.target.root, "commit", "-qam", "night config")
        self.stderr: list[str] = []
        self.left: list[str] = []  # what the last check found still running
        self.pid_dir = root / "daemons"
        self.pid_dir.mkdir()
        self.checkout = self._checkout_state()

    @property
    def root(self) -> Path:
        return self.target.root

    def queue(self, name: str, changes: dict[str, str]) -> None:
        self.target.add_hypothesis(name, changes)

    def queue_raw(self, name: str, data: bytes) -> None:
        (self.target.queue / f"{name}.patch").write_bytes(data)

    def env(self, extra: dict | None = None) -> dict[str, str]:
        return {**os.environ, "BENCH_DAEMON_DIR": str(self.pid_dir), **(extra or {})}

    def cli(self, *args: str, env: dict | None = None, timeout: float = 300) -> int:
        done = self.captured(*args, env=env, timeout=timeout)
        self._saw(done.returncode, done.stderr)
        return done.returncode

    def captured(
        self, *args: str, env: dict | None = None, timeout: float = 300
    ) -> subprocess.CompletedProcess:
        """The CLI run as the night's user runs it, its output kept for the caller to judge."""
        return subprocess.run(
            [sys.executable, "-m", "autoresearch.cli", *args],
            cwd=self.root,
            env=self.env(env),
            capture_output=True,
            encoding="utf-8",
            errors="replace",  # a path in a message may hold any bytes, as in a terminal
            timeout=timeout,
        )

    def spawn(self, env: dict | None = None) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "autoresearch.cli", "run", "--quiet"],
            cwd=self.root,
            env=self.env(env),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            encoding="utf-8",
            errors="replace",
        )

    def reap(self, proc: subprocess.Popen, sent: int, timeout: float = 120) -> int:
        _, err = proc.communicate(timeout=timeout)
        # Killed by the signal sent (kill -9; or a second signal that landed while Python was
        # already exiting, after its handlers were gone): no exit code of its own to judge.
        # Its output still counts, and so do the invariants after the next run's recovery.
        self._saw(0 if proc.returncode == -sent else proc.returncode, err)
        return proc.returncode

    def recover(self) -> None:
        """What the next run does first (stop leftovers, record, revert), without running on."""
        with open_session(self.target.load(), progress=Progress(quiet=True)):
            pass

    def commit(self, message: str) -> None:
        """Commit a change of the target's own (its config): the checkout's new normal."""
        git(self.root, "commit", "-qam", message)
        self.checkout = self._checkout_state()

    def finish(self, env: dict | None = None) -> None:
        """Run to the end with no fault: what a user does in the morning."""
        self.cli("run", "--quiet", env=env)

    def phase(self) -> str | None:
        marker = session_paths(self.target.load()).inflight
        try:
            return json.loads(marker.read_text()).get("phase") or "calibration"
        except (OSError, ValueError):
            return None

    def check(self, finished: bool = True) -> dict[str, int]:
        """The invariants; counts of what broke."""
        problems = dict.fromkeys(
            [
                "records_lost",
                "records_duplicated",
                "commits_unrecorded",
                "dirty_trees",
                "processes_left",
                "tracebacks",
            ],
            0,
        )
        # What the commands said since the last check: each fault is judged on its own output.
        problems["tracebacks"] = sum(1 for err in self.stderr if "Traceback" in err)
        self.stderr = []
        contents = read_journal(self.target.journal)
        ids = [r.id for r in contents.experiments]
        problems["records_duplicated"] = len(ids) - len(set(ids))
        if finished:
            # By identity, as the loop counts them: the same patch twice is one hypothesis.
            tried = {r.patch_sha256 for r in contents.experiments}
            queued = {
                read_hypothesis(p).sha256
                for p in self.target.queue.iterdir()
                if p.suffix == ".patch"
            }
            problems["records_lost"] = len(queued - tried)
        config = self.target.load()
        paths = session_paths(config)
        if paths.worktree.exists():
            ws = open_workspace(config.repo_path, config.branch, paths.worktree, "HEAD")
            keeps = {r.kept_commit for r in contents.experiments if r.status == "keep"}
            problems["commits_unrecorded"] = sum(
                1 for c in kept_commits(ws, config.session.name) if c.sha not in keeps
            )
            for tree in (paths.worktree, paths.baseline):
                if tree.exists() and git(tree, "status", "--porcelain"):
                    problems["dirty_trees"] += 1
        if self._checkout_state() != self.checkout:
            problems["dirty_trees"] += 1
        time.sleep(0.1)
        alive = find_processes(process_token(paths.root))
        alive += [int(p.name) for p in self.pid_dir.iterdir() if _alive(int(p.name))]
        self.left = [_described(pid, self.pid_dir) for pid in sorted(set(alive))]
        problems["processes_left"] = len(self.left)
        return problems

    def held_runs(self, longest_s: float) -> int:
        """Bench runs that lasted past `longest_s` (a run's timeout and the grace its kill
        gives): a process of the run held its output open after the run's sweep, and the run
        waited for that output's end. The next run's sweep stops such a process, so only this
        says one outlived its run in the middle of a night. A calibration records its runs'
        total alone: one over `longest_s` counts (the best of these nights never hangs, and
        its runs take well under a second)."""
        contents = read_journal(self.target.journal)
        runs = [d for r in contents.experiments for d in r.bench_durations_s]
        runs += [c.duration_s for c in contents.calibrations]
        return sum(1 for d in runs if d > longest_s)

    def _checkout_state(self) -> tuple[str, str]:
        status = git(self.root, "status", "--porcelain", "--untracked-files=no")
        return git(self.root, "rev-parse", "HEAD"), status

    def _saw(self, code: int, err: str) -> None:
        self.stderr.append(err)
        lines = [line for line in err.splitlines() if not line.startswith("warning: ")]
        if code not in EXIT_CODES or (code == 1 and not (lines and lines[-1].startswith("error:"))):
            self.stderr.append(f"Traceback-like: exit {code}: {err[-500:]}")


def _described(pid: int, pid_dir: Path) -> str:
    """What a process left behind is, for the report: its pid, state, parent and command, and
    how the bench that noted it meant it to escape."""
    noted = pid_dir / str(pid)
    how = f" ({noted.read_text()})" if noted.exists() else ""
    stat = stat_of(pid)
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        stat = None
    if stat is None:
        return f"{pid}{how} (gone)"
    return f"{pid}{how} {stat[0]} ppid {stat[1]}: {argv.strip()[:80]}"


def _alive(pid: int) -> bool:
    stat = stat_of(pid)
    return stat is not None and stat[0] != "Z"


def standard_queue(night: Night) -> None:
    night.queue("01-win", {"src/value.txt": "80\n"})
    night.queue("02-loss", {"src/sentinel.txt": "70\n"})
    night.queue("03-checks", {"src/value.txt": "100\n\n", "src/checks_sleep.txt": "0.4\n"})
    night.queue("04-crash", {"src/mode.txt": "crash\n"})
    night.queue("05-small", {"src/sentinel.txt": "49\n"})
