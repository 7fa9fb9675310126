"""Whether anything under some directories was written since the last look, cheaply: inotify.

The tamper guard compares trees with `git diff` after every run of a candidate; on a tree of
20,000 files that walk costs tens of milliseconds a run. An inotify watch on every directory
of the two worktrees answers "nothing was written" for the price of one non-blocking read, so
the walk runs only when something was. When inotify is not there (another OS, a watch limit
reached) the watch answers "maybe" every time and the guard walks, as it would without it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import weakref
from collections.abc import Iterable
from pathlib import Path

__all__ = ["TreeWatch", "WriteWatch"]

_IN_MODIFY, _IN_ATTRIB, _IN_MOVED_FROM, _IN_MOVED_TO = 0x2, 0x4, 0x40, 0x80
_IN_CREATE, _IN_DELETE, _IN_DELETE_SELF, _IN_MOVE_SELF = 0x100, 0x200, 0x400, 0x800
MASK = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
)
MAX_WATCHES = 20_000  # more directories than this: not worth it, walk instead


class TreeWatch:
    """`changed()` is False only when nothing under the roots was written since the last call."""

    def __init__(self, roots: list[Path]):
        self.fd: int | None = None
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            return
        if fd < 0:
            return
        weakref.finalize(self, _close, fd)
        count = 0
        for root in roots:
            for directory, subdirs, _ in os.walk(root):
                subdirs[:] = [d for d in subdirs if d != ".git"]
                count += 1
                if (
                    count > MAX_WATCHES
                    or libc.inotify_add_watch(fd, os.fsencode(directory), MASK) < 0
                ):
                    return  # unwatched parts: every answer stays "maybe"
        self.fd = fd
        self.changed()  # what happened while the watches were being set up is not a change

    def changed(self) -> bool:
        if self.fd is None:
            return True
        seen = False
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return seen
            except OSError:
                return True
            if not data:
                return seen
            seen = True


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


class WriteWatch:
    """Whether anything under some trees (their .git left out) was written between `arm()` and
    `written()`: the inotify watch, or where there is none, a listing of every file with its
    size and write time compared."""

    def __init__(self, roots: Iterable[Path]):
        self.roots = [r for r in roots if r.exists()]
        self._watch = TreeWatch(self.roots)
        self._files: frozenset | None = None

    def arm(self) -> None:
        if self._watch.fd is None:
            self._files = all_files(self.roots)
        else:
            self._watch.changed()

    def written(self) -> bool:
        if self._watch.fd is None:
            return all_files(self.roots) != self._files
        return self._watch.changed()


def all_files(roots: Iterable[Path]) -> frozenset:
    """Every file of the trees but their .git, with size and write time."""
    found = set()
    for root in roots:
        for directory, subdirs, files in os.walk(root):
            subdirs[:] = [d for d in subdirs if d != ".git"]
            for name in files:
                with contextlib.suppress(OSError):
                    stat = os.lstat(os.path.join(directory, name))
                    found.add((directory, name, stat.st_size, stat.st_mtime_ns))
    return frozenset(found)
