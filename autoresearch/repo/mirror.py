"""A copy of the journal beside the session's state, from which a journal a run emptied or
rewrote is put back (the seal, seal.py, decides when)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from pathlib import Path

__all__ = ["JournalMirror", "journal_tail"]

TAIL_BYTES = 4096


class JournalMirror:
    """A copy of the journal beside the session's state, brought up to date by appending what
    is new (the journal only grows): what a journal emptied or rewritten by a run is put back
    from. O(new bytes) per experiment."""

    def __init__(self, journal: Path, copy: Path):
        self.journal = journal
        self.copy = copy

    def sync(self) -> None:
        try:
            size = self.journal.stat().st_size
        except FileNotFoundError:
            return
        have = self.copy.stat().st_size if self.copy.exists() else -1
        if 0 <= have <= size and journal_tail(self.copy, have) == journal_tail(self.journal, have):
            if have < size:
                with self.journal.open("rb") as src, self.copy.open("ab") as dst:
                    src.seek(have)
                    shutil.copyfileobj(src, dst)
            return
        self.copy.parent.mkdir(parents=True, exist_ok=True)
        partial = self.copy.with_name(self.copy.name + ".partial")
        shutil.copyfile(self.journal, partial)
        partial.replace(self.copy)

    def same_prefix(self, size: int) -> bool:
        """Whether the journal's first `size` bytes are the copy's (False when either is
        shorter or cannot be read)."""
        try:
            with self.journal.open("rb") as journal, self.copy.open("rb") as copy:
                remaining = size
                while remaining > 0:
                    want = min(remaining, 1 << 20)
                    mine, kept = journal.read(want), copy.read(want)
                    if mine != kept or len(mine) < want:
                        return False
                    remaining -= want
        except OSError:
            return False
        return True

    def drop(self) -> None:
        for path in (self.copy, self.copy.with_name(self.copy.name + ".partial")):
            with contextlib.suppress(OSError):
                path.unlink()

    def restore(self, size: int) -> bool:
        """Put the journal back as it was at `size` bytes, from the mirror; False if the
        mirror cannot (it is shorter, or gone)."""
        if not self.copy.exists() or self.copy.stat().st_size < size:
            return False
        partial = self.journal.with_name(self.journal.name + ".restoring")
        with self.copy.open("rb") as src, partial.open("wb") as dst:
            remaining = size
            while remaining:
                chunk = src.read(min(remaining, 1 << 20))
                if not chunk:
                    return False
                dst.write(chunk)
                remaining -= len(chunk)
            dst.flush()
            os.fsync(dst.fileno())
        partial.replace(self.journal)
        return True


def journal_tail(path: Path, size: int) -> str:
    """The hash of the bytes of `path` just before offset `size`."""
    digest = hashlib.sha256()
    if size <= 0:
        return digest.hexdigest()
    try:
        with path.open("rb") as f:
            f.seek(max(0, size - TAIL_BYTES))
            digest.update(f.read(min(size, TAIL_BYTES)))
    except OSError:
        return "unreadable"
    return digest.hexdigest()
