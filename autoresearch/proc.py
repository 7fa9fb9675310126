"""The one subprocess helper: own process group, wall-clock timeout, whole-group kill, log file."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RunResult", "kill_orphan_group", "read_log", "run", "tail_text"]

TERM_GRACE_S = 3.0
POLL_S = 0.05
TAIL_LINES = 40
TAIL_CHARS = 4000


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

    def to_dict(self) -> dict:
        return {
            "command": self.command,
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "interrupted": self.interrupted,
            "duration_s": round(self.duration_s, 3),
            "log": self.log_path,
            "tail": self.tail,
        }


def run(
    command: str,
    *,
    cwd: Path,
    log_path: Path,
    timeout_s: float,
    env: dict[str, str] | None = None,
    stop: threading.Event | None = None,
    on_start: Callable[[int], None] | None = None,
) -> RunResult:
    """Run `command` with bash in its own process group; stdout and stderr go to `log_path`.

    On timeout or when `stop` is set the whole group gets SIGTERM, then SIGKILL after a grace
    period, so grandchildren (a bench binary under a script) die with it. Stragglers left behind
    by a command that exited normally are killed too: a leftover daemon would skew the next run.
    `on_start` gets the group id, so that a caller can note it where a restart will find it.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, **(env or {})}
    started = time.monotonic()
    timed_out = interrupted = False
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=cwd,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            if on_start is not None:
                on_start(proc.pid)
            while True:
                try:
                    proc.wait(timeout=POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if time.monotonic() - started > timeout_s:
                    timed_out = True
                    break
                if stop is not None and stop.is_set():
                    interrupted = True
                    break
        finally:
            # Also reached on KeyboardInterrupt or any error here: never leave the group running.
            _kill_group(proc)
    duration = time.monotonic() - started
    exit_code = proc.returncode
    return RunResult(
        command=command,
        exit_code=exit_code,
        timed_out=timed_out,
        interrupted=interrupted,
        duration_s=duration,
        log_path=str(log_path),
        tail=tail_text(read_log(log_path)),
    )


def _kill_group(proc: subprocess.Popen) -> None:
    pgid = proc.pid  # start_new_session makes the child the leader of a group of its own id
    if proc.poll() is None:
        _signal_group(pgid, signal.SIGTERM)
        try:
            proc.wait(timeout=TERM_GRACE_S)
        except subprocess.TimeoutExpired:
            _signal_group(pgid, signal.SIGKILL)
            proc.wait()
    _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def kill_orphan_group(pgid: int, cwd_prefix: Path) -> bool:
    """Kill a process group left running by a loop that died, if it is still ours.

    The group leader must still run inside `cwd_prefix` (the session's state directory, which
    holds its worktrees), so that a recycled process id never gets an unrelated process killed.
    """
    try:
        cwd = Path(os.readlink(f"/proc/{pgid}/cwd"))
    except OSError:
        return False
    if not cwd.is_relative_to(cwd_prefix):
        return False
    _signal_group(pgid, signal.SIGKILL)
    return True


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
