"""What /proc says of a process (its state, parent, group, session, start, environment) and
the signals sent to one: the reading half of process control, for proc.py and for whoever
must tell whether a process it once started is still the same one and alive."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = [
    "children_of",
    "environ_of",
    "files_of_session",
    "pids",
    "process_started",
    "reap",
    "running",
    "send_signal",
    "stat_of",
]


def running(pid: int, started: int | None = None) -> bool:
    """Whether `pid` is a live process (a zombie is not; one of ours is reaped on the way);
    with `started` (what `process_started` said of it), the same process and not a later one
    that was given its number."""
    stat = stat_of(pid) if pid > 0 else None
    if stat is not None and started is not None and process_started(pid) != started:
        return False
    if stat is not None and stat[0] == "Z":
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        return False
    return stat is not None


def process_started(pid: int) -> int | None:
    """When `pid` started (clock ticks after boot, /proc/<pid>/stat): with the pid, a name
    for one process that a reused pid does not take over. None once it is gone."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields is not None and len(fields) > 19 else None


def stat_of(pid: int) -> tuple[str, int, int, int] | None:
    """(state, parent, group, session) from /proc/<pid>/stat; None once it is gone."""
    fields = _stat_fields(pid)
    if fields is None:
        return None
    return fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[3])


def _stat_fields(pid: int) -> list[bytes] | None:
    """/proc/<pid>/stat's fields after the name (which may hold spaces and parentheses)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    return data[data.rfind(b")") + 2 :].split()


def environ_of(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def pids() -> list[int]:
    """The processes /proc lists now. A list, not a view: one that starts after it was taken
    is not in it, and one in it may have ended by the time its files are read."""
    return [int(entry.name) for entry in os.scandir("/proc") if entry.name.isdigit()]


def children_of(me: int) -> set[int]:
    found = set()
    for pid in pids():
        stat = stat_of(pid)
        if stat is not None and stat[1] == me:
            found.add(pid)
    return found


def files_of_session(under: Path, session: int | None = None) -> set[Path]:
    """The files under `under` that processes of `session` (this process's by default) hold
    open: the loop's own log when its output is redirected there (`> night.log`, `nohup`,
    `| tee night.log`: the shell's job shares the loop's session). A run of the target's code
    is in a session of its own and cannot join another, so none of its files are here."""
    session = os.getsid(0) if session is None else session
    found: set[Path] = set()
    for pid in pids():
        stat = stat_of(pid)
        if stat is None or stat[3] != session:
            continue
        with contextlib.suppress(OSError):
            for fd in os.scandir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    target = Path(os.readlink(fd.path))
                    if target.is_relative_to(under):
                        found.add(target)
    return found


def reap(pids: set[int]) -> None:
    """Collect the exit status of killed processes reparented to us: no zombies left behind."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def send_signal(pid: int, sig: int, group: bool = False) -> None:
    """`sig` to `pid` (its whole group with `group`); nothing when it is gone or not ours."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
