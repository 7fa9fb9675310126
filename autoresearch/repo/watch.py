"""Whether anything under some directories was written since a given look, cheaply: inotify.

The tamper guard compares trees with `git diff` after every run of a candidate, and the
baseline tree is checked for changes before it is measured again; on a tree of 20,000 files
each such walk costs tens of milliseconds. An inotify watch on every directory of a tree
answers "nothing was written" for the price of one non-blocking read, so a walk runs only when
something was. The watches last as long as the session (setting them up is itself a walk of
every directory): a directory created later is watched as its creation is read, one that
goes away takes its watch with it, and a lost event queue or a tree that went away is set up
again. Where inotify cannot watch a tree (another OS, the watch limit reached, a tree not made
yet) every look answers "maybe", and the callers walk as they would without it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import stat
import struct
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

__all__ = ["TreeWatch", "Watches", "WriteWatch", "tree_stamp"]

_IN_MODIFY, _IN_ATTRIB, _IN_MOVED_FROM, _IN_MOVED_TO = 0x2, 0x4, 0x40, 0x80
_IN_CREATE, _IN_DELETE, _IN_DELETE_SELF, _IN_MOVE_SELF = 0x100, 0x200, 0x400, 0x800
_IN_Q_OVERFLOW, _IN_IGNORED, _IN_ISDIR = 0x4000, 0x8000, 0x40000000
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
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then the name


class TreeWatch:
    """A count that grows whenever anything under the roots (their .git left out) is written:
    `generation()` now, compared with one taken earlier, says whether anything was since.
    `quiet(path)` names files whose writes do not count (the loop's own journal)."""

    def __init__(
        self,
        roots: Iterable[Path],
        quiet: Callable[[str], bool] | None = None,
        collect: bool = False,
    ):
        self.roots = [Path(r) for r in roots]
        self.quiet = quiet
        # Keep the paths written for `touched()`: only a watch asked for them does (a night's
        # writes, kept by every watch, would grow without bound).
        self.collect = collect
        self.fd: int | None = None
        self._dirs: dict[int, str] = {}
        self._roots_wd: set[int] = set()
        self._generation = 0
        # The paths written since `touched()` was last asked (an event's directory and name);
        # None when that is not known (events lost, the trees watched again).
        self._touched: set[str] | None = set()
        # Set when the trees cannot be watched for good (no inotify, too many directories, the
        # watch limit): then every look is a "maybe", without a walk to try again.
        self._gave_up = False
        self._libc: Any = None
        self._finalizer: weakref.finalize | None = None
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            if hasattr(libc, "inotify_init1"):  # none: every look is a "maybe"
                self._libc = libc
        self._watch_all()
        self._touched = set() if collect else None  # from here on

    @property
    def usable(self) -> bool:
        return self.fd is not None

    def generation(self) -> int:
        """The count as of now: it grew if anything was written since the last look."""
        if self.fd is None:
            if not self._gave_up:  # a tree made since, or a watch lost: try again
                self._watch_all()
            self._generation += 1  # what happened meanwhile is unknown
            return self._generation
        data = self._read()
        if data is None or not self._handle(data):
            self._watch_all()  # events were lost, or a tree went away
            self._generation += 1
        elif data and self._counted(data):
            self._generation += 1
        return self._generation

    def changed(self) -> bool:
        """Whether anything was written since the last call."""
        was = self._generation
        return self.generation() != was

    def touched(self) -> set[str] | None:
        """The paths written under the roots since the last call (a directory made there
        stands for all it holds); None when the watch cannot say."""
        self.generation()
        found, self._touched = self._touched, (set() if self.collect else None)
        return found if self.usable else None

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # closes the descriptor once, never a number reused since
        self._finalizer = None
        self.fd = None
        self._dirs.clear()

    def _watch_all(self) -> None:
        self.close()
        self._touched = None  # what happened while unwatched is unknown
        if self._libc is None:
            self._gave_up = True
            return
        if not all(root.is_dir() for root in self.roots):
            return  # not made yet: the next look tries again
        fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            self._gave_up = True
            return
        self.fd = fd
        self._finalizer = weakref.finalize(self, _close, fd)
        self._roots_wd = set()
        for root in self.roots:
            wd = self._add_tree(str(root))
            if wd is None:
                self.close()  # unwatched parts: every answer stays "maybe"
                self._gave_up = root.is_dir()  # too big to watch, unless it just went away
                return
            self._roots_wd.add(wd)
        self._read()  # what happened while the watches were being set up is not a change

    def _add_tree(self, top: str) -> int | None:
        """Watch `top` and every directory under it; the first's descriptor, None on failure."""
        first = None
        for directory, subdirs, _ in os.walk(top):
            subdirs[:] = [d for d in subdirs if d != ".git"]
            if len(self._dirs) >= MAX_WATCHES:
                return None
            wd = self._libc.inotify_add_watch(self.fd, os.fsencode(directory), MASK)
            if wd < 0:
                if directory == top or os.path.isdir(directory):
                    return None  # the watch limit: a part unwatched would go unseen
                continue  # gone already: its removal was an event of its own
            self._dirs[wd] = directory
            first = wd if first is None else first
        return first

    def _read(self) -> bytes | None:
        chunks: list[bytes] = []
        while True:
            try:
                data = os.read(self.fd, 65536)  # type: ignore[arg-type]
            except BlockingIOError:
                return b"".join(chunks)
            except OSError:
                return None
            if not data:
                return b"".join(chunks)
            chunks.append(data)

    def _handle(self, data: bytes) -> bool:
        """Watch the directories `data` says were made or moved in; False when the watches no
        longer cover the trees (a lost queue, a root gone)."""
        for wd, mask, name in _events(data):
            if mask & _IN_Q_OVERFLOW or (wd in self._roots_wd and mask & _IN_IGNORED):
                return False
            if mask & _IN_IGNORED:
                self._dirs.pop(wd, None)
            elif mask & _IN_ISDIR and mask & (_IN_CREATE | _IN_MOVED_TO) and name != ".git":
                parent = self._dirs.get(wd)
                added = parent is not None and self._add_tree(os.path.join(parent, name))
                if added is None and len(self._dirs) >= MAX_WATCHES:
                    return False
        return True

    def _counted(self, data: bytes) -> bool:
        """Whether any event of `data` is a write that counts."""
        counted = False
        for wd, mask, name in _events(data):
            if mask & _IN_IGNORED:
                continue
            if wd in self._roots_wd and mask & _IN_MOVE_SELF:
                continue  # the loop's own: a confined run's tree staged and back (staging.py)
            parent = self._dirs.get(wd)
            path = os.path.join(parent, name) if parent is not None else None
            if self._touched is not None:
                if path is None:
                    self._touched = None  # a write in a directory no longer known
                else:
                    self._touched.add(path.rstrip(os.sep))
            if self.quiet is None or path is None or not self.quiet(path):
                counted = True
        return counted


def _events(data: bytes):
    offset = 0
    while offset + _EVENT.size <= len(data):
        wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
        start = offset + _EVENT.size
        name = data[start : start + length].rstrip(b"\0")
        yield wd, mask, os.fsdecode(name)
        offset = start + length


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


class Watches:
    """A session's watches, one per tree, and what they vouch for: a value computed from a tree
    (its fingerprint, whether it is clean) is reused until something is written there."""

    def __init__(self, quiet: Callable[[str], bool] | None = None):
        self.quiet = quiet
        self._trees: dict[Path, TreeWatch] = {}
        self._memo: dict[tuple[Path, Any], tuple[int, Any]] = {}

    def of(self, tree: Path) -> TreeWatch:
        tree = Path(tree).resolve()
        if tree not in self._trees:
            self._trees[tree] = TreeWatch([tree], self.quiet)
        return self._trees[tree]

    def memo(self, tree: Path, key: Any, compute: Callable[[], Any]) -> Any:
        """`compute()`, or its value from before when nothing was written under `tree` since
        (`key` holds whatever else it depends on: the tree's HEAD, the files it reads)."""
        watch = self.of(tree)
        generation = watch.generation()  # taken first: a write while computing is seen next time
        slot = (Path(tree).resolve(), key)
        known = self._memo.get(slot)
        if known is not None and known[0] == generation and watch.usable:
            return known[1]
        value = compute()
        self._memo[slot] = (generation, value)
        return value

    def close(self) -> None:
        for watch in self._trees.values():
            watch.close()
        self._trees.clear()
        self._memo.clear()


class WriteWatch:
    """Whether anything under some trees (their .git left out) was written between `arm()` and
    `written()`: the inotify watch, or where there is none, a listing of every file with its
    size and write time compared."""

    def __init__(self, roots: Iterable[Path]):
        self.roots = [r for r in roots if r.exists()]
        self._watch = TreeWatch(self.roots)
        self._files: frozenset | None = None
        self._armed = 0

    def arm(self) -> None:
        if not self._watch.usable:
            self._files = all_files(self.roots)
        else:
            self._armed = self._watch.generation()

    def written(self) -> bool:
        if not self._watch.usable:
            return all_files(self.roots) != self._files
        return self._watch.generation() != self._armed


def all_files(roots: Iterable[Path]) -> frozenset:
    """Every file of the trees but their .git, with size and write time."""
    found = set()
    for root in roots:
        for directory, subdirs, files in os.walk(root):
            subdirs[:] = [d for d in subdirs if d != ".git"]
            for name in files:
                with contextlib.suppress(OSError):
                    st = os.lstat(os.path.join(directory, name))
                    found.add((directory, name, st.st_size, st.st_mtime_ns))
    return frozenset(found)


def tree_stamp(roots: Iterable[Path]) -> tuple | None:
    """Every file's and directory's identity, size and change times under `roots` (files or
    directories; missing ones left out): two equal stamps mean nothing there was written
    between them, for a write moves a change time that no one can set back. None where a link
    is among them (what it points at could change unseen) or something cannot be read."""
    paths = []
    for root in roots:
        paths.append(root)
        for dirpath, dirnames, filenames in os.walk(root):
            paths += [Path(dirpath, name) for name in (*dirnames, *filenames)]
    stamp = []
    for path in paths:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode):
            return None
        stamp.append((str(path), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(stamp)
