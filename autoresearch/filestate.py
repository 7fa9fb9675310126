"""What a directory held at one moment, and putting it back: every run from the same state.

A bench run can leave something the next run reads: a memo in an untracked file of its tree
or in its arm's cache, a build output dated 2100 that the next incremental build takes for
fresh. Nothing a run writes may reach the next one, so the state is taken when the arm is
ready (after its build) and put back after each run: what is new is removed, and so is what
changed, which cannot be told from what the run left there otherwise. A file is the same
when its inode, size, modification and change times are: the change time cannot be set back
by anything the run may do, so a memo written and re-dated is still seen.

Putting back only removes; a file the run deleted stays deleted (the next run, or the guard
for a tracked file, sees that). `spare` names the files a caller restores otherwise (a
worktree's tracked files, which `git reset` rewrote on purpose).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FileState", "redate"]

Stamp = tuple[int, int, int, int]  # inode, size, mtime_ns, ctime_ns


@dataclass(frozen=True)
class FileState:
    """The entries under `roots` (each root's own `.git` left out) and their stamps."""

    roots: tuple[Path, ...]
    entries: dict[str, Stamp | None]  # path -> stamp; None for a directory

    @classmethod
    def take(cls, roots: Collection[Path]) -> FileState:
        entries: dict[str, Stamp | None] = {}
        for root in roots:
            for path, st in _walk(Path(root)):
                entries[path] = None if stat.S_ISDIR(st.st_mode) else _stamp(st)
        return cls(tuple(Path(r) for r in roots), entries)

    def save(self, path: Path) -> None:
        """Written whole or not at all (a copy, then a rename): a state another process of
        the session puts back (`load`)."""
        data = {"roots": [str(r) for r in self.roots], "entries": self.entries}
        partial = path.with_name(path.name + ".partial")
        partial.write_text(json.dumps(data))
        os.replace(partial, path)

    @classmethod
    def load(cls, path: Path) -> FileState | None:
        """The state `save` wrote there; None when there is none."""
        try:
            data = json.loads(path.read_text())
            entries = {
                str(k): (None if v is None else (int(v[0]), int(v[1]), int(v[2]), int(v[3])))
                for k, v in data["entries"].items()
            }
            return cls(tuple(Path(r) for r in data["roots"]), entries)
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
            return None

    def updated(self, touched: Collection[str]) -> FileState:
        """This state brought up to the tree's now, knowing that only the paths in `touched`
        were written since (repo/watch.py): each looked at again, a directory made since
        walked whole, what is gone dropped with what it held. The same as a `take` now."""
        entries = dict(self.entries)
        for path in sorted(touched, key=len):
            if not self._inside(path):
                continue
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                st = None
            if st is None or stat.S_ISDIR(st.st_mode):
                under = path + os.sep
                for gone in [p for p in entries if p.startswith(under)]:
                    del entries[gone]
            if st is None:
                entries.pop(path, None)
            elif stat.S_ISDIR(st.st_mode):
                entries[path] = None
                for inner, inner_st in _walk(Path(path), own_git=True):
                    entries[inner] = None if stat.S_ISDIR(inner_st.st_mode) else _stamp(inner_st)
            else:
                entries[path] = _stamp(st)
        return FileState(self.roots, entries)

    def restore(
        self, spare: Collection[str] = (), touched: Collection[str] | None = None
    ) -> list[str]:
        """Remove what is new or changed since the state was taken, but for the paths in
        `spare` (absolute); the paths removed, a new directory as one. `touched`: the only
        paths written since (repo/watch.py; a new directory stands for what it holds), looked
        at instead of every entry."""
        removed: list[str] = []
        if touched is not None:
            for path in sorted(touched, key=len):  # a directory before what it holds
                if self._inside(path) and not any(path.startswith(r + os.sep) for r in removed):
                    with contextlib.suppress(FileNotFoundError):
                        self._put_back(path, os.lstat(path), spare, removed, set())
            return removed
        for root in self.roots:
            skip: set[str] = set()
            for path, st in _walk(root, skip):
                self._put_back(path, st, spare, removed, skip)
        return removed

    def _put_back(
        self,
        path: str,
        st: os.stat_result,
        spare: Collection[str],
        removed: list[str],
        skip: set[str],
    ) -> None:
        """Remove `path` when it is new or changed (a directory whole, then `skip`ped)."""
        if path in spare:
            return
        known = self.entries.get(path, "new")
        is_dir = stat.S_ISDIR(st.st_mode)
        if known == "new" or (not is_dir and known != _stamp(st)) or (is_dir and known):
            if is_dir:
                if any(s.startswith(path + os.sep) for s in spare):
                    return  # a spared file inside: look at each of its entries
                shutil.rmtree(path, ignore_errors=True)
                skip.add(path)
            else:
                _unlink(path)
            removed.append(path)

    def _inside(self, path: str) -> bool:
        """Under one of the roots, not the root itself nor its `.git`."""
        for root in map(str, self.roots):
            if path.startswith(root + os.sep):
                return not (path == f"{root}/.git" or path.startswith(f"{root}/.git/"))
        return False


def _stamp(st: os.stat_result) -> Stamp:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _walk(
    root: Path, skip: set[str] | None = None, own_git: bool = False
) -> Iterator[tuple[str, os.stat_result]]:
    """(path, lstat) of every entry under `root` (not following links), its `.git` left out
    unless `own_git` (a directory inside a tree); a directory before its entries, those in
    `skip` not entered."""
    stack = [str(root)]
    while stack:
        directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:  # gone, or not a directory: nothing under it
            continue
        for entry in entries:
            if directory == str(root) and entry.name == ".git" and not own_git:
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            yield entry.path, st
            if stat.S_ISDIR(st.st_mode) and (skip is None or entry.path not in skip):
                stack.append(entry.path)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except PermissionError:  # a read-only directory the run made: writable, then removed
        os.chmod(os.path.dirname(path), 0o700)
        os.unlink(path)


def redate(root: Path) -> None:
    """Date every file under `root` now, before its state is taken: a toolchain that marks
    what it reads by re-dating it (Go's build cache re-dates an entry read an hour or more
    after it was dated) would otherwise change files each run, and each would be removed
    as the run's write and made again by the next run. Dated now, an entry is not re-dated
    for the next hour."""
    for path, st in _walk(Path(root)):
        if stat.S_ISREG(st.st_mode):
            with contextlib.suppress(OSError):  # not ours to re-date: left as it is
                os.utime(path)
