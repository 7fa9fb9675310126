"""Short helper commands the loop asks things of (git, a version query), their output in
memory; and the wait on a process's exit that wakes at the exit itself, which the target's
runs (proc.py) share.
"""

from __future__ import annotations

import contextlib
import os
import select
import selectors
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from .children import forget, start_named
from .procfs import send_signal

__all__ = ["CAPTURE_TIMEOUT_S", "POLL_S", "Captured", "capture", "exit_fd", "exited"]

POLL_S = 0.05
CAPTURE_TIMEOUT_S = 300.0  # a git call or a version query: minutes would mean a hang


def exited(proc: subprocess.Popen[bytes], pidfd: int | None, timeout_s: float = POLL_S) -> bool:
    """Whether the command has exited, waiting at most `timeout_s` for it."""
    if pidfd is None:
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        return True
    select.select([pidfd], [], [], timeout_s)
    return proc.poll() is not None


@contextlib.contextmanager
def exit_fd(pid: int) -> Iterator[int | None]:
    """A descriptor readable once `pid` exits (Linux 5.3+), or None where there is none."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Captured:
    """A short helper command's outcome (git, a version query): its output in memory."""

    code: int | None
    out: bytes
    err: bytes
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.code == 0 and not self.timed_out

    def text(self) -> str:
        return self.out.decode(errors="replace")

    def why(self) -> str:
        """Its last line of error output (or a timeout), for a one-line message."""
        if self.timed_out:
            return "timed out"
        lines = self.err.decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exit code {self.code}"


def capture(
    argv: list[str],
    *,
    cwd: Path,
    timeout_s: float = CAPTURE_TIMEOUT_S,
    env: dict[str, str] | None = None,
    stdin: bytes | None = None,
    pass_fds: tuple[int, ...] = (),
) -> Captured:
    """Run a helper (no shell) in its own session and collect its output; past `timeout_s` the
    whole group is killed; it inherits `pass_fds`. For the short commands the loop asks things
    of, not the target's: git above all, thousands of calls a night, so no thread and no
    polling sleep per call."""
    try:
        # Named as this process's own: a run's clean-up beside it is not to take it for an
        # orphan of the run (children.py).
        proc = start_named(
            lambda: subprocess.Popen(
                argv,
                cwd=cwd,
                env={**os.environ, **env} if env is not None else None,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=pass_fds,
            )
        )
    except OSError as exc:
        return Captured(None, b"", str(exc).encode())
    try:
        out, err, timed_out = _communicate(proc, stdin, time.monotonic() + timeout_s)
    finally:
        send_signal(proc.pid, signal.SIGKILL, group=True)  # nothing it started outlives it
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        if proc.returncode is None:  # timed out, or interrupted: killed above
            proc.wait()
        forget(proc.pid)
    return Captured(proc.returncode, out, err, timed_out)


def _communicate(
    proc: subprocess.Popen[bytes], stdin: bytes | None, deadline: float
) -> tuple[bytes, bytes, bool]:
    """Feed `stdin`, read both streams to their end, then wait for the exit, all before
    `deadline`: (out, err, timed out). `Popen.communicate(timeout=)` ends in the polling wait
    proc.py's wait avoids, half a millisecond or more a call; here the exit wakes a pidfd."""
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    streams = {out_fd: bytearray(), err_fd: bytearray()}
    with selectors.DefaultSelector() as selector, exit_fd(proc.pid) as pidfd:
        for fd in streams:
            selector.register(fd, selectors.EVENT_READ)
        if proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
            selector.register(proc.stdin.fileno(), selectors.EVENT_WRITE)
        done = False
        if _pump(selector, streams, proc.stdin, memoryview(stdin or b""), deadline):
            done = exited(proc, pidfd, max(deadline - time.monotonic(), 0.0))
    return bytes(streams[out_fd]), bytes(streams[err_fd]), not done


def _pump(
    selector: selectors.BaseSelector,
    streams: dict[int, bytearray],
    stdin: IO[bytes] | None,
    pending: memoryview,
    deadline: float,
) -> bool:
    """Move bytes until both output streams end (True) or `deadline` passes (False)."""
    while selector.get_map():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        for key, _ in selector.select(remaining):
            if key.fd in streams:
                data = os.read(key.fd, 1 << 16)
                streams[key.fd] += data
                if not data:
                    selector.unregister(key.fd)
                continue
            try:
                pending = pending[os.write(key.fd, pending[: 1 << 16]) :]
            except BlockingIOError:
                continue
            except BrokenPipeError:  # it stopped reading: the rest is not wanted
                pending = pending[:0]
            if not pending and stdin is not None:  # only stdin is registered for writing
                selector.unregister(key.fd)
                stdin.close()
    return True
