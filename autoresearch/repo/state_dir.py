"""A session's state on disk: its worktree, logs and patches, its lock, its in-flight marker.

By default all of it sits under the target repository's git directory (`.git/autoresearch/<name>`),
outside every working tree: no revert can delete it and the user's checkout shows nothing new.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic import flock_within, read_json
from ..config import Config
from ..errors import SessionBusyError, StateError
from ..files import common_git_dir
from .arms import arm_dirs

ARMS = ("worktree", "baseline")

__all__ = [
    "SessionLock",
    "SessionPaths",
    "read_inflight",
    "session_paths",
]


@dataclass(frozen=True)
class SessionPaths:
    root: Path

    @property
    def worktree(self) -> Path:
        """The candidate's tree (on the session branch), under a name that does not say so
        (repo/arms.py)."""
        return self._arms["worktree"]

    @property
    def baseline(self) -> Path:
        """The best's tree, under a name that does not say so either."""
        return self._arms["baseline"]

    @functools.cached_property
    def _arms(self) -> dict[str, Path]:
        """The trees' names, read (or drawn) once for these paths."""
        return arm_dirs(self.root, ARMS)

    @property
    def agent_scratch(self) -> Path:
        """Where a coding agent edits: a detached worktree at the best, reset per proposal.
        Never under a `.git` directory, where the default state directory is: Claude Code
        refuses every edit of a file there ("a sensitive file"). Then it lives in the user's
        cache (`$XDG_CACHE_HOME/autoresearch/scratch/<the state directory's hash>`)."""
        if ".git" not in self.root.parts:
            return self.root / "agent-scratch"
        cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        name = hashlib.sha256(str(self.root).encode("utf-8", "surrogateescape")).hexdigest()
        return Path(cache) / "autoresearch" / "scratch" / name[:16] / "agent-scratch"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def patches(self) -> Path:
        return self.root / "patches"

    @property
    def inflight(self) -> Path:
        return self.root / "inflight.json"

    @property
    def flights(self) -> Path:
        """On a cluster: one in-flight marker per experiment out on a bench host."""
        return self.root / "flights"

    @property
    def lock(self) -> Path:
        return self.root / "lock"

    @property
    def profiles(self) -> Path:
        return self.root / "profiles"

    def profile(self, commit: str) -> Path:
        """The folded stacks of `commit`'s profile (profiles.py), taken at its calibration."""
        return self.profiles / f"{commit}.folded"

    def log(self, experiment: str, name: str) -> Path:
        return self.logs / experiment / f"{name}.log"


# A loop killed with -9 while starting a process leaves a child between fork and exec that
# still holds the lock's descriptor until its exec closes it: on a busy machine, for a moment
# after the loop is gone. A lock whose recorded holder is dead is waited for this long.
DEAD_HOLDER_GRACE_S = 5.0


def _flock_soon(fd: int) -> bool:
    """Take the flock; if it is held but the pid written in it is dead (a leftover child of a
    killed loop letting go), try again for up to DEAD_HOLDER_GRACE_S."""
    return flock_within(fd, DEAD_HOLDER_GRACE_S, keep_waiting=lambda: not _holder_alive(fd))


def _holder_alive(fd: int) -> bool:
    """Whether the pid the lock file names (written by its holder, on this host) still runs;
    unknown counts as alive."""
    words = os.pread(fd, 200, 0).decode("utf-8", errors="replace").split()
    if len(words) < 4 or words[0] != "pid" or words[3] != socket.gethostname():
        return True
    try:
        os.kill(int(words[1]), 0)
    except ProcessLookupError:
        return False
    except (ValueError, PermissionError):  # not a pid, or another user's live process
        pass
    return True


class SessionLock:
    """An exclusive flock on the session: the kernel drops it when the holder dies, even by -9."""

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StateError(
                f"{self.path}: cannot create the session lock: {exc.strerror}"
            ) from None
        if not _flock_soon(fd):
            holder = os.pread(fd, 200, 0).decode("utf-8", errors="replace").strip()
            os.close(fd)
            raise SessionBusyError(
                f"session is already running ({holder or 'holder unknown'}); lock: {self.path}. "
                "Wait for it to finish or stop it (Ctrl-C / kill); a dead holder frees the lock"
            ) from None
        self._fd = fd
        # Who holds it, for the message a second loop prints; a full disk only loses that note.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}".encode(), 0)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None

    def is_held_elsewhere(self) -> bool:
        """True when another live process holds the lock (used by `status`)."""
        if not self.path.exists():
            return False
        fd = os.open(self.path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def __enter__(self) -> SessionLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def read_inflight(path: Path) -> dict[str, Any] | None:
    """The in-flight marker, or None."""
    return read_json(path)


def session_paths(config: Config) -> SessionPaths:
    """The session's state directory: configured, or under the target's git directory (found
    from its `.git` as git would; through git, for the error, where that finds none, or where
    the target is a git directory itself: a bare repository)."""
    root = config.state_path
    if root is None:
        repo = config.repo_path.resolve()
        common = None if _is_git_dir(repo) else common_git_dir(repo)
        if common is None:
            from .gitrepo import open_repo  # GitPython: its import only where it is needed

            common = open_repo(config.repo_path).common_dir
        root = common.resolve() / "autoresearch"
    return SessionPaths(root / config.session.name)


def _is_git_dir(path: Path) -> bool:
    return (path / "HEAD").is_file() and (path / "objects").is_dir()
