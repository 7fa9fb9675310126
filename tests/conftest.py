"""Shared fixtures and helpers: the synthetic target (synthetic.py), driving the loop, records."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import traceback
from pathlib import Path

# The package's and the tests' bytecode is written as an install writes it, even where
# PYTHONDONTWRITEBYTECODE is set: each worker and each command the tests start would otherwise
# compile every helper and module again, and rewrite the asserts of every test module. Set
# before the helpers and the package below are imported: each worker imports them first. The
# children keep the variable: nothing is written into the trees they run in.
sys.dont_write_bytecode = False

import pytest
from hypothesis import settings
from inprocess import InProcess
from synthetic import Target, git, make_target, unified_patch

from autoresearch.bench.runners import LocalRunner, runners_from
from autoresearch.journal.decision import Decision
from autoresearch.journal.records import Asi, ExperimentRecord
from autoresearch.journal.store import read_journal
from autoresearch.loop.driver import run_session
from autoresearch.loop.session import RunOptions
from autoresearch.progress import Progress
from autoresearch.repo.state_dir import session_paths
from autoresearch.statuses import Status

__all__ = ["Target", "git", "make_target", "unified_patch"]  # shared with the test modules


_HOME = pytest.StashKey[Path]()

# Property tests check what a function returns, never how fast: Hypothesis's default 200 ms
# deadline a case is a timing assertion, which a busy machine (or a worker's first lazy import)
# fails by chance.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: two workers a core. Part of the suite's time is spent waiting on its children
    (a bench's sleep, a timeout, a killed process's end), which a second worker on the core
    fills, though each worker costs 4 s of CPU to start: the fast suite took 71 s with four
    workers here, 80 s with three and 98 s with two, one after another."""
    return 2 * (os.cpu_count() or 1)


def pytest_collection_modifyitems(config, items):
    """The longest tests first, by the seconds their `slow` marker says they took two at a time
    here: taken in file order, a worker could hold two nights while the other ran out of work
    (CI's slow suite, 1194 s; 988 s in this order). With `--maxschedchunk=1` (.ci/run) each
    worker takes the next test as it frees, so the two finish near each other; the fast suite
    keeps xdist's chunks, which keep a module's tests on one worker (one at a time, its workers
    took 319 s of user CPU against 283 s)."""

    def seconds(item) -> float:
        marker = item.get_closest_marker("slow")
        return float(marker.kwargs.get("seconds", 0)) if marker else 0.0

    items.sort(key=seconds, reverse=True)  # stable: the rest keep their order


def _commands_run_this_checkout(config) -> None:
    """The commands the tests start (`python -m autoresearch.cli`, the console script) import
    the package as installed; an editable install of another checkout would have them run its
    code, not this one's, and fail (or pass) for reasons not here. Said once, at the start."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller asked already
        return
    here = Path(__file__).resolve().parent.parent / "autoresearch"
    probe = (
        "import autoresearch, os; print(os.path.dirname(os.path.realpath(autoresearch.__file__)))"
    )
    found = subprocess.run(
        [sys.executable, "-c", probe], cwd="/", capture_output=True, text=True, timeout=60
    )
    if found.returncode != 0 or Path(found.stdout.strip()) != here:
        seen = found.stdout.strip() or found.stderr.strip().splitlines()[-1:]
        raise pytest.UsageError(
            f"the commands the tests start would import autoresearch from {seen}, not from this "
            f"checkout ({here}): run `{sys.executable} -m pip install -e '.[test]'` here first"
        )


def _package_compiled_once(config) -> None:
    """The package's bytecode, written by the controller before any worker starts: on a fresh
    clone the four workers, and the commands they start before a worker has written it, would
    each compile the modules they import (the whole package is 0.7 s of CPU to compile here;
    once written, this only reads the files' times)."""
    if hasattr(config, "workerinput"):
        return
    import compileall

    package = Path(__file__).resolve().parent.parent / "autoresearch"
    compileall.compile_dir(package, quiet=1)


def pytest_configure(config):
    """Hermetic git: no user or system config, hooks or signing reach the tests or the loop
    they drive; the identity the helpers commit with comes from here."""
    _commands_run_this_checkout(config)
    _package_compiled_once(config)
    home = Path(tempfile.mkdtemp(prefix="autoresearch-tests-git-"))
    config.stash[_HOME] = home
    gitconfig = home / "gitconfig"
    # No automatic maintenance after each commit: a process per commit the tests never need.
    gitconfig.write_text(
        "[user]\n\tname = test\n\temail = test@example.com\n[maintenance]\n\tauto = false\n"
    )
    os.environ["GIT_CONFIG_GLOBAL"] = str(gitconfig)
    os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
    # The loop keeps an agent's scratch tree in the user's cache: the tests' own, here. Go's
    # build cache follows XDG_CACHE_HOME unless pinned: it stays the warm one.
    user_cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    os.environ.setdefault("GOCACHE", str(Path(user_cache) / "go-build"))
    os.environ["XDG_CACHE_HOME"] = str(home / "cache")


# The threads alive when the running test began its set-up: a library's idle pool (Dask's
# offload thread, asyncio's child watcher) outlives the test that started it, and is not a
# reason for a later test's command to leave this process.
_threads_before: set[threading.Thread] = set()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _threads_before.clear()
    _threads_before.update(threading.enumerate())


def _threads_of_the_test() -> bool:
    """Whether the running test (or its fixtures) started a thread still alive: a command in
    this process changes its directory and environment under it."""
    return any(t not in _threads_before for t in threading.enumerate())


def pytest_unconfigure(config):
    """The hermetic home goes with the session (every run would otherwise leave one in /tmp)."""
    home = config.stash.get(_HOME, None)
    if home is not None:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def target(tmp_path: Path) -> Target:
    return make_target(tmp_path / "repo")


# The commands a test runs in a process of their own even when it may run them here: their
# standard streams are a protocol, or they serve until stopped. `run --cluster` starts a
# scheduler's threads and processes, and `try --detach` its try, that outlive the call.
OWN_PROCESS = {"serve", "mcp"}
OUTLIVE = ("--cluster", "--detach")


def run_cli(*args: str, cwd: Path, env: dict | None = None, timeout: float = 120, real=False):
    """The console entry point `autoresearch ARGS` run in `cwd`, as a CompletedProcess. A
    command that may runs in this process (`main` with its streams and exit code captured,
    the environment and the directory put back after); `real`, a long-running command, or a
    test with threads of its own gets the real console script in a child process."""
    here = args[0] not in OWN_PROCESS and not any(a.startswith(OUTLIVE) for a in args)
    if real or not here or _threads_of_the_test():
        return _cli_process(args, cwd, env, timeout)
    with _in_process_runners():
        return _cli_here(args, cwd, env)


def _in_process_runners():
    """A command in this process measures in-process, as `run(target)` does: each harness it
    makes without a runner (a session's, the pre-flight's, the best's profile) gets one
    wherever the config leaves runs unconfined (bench/runners.py, `runners_from`)."""

    def made(config, sandbox):
        runner = LocalRunner.of(config, sandbox)
        return InProcess(runner) if sandbox is None and config.sandbox.mode == "off" else runner

    return runners_from(made)


def _cli_here(args, cwd: Path, env: dict | None) -> subprocess.CompletedProcess:
    from autoresearch.cli import main

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    os.environ.update(env or {})
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exit_:  # argparse's: usage errors, --help
                code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
            except Exception:  # what the interpreter prints before exiting 1
                traceback.print_exc()
                code = 1
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    argv = [sys.executable, "-m", "autoresearch.cli", *args]
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def _cli_process(args, cwd: Path, env: dict | None, timeout: float):
    """The real console entry point in a child process, in a session of its own (as the loop
    starts its own children): past `timeout`, its whole group is killed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "autoresearch.cli", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def edit_file(path: Path, edits: dict[str, str]) -> str:
    """What a user's $EDITOR does: each `old` (which must be there) replaced by its `new`;
    returns the new text."""
    text = path.read_text()
    for old, new in edits.items():
        assert old in text, f"{path}: no {old!r}"
        text = text.replace(old, new, 1)
    path.write_text(text)
    return text


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip()


# -- driving the loop -------------------------------------------------------------------------


def run(target, *, real: bool = False, **options):
    """One `autoresearch run` of `target` in this process. Its scripts run in-process where
    they may (inprocess.py), unless the config confines them or `real` asks for processes."""
    # The synthetic benches' noise is part of what a test sets up, not a reason to stop; the
    # refusal of a too-noisy bench has its own tests.
    options.setdefault("accept_noise", True)
    config = target.load()
    if not real and config.sandbox.mode == "off":
        options.setdefault("runner", InProcess(LocalRunner.of(config)))
    return run_session(config, RunOptions(**options), Progress(quiet=True))


def run_on_hosts(config, scheduler: str, options, progress):
    """`autoresearch run --cluster SCHEDULER`: the night with bench hosts as its executor."""
    from autoresearch.cluster import bench_hosts

    with bench_hosts(config, scheduler, progress) as hosts:
        return run_session(config, options, progress, executor=hosts)


def loud_losses_past_a_small_log_budget(target, count: int) -> None:
    """A log budget of 1 MB (each run's log cut at 0.25 MB), and `count` losses whose bench
    prints BENCH_LOUD_MB of output: nothing the retention rule keeps for their own sake."""
    text = target.config_path.read_text()
    capped = "preflight = false\nmax_run_log_mb = 0.25\nmax_logs_mb = 1"
    target.config_path.write_text(text.replace("preflight = false", capped))
    git(target.root, "commit", "-qam", "a small log budget")
    for i in range(count):
        target.add_hypothesis(f"0{i}-loud", {"src/mode.txt": "loud\n", "src/value.txt": f"12{i}\n"})


def seen(markdown: str) -> str:
    """What a reader of rendered Markdown sees of it: its backslash escapes and the invisible
    joiners that defuse references and mentions (autoresearch/inert.py) gone."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown).replace("\u2060", "")


def experiments(target):
    return read_journal(target.journal).experiments


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except OSError:
        return False


def spawn_loop(target, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "autoresearch.cli", "run", "--quiet"],
        cwd=target.root,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# How long a test waits for something that must happen. A busy machine makes things slow,
# never this slow: past it, the thing is not coming (a hang, a bug), and the test says which.
EVENTUALLY_S = 120.0


def eventually(check, *, what: str, timeout: float = EVENTUALLY_S, interval: float = 0.05):
    """Poll `check()` until it returns something truthy, and return that; past `timeout`,
    fail naming `what` was awaited. Every wait in the tests goes through here."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:.0f} s for {what}")
        time.sleep(interval)


def wait_for(path, timeout=EVENTUALLY_S):
    eventually(path.exists, what=f"{path} to appear", timeout=timeout)


def gone(pid: int) -> bool:
    """The process has died (waited for: a kill takes effect when the kernel gets to it)."""
    eventually(lambda: not alive(pid), what=f"process {pid} to die")
    return True


def wait_for_candidate(target, started):
    """Wait until the candidate's bench is running: the in-flight marker in its bench phase, and
    the pid the bench wrote to `started` alive in the candidate's worktree (the baseline's
    quick runs write it too)."""
    paths = session_paths(target.load())

    def benching() -> bool:
        try:  # the loop replaces or removes the marker, the bench rewrites its pid, any moment
            data = json.loads(paths.inflight.read_text())
            pid = int(started.read_text())
            cwd = Path(os.readlink(f"/proc/{pid}/cwd")).resolve()
        except (OSError, ValueError):
            return False
        return data.get("phase") == "bench" and cwd == paths.worktree.resolve() and alive(pid)

    eventually(benching, what="the candidate's bench to start")


def experiment_record(n: int, status: str = "discard", **more) -> ExperimentRecord:
    """A record; its `decision` (with `sentinels`) may be given as the journal holds it."""
    if isinstance(more.get("decision"), dict):
        more["decision"] = Decision.from_dict(more["decision"], more.pop("sentinels", {}))
    return ExperimentRecord(
        session="s",
        id=f"s-{n:04d}",
        n=n,
        status=Status(status),
        title=f"try {n}",
        proposer="queue",
        source=None,
        patch_sha256="0" * 64,
        touched_files=["a.go"],
        parent_commit="c" * 40,
        kept_commit=None,
        started_at="2026-01-01T00:00:00+00:00",
        ended_at="2026-01-01T00:00:01+00:00",
        duration_s=1.0,
        asi=Asi(hypothesis="h", mechanism="m", rollback_reason="worse"),
        **more,
    )


# What a bench host's worker imports before its first job: Dask's own preload, then the host's
# code and the statistics its calibration calls.
FORKSERVER_PRELOAD = [
    "distributed", "dask", "msgpack", "cloudpickle", "tornado", "toolz", "numpy", "pandas",
    "autoresearch.cluster.host", "scipy.special",
]  # fmt: skip


def local_cluster(tmp_path: Path, workers: int = 2):
    """Bench hosts on this machine: Dask workers in processes of their own, one bench slot
    each (the `bench` resource the driver asks for)."""
    import multiprocessing

    import dask
    from distributed import LocalCluster
    from distributed.utils import get_mp_context

    # Each worker forks from one server that imported Dask and the host's code once, instead of
    # starting a fresh interpreter that imports them again: two thirds of a cluster test's CPU.
    # Dask names its own preload the first time it makes the context, replacing any named
    # before: it is asked first, and the host's code (its statistics too) added after.
    from autoresearch.cluster.host import QUIET_WORKER

    dask.config.set({"distributed.worker.multiprocessing-method": "forkserver", **QUIET_WORKER})
    get_mp_context()
    multiprocessing.set_forkserver_preload(FORKSERVER_PRELOAD)
    return LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        resources={"bench": 1},
        dashboard_address=":0",
        local_directory=str(tmp_path / "workers"),
    )
