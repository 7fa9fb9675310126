"""The one subprocess helper: own process group, wall-clock timeout, whole-tree kill, log file.

Whatever a command starts must be found and stopped, even what left its process group (`timeout`,
`set -m` jobs, `setsid`) or outlived its parent. Three nets, all from what Linux gives without
privileges: every process the loop starts carries a token in its environment (inherited by
everything it starts in turn), group and session ids are matched, and the loop is a child
subreaper, so that orphans of a command are reparented to it instead of to init.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..journal.checks_run import ChecksRun, TestCount
from ..process.capture import POLL_S, exit_fd, exited
from ..process.children import forget, named, start_named
from ..process.procfs import (
    children_of,
    environ_of,
    pids,
    process_started,
    reap,
    running,
    send_signal,
    stat_of,
)
from .environ import target_environ
from .handed import moved_to
from .logcap import DEFAULT_CAP, CappedLog

__all__ = [
    "TOKEN_ENV",
    "RunResult",
    "StopFlag",
    "become_subreaper",
    "find_processes",
    "kill_processes",
    "process_started",
    "process_token",
    "read_log",
    "run",
    "running",
    "spawn_detached",
    "spawn_watcher",
    "tail_text",
]

TERM_GRACE_S = 3.0
TAIL_LINES = 40
TAIL_CHARS = 4000
TOKEN_ENV = "AUTORESEARCH_RUN_TOKEN"
KILL_ROUNDS = 20  # a process that forks as fast as it is killed gets this many sweeps
PR_SET_CHILD_SUBREAPER = 36


# Commands running beside others (an agent preparing the next proposal while the bench runs):
# leader pid -> token. Another command's clean-up spares them, their groups and their token.
_CONCURRENT: dict[int, str | None] = {}
_CONCURRENT_LOCK = threading.Lock()


class StopFlag(threading.Event):
    """Set to ask for a clean stop; `urgent` once asked twice: kill without a grace period."""

    urgent = False


def process_token(state_dir: Path) -> str:
    """The token a session's processes carry: the same for every run of the session, so that
    a restarted loop finds what a killed one left running."""
    return hashlib.sha256(str(state_dir.resolve()).encode()).hexdigest()[:24]


def become_subreaper() -> bool:
    """Orphans of our commands are reparented to this process, not to init (Linux >= 3.4)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


@dataclass(frozen=True)
class RunResult:
    """How one command ended. Outcomes are data: a timeout is a field, not an exception."""

    command: str
    exit_code: int | None
    timed_out: bool
    interrupted: bool
    duration_s: float
    log_path: str
    tail: str
    tests: TestCount | None = None  # the checks' count, from the runner's report (testcount.py)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.interrupted

    def describe(self) -> str:
        if self.timed_out:
            return f"timed out after {self.duration_s:.1f}s"
        if self.interrupted:
            return "interrupted"
        if self.exit_code is not None and self.exit_code < 0:
            return f"killed by signal {-self.exit_code}"
        return f"exit code {self.exit_code}"

    def recorded(self) -> ChecksRun:
        """What the record keeps of the checks' run."""
        return ChecksRun(
            command=self.command,
            exit_code=self.exit_code,
            timed_out=self.timed_out,
            interrupted=self.interrupted,
            duration_s=self.duration_s,
            log=self.log_path,
            tail=self.tail,
            tests=self.tests,
        )


def run(
    command: str,
    *,
    cwd: Path,
    log_path: Path,
    timeout_s: float,
    env: dict[str, str] | None = None,
    stop: threading.Event | None = None,
    on_start: Callable[[int], None] | None = None,
    token: str | None = None,
    concurrent: bool = False,
    cpus: str = "",
    wrapper: list[str] | None = None,
    max_log_bytes: int = DEFAULT_CAP,
    environ: dict[str, str] | None = None,
    handed: dict[int, int] | None = None,
    stdout_copy: Path | None = None,
) -> RunResult:
    """Run `command` with bash in its own process group; stdout and stderr go to `log_path`,
    capped at `max_log_bytes` (logcap.py: the head and the tail kept, the cut said), stdout
    alone also to `stdout_copy` when given. `cpus` (a taskset list such as "1" or "2-3") pins
    the whole tree to those CPUs; `wrapper` (a sandbox's argv, which may read what it is
    handed) runs bash inside it. `handed` puts descriptors at fixed numbers (handed.py) in the
    child. `env` is added to `environ`, the environment it starts from (the user's whole one
    when None; a target's command gets less: environ.py).

    On timeout or when `stop` is set the whole tree gets SIGTERM, then SIGKILL after a grace
    period (none when the stop is urgent), so grandchildren (a bench binary under a script) die
    with it. Stragglers left behind by a command that exited normally are killed too: a
    leftover daemon would skew the next run. `on_start` gets the group id, so that a caller can
    note it where a restart will find it; `token` marks every process of the tree.

    A `concurrent` command runs beside others: their clean-up leaves it alone, and its own
    finds its processes by group and token only, never as "any new child of this process".
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    inherited = target_environ() if environ is None else environ
    full_env = {**inherited, **(env or {}), **({TOKEN_ENV: token} if token else {})}
    started = time.monotonic()
    before = None if concurrent else children_of(os.getpid())
    log = CappedLog(log_path, max_log_bytes)
    try:
        argv = [*(["taskset", "-c", cpus] if cpus else []), *(wrapper or []), "bash", "-c", command]
        start = functools.partial(_start, argv, cwd, full_env, log, handed or {}, stdout_copy)
        # Not an orphan of a run beside it (process/children.py).
        proc = start_named(start) if concurrent else start()
        timed_out, interrupted = _supervise(
            proc, started + timeout_s, stop, on_start, token, before, concurrent
        )
    finally:
        log.finish()
    return RunResult(
        command=command,
        exit_code=proc.returncode,
        timed_out=timed_out,
        interrupted=interrupted,
        duration_s=time.monotonic() - started,
        log_path=str(log_path),
        tail=tail_text(read_log(log_path)),
    )


def _start(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    log: CappedLog,
    handed: dict[int, int],
    stdout_copy: Path | None,
) -> subprocess.Popen:
    """Start `argv` in a session of its own, its output and errors relayed into `log`."""
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    first, passed = moved_to(handed)
    try:
        proc = subprocess.Popen(
            [*first, *argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out_write,
            stderr=err_write, start_new_session=True, pass_fds=passed,
        )  # fmt: skip
    except BaseException:
        os.close(out_read)
        os.close(err_read)
        raise
    finally:
        os.close(out_write)  # the run's processes hold the only writers now
        os.close(err_write)
    log.start(out_read, err_read, stdout_copy)
    return proc


def _supervise(
    proc: subprocess.Popen,
    deadline: float,
    stop: threading.Event | None,
    on_start: Callable[[int], None] | None,
    token: str | None,
    before: set[int] | None,
    concurrent: bool,
) -> tuple[bool, bool]:
    """Wait for the run (see `_wait`), then stop everything it started, whatever happened."""
    if concurrent:
        with _CONCURRENT_LOCK:
            _CONCURRENT[proc.pid] = token
    try:
        if on_start is not None:
            on_start(proc.pid)
        return _wait(proc, deadline, stop)
    finally:
        # Also reached on KeyboardInterrupt or any error here: never leave the tree running.
        try:
            _kill_tree(proc, token, before, urgent=getattr(stop, "urgent", False))
        finally:
            with _CONCURRENT_LOCK:
                _CONCURRENT.pop(proc.pid, None)
            forget(proc.pid)


def _wait(
    proc: subprocess.Popen, deadline: float, stop: threading.Event | None
) -> tuple[bool, bool]:
    """Until the command exits, its deadline passes or `stop` is set: (timed out, stopped).

    A pidfd wakes the wait at the exit itself; `Popen.wait(timeout)` polls in sleeps that grow
    to 50 ms, which a short run's duration (and a test's bench) would pay each time."""
    with exit_fd(proc.pid) as pidfd:
        while not exited(proc, pidfd):
            if time.monotonic() > deadline:
                return True, False
            if stop is not None and stop.is_set():
                return False, True
    return False, False


def spawn_detached(
    argv: list[str], *, cwd: Path, stdout: Path, stderr: Path, env: dict[str, str] | None = None
) -> int:
    """Start `argv` in a session of its own that outlives this process (a background `try`),
    with `env` added to ours; its pid."""
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        child = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
    return child.pid


def spawn_watcher(argv: list[str], stdin: int) -> int:
    """Start `argv` reading `stdin`, in a session of its own that outlives this process, its
    output discarded: a watchdog (orphans.py); its pid. Spawned bare, with no Popen to warn at
    this process's exit that it still runs: it is meant to."""
    quiet = (os.O_WRONLY, 0)
    actions = [
        (os.POSIX_SPAWN_DUP2, stdin, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, *quiet),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, *quiet),
    ]
    return os.posix_spawn(argv[0], argv, dict(os.environ), file_actions=actions, setsid=True)


def _kill_tree(
    proc: subprocess.Popen, token: str | None, before: set[int] | None, urgent: bool
) -> None:
    leader = proc.pid  # start_new_session: the child leads a group and a session of its own id
    if proc.poll() is None:
        term = [leader, *find_processes(token, leader, exclude=before)]
        for pid in dict.fromkeys(term):
            send_signal(pid, signal.SIGKILL if urgent else signal.SIGTERM, group=pid == leader)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0 if urgent else TERM_GRACE_S)
    send_signal(leader, signal.SIGKILL, group=True)
    proc.wait()
    kill_processes(token, leader, exclude=before)
    # What ended after the sweep's last look (a sandbox's inner process dies with its outer one,
    # in its own time) and was reparented here; not another thread's named child.
    if before is not None:
        with named() as own:
            reap({p for p in children_of(os.getpid()) - before - own if _zombie(p)})


def _zombie(pid: int) -> bool:
    return (stat_of(pid) or "Z")[0] == "Z"


def find_processes(
    token: str | None, leader: int | None = None, exclude: set[int] | None = None
) -> list[int]:
    """Live processes that belong to a command: in the leader's group or session, carrying the
    token, or reparented to this process since `exclude` (its children before the command)."""
    return _scan(token, leader, exclude)[0]


def _scan(
    token: str | None, leader: int | None, exclude: set[int] | None
) -> tuple[list[int], set[int]]:
    """The command's live processes (`find_processes`), and those of its processes that have
    ended as this process's children (zombies, reparented here) since `exclude`: not another
    thread's named child, whose exit status is its caller's to collect."""
    me = os.getpid()
    needle = f"{TOKEN_ENV}={token}".encode() if token else None
    with _CONCURRENT_LOCK:
        spared = {pid: t for pid, t in _CONCURRENT.items() if pid != leader}
    found, ended = [], set()
    # No child of this process starts unnamed while the scan runs (process/children.py).
    with named() as own:
        for pid in pids():
            if pid == me or (pid in own and pid != leader):
                continue
            stat = stat_of(pid)
            if stat is None:
                continue
            state, ppid, pgrp, sid = stat
            if spared and _spared(pid, pgrp, sid, spared, token):
                continue
            ours = leader is not None and leader in (pgrp, sid)
            ours = ours or (exclude is not None and ppid == me and pid not in exclude)
            if state == "Z":
                if ours and ppid == me:
                    ended.add(pid)
                continue
            if not ours and needle is not None:
                ours = needle in environ_of(pid)
            if ours:
                found.append(pid)
    return found, ended


def kill_processes(
    token: str | None, leader: int | None = None, exclude: set[int] | None = None
) -> int:
    """SIGKILL every process `find_processes` names, until none is left; how many were killed.

    A scan lists /proc, then reads each process it listed: a process that starts a child and
    ends in between (`setsid` does, when it forks away from its group) is a zombie by the time
    it is read, and its child was never listed. So a scan that finds nothing only ends the
    sweep when none of the command's processes ended since the last one (a zombie reparented
    here says one did; it is reaped, and the next scan's list holds the child). Without
    `exclude` (a sweep by token, or a run beside others) not every such end leaves a zombie
    here: the sweep ends at the second scan in a row that finds nothing."""
    killed: set[int] = set()
    quiet, enough = 0, 1 if exclude is not None else 2
    for _ in range(KILL_ROUNDS):
        live, ended = _scan(token, leader, exclude)
        reap(ended)
        quiet = 0 if live or ended else quiet + 1
        if quiet >= enough:
            break
        for pid in live:
            send_signal(pid, signal.SIGKILL)
            killed.add(pid)
        reap(killed)
        if live:  # the kill takes effect when the kernel gets to it; a look at once is free
            time.sleep(POLL_S / 5)
    reap(killed)
    return len(killed)


def _spared(pid: int, pgrp: int, sid: int, spared: dict[int, str | None], token) -> bool:
    """A process of a command running beside this one: by its group, or by its own token."""
    if any(leader in (pid, pgrp, sid) for leader in spared):
        return True
    environ = environ_of(pid) + b"\0"
    return any(
        t and t != token and f"{TOKEN_ENV}={t}\0".encode() in environ for t in spared.values()
    )


def read_log(path: Path | str) -> str:
    """A log's text; undecodable bytes are replaced, never fatal."""
    try:
        return Path(path).read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return ""


def tail_text(text: str, lines: int = TAIL_LINES, chars: int = TAIL_CHARS) -> str:
    """The last `lines` lines, at most `chars` characters: what a record carries of a log."""
    tail = "\n".join(text.splitlines()[-lines:])
    return tail[-chars:]
