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

    def restore(self, spare: Collection[str] = ()) -> list[str]:
        """Remove what is new or changed since the state was taken, but for the paths in
        `spare` (absolute); the paths removed, a new directory as one."""
        removed: list[str] = []
        for root in self.roots:
            skip: set[str] = set()
            for path, st in _walk(root, skip):
                if path in spare:
                    continue
                known = self.entries.get(path, "new")
                is_dir = stat.S_ISDIR(st.st_mode)
                if known == "new" or (not is_dir and known != _stamp(st)) or (is_dir and known):
                    if is_dir:
                        if any(s.startswith(path + os.sep) for s in spare):
                            continue  # a spared file inside: look at each of its entries
                        shutil.rmtree(path, ignore_errors=True)
                        skip.add(path)
                    else:
                        _unlink(path)
                    removed.append(path)
        return removed


def _stamp(st: os.stat_result) -> Stamp:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _walk(root: Path, skip: set[str] | None = None) -> Iterator[tuple[str, os.stat_result]]:
    """(path, lstat) of every entry under `root` (not following links), its `.git` left out;
    a directory before its entries, those in `skip` not entered."""
    stack = [str(root)]
    while stack:
        directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:  # gone, or not a directory: nothing under it
            continue
        for entry in entries:
            if directory == str(root) and entry.name == ".git":
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
