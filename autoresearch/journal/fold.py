"""Files folded from the review index, kept beside it in the journal's derived directory and
brought up to date from where they stopped: the summary (status, a resume) and the review's
columns.

Each notes, on its first line, the index it was folded from (the index's header), how far into
it it has folded and the hash of the bytes of the entry it folded last. Bringing one up to date
reads the index from that entry on, checks the entry is still there, and folds what follows;
when the index was rebuilt or rewritten, or the file is garbled or of another version, it is
folded again from the index's start. Like the index they are derived data: deleting one costs
one fold, and a directory that cannot take it costs each reader a fold in memory.
"""

from __future__ import annotations

import array
import base64
import contextlib
import hashlib
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO, ClassVar, Self, TypeVar

import orjson

from ..errors import JournalError
from .index import HEAD_BYTES, INDEX_VERSION, catch_up, derived_dir, index_path, refresh_index
from .lines import gc_paused, record_key, repeat_warning

__all__ = [
    "COLUMNS",
    "SUMMARY",
    "Fold",
    "RecordKeys",
    "RowsFile",
    "derived_paths",
    "fold_path",
    "folded",
]

SUMMARY, COLUMNS = "summary", "columns"  # the folds: digest.py, columns.py

F = TypeVar("F", bound="Fold")
GARBLED = (orjson.JSONDecodeError, KeyError, TypeError, ValueError)  # what a garbled file raises


class Fold:
    """What a folded file holds; a subclass says what an entry adds and how it is stored."""

    NAME: ClassVar[str]  # the file is `.<journal name>.<NAME>`
    VERSION: ClassVar[int]

    keys: RecordKeys  # the records counted so far

    def fold(self, journal: Path, entry: dict[str, Any]) -> None:
        """One index entry, as the index stores it ({"t": kind, "d": record or row, ...}): a
        reader's warning, a repeat of a record counted before (warned of), or a record."""
        kind = entry["t"]
        if kind == "warning":
            self.warn(entry["w"])
        elif repeat := self.keys.repeat(journal, kind, entry["d"], entry["l"]):
            self.warn(repeat)
        else:
            self.add(kind, entry["d"], entry)

    def warn(self, warning: str) -> None:
        raise NotImplementedError

    def add(self, kind: str, record: dict[str, Any], entry: dict[str, Any]) -> None:
        """A record counted for the first time (an experiment's is its index row)."""
        raise NotImplementedError

    def first(self) -> dict[str, Any]:
        """The fields of the first line, besides where the fold stands."""
        raise NotImplementedError

    def rest(self) -> Iterable[bytes]:
        """The lines after the first, each ending in a newline (written one by one: a
        season's columns need not be joined in memory)."""
        raise NotImplementedError

    @classmethod
    def stored(cls, first: dict[str, Any], rest: BinaryIO) -> Self:
        """The fold as stored, the file read on from after its first line; raises one of
        GARBLED when it cannot be read."""
        raise NotImplementedError

    def ready(self, needed: bool, folding: bool = False) -> None:
        """Parse what `stored` kept as bytes, when the caller needs it all (`needed`) or new
        entries are about to be folded in (`folding`); raises one of GARBLED."""

    def worth_writing(self, folded: int) -> bool:
        """Whether `folded` new entries are worth writing the stored fold again for (else the
        next reader folds them from the index again); a fold from the start is always written."""
        return True

    def write_beside(self, path: Path) -> bool:
        """Before the fold's own file (`path`) is written: what it keeps in files of its own,
        written; False when that failed, and the fold's file must not claim it."""
        return True


class RecordKeys:
    """The records a fold has counted, to tell a repeated line (a copied line, a journal
    concatenated with itself): a 64-bit hash of each record's key, stored as one line of
    base64 and read only when something new is folded. Two distinct keys of a season's journal
    share a hash with odds of about 1 in 10^9, and then only cost a look at the index, which
    also finds the line a real repeat repeats (read once per fold, however many repeats)."""

    def __init__(self, stored: bytes = b""):
        self._stored: bytes | None = stored
        self._hashes: set[int] = set()
        self._first_lines: dict[tuple, int] | None = None

    def check(self) -> None:
        """Raises ValueError (binascii.Error) when the stored line is garbled."""
        self._load()

    def repeat(self, journal: Path, kind: str, record: dict, lineno: int) -> str | None:
        """The warning for a record counted before; else None, and it is counted."""
        key = record_key(kind, record)
        hashed = _key_hash(key)
        hashes = self._load()
        if hashed in hashes:
            if self._first_lines is None:
                self._first_lines = _first_lines(journal)
            first = self._first_lines.get(key)
            if first is not None and first != lineno:
                return repeat_warning(journal, key, lineno, first)
        hashes.add(hashed)
        return None

    def to_line(self) -> bytes:
        return base64.b64encode(array.array("q", self._load()).tobytes()) + b"\n"

    def _load(self) -> set[int]:
        if self._stored is not None:
            self._hashes |= set(array.array("q", base64.b64decode(self._stored.strip())))
            self._stored = None
        return self._hashes


def _key_hash(key: tuple) -> int:
    text = "\x1f".join(str(part) for part in key).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little", signed=True)


def _first_lines(journal: Path) -> dict[tuple, int]:
    """Each record key's first line in the journal, from the index."""
    found: dict[tuple, int] = {}
    try:
        with open(index_path(journal), "rb") as handle:
            handle.readline()
            for line in handle:
                entry = orjson.loads(line)
                if entry.get("t") not in (None, "warning"):
                    found.setdefault(record_key(entry["t"], entry["d"]), entry["l"])
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
        return found
    return found


_GENERATION_BYTES = 6
_ROWS = re.compile(rf"[a-z]+\.rows-[0-9a-f]{{{2 * _GENERATION_BYTES}}}")  # never another file


class RowsFile:
    """Rows a fold only ever adds to, in a file of their own beside the fold's (`<name>.rows-
    <generation>`): a fold appends what it adds and never writes the rows before it again (a
    season's are megabytes), and a reader reads them only when it needs them. The fold's own
    file names the generation and how many bytes and rows of it count: a writer cut short
    leaves bytes past them that the next one writes over. Two readers folding at once append
    the same rows at the same place (a fold is a function of the index entries); a fold from
    the start takes a new generation and removes the others, so that no reader appends to
    rows of another fold, and one that still reads them finds them gone and folds again."""

    def __init__(self, directory: Path | None = None, first: dict[str, Any] | None = None):
        first = first or {}
        self.directory = directory
        self.name: str | None = first.get("rows_file")
        self.size: int = first.get("rows_bytes", 0)
        self.count: int = first.get("rows", 0)
        self._data: bytes | None = None
        if not (self.name is None or (isinstance(self.name, str) and _ROWS.fullmatch(self.name))):
            raise TypeError("garbled rows file name")
        if not (isinstance(self.size, int) and isinstance(self.count, int)):
            raise TypeError("garbled rows count")

    def fields(self) -> dict[str, Any]:
        return {"rows_file": self.name, "rows_bytes": self.size, "rows": self.count}

    def load(self) -> bytes:
        """The rows that count, each line ending in a newline; ValueError when they are not
        there whole (the file gone, cut, or another fold's)."""
        if self._data is None:
            data = b""
            try:
                if self.name is not None and self.directory is not None:
                    with open(self.directory / self.name, "rb") as handle:
                        data = handle.read(self.size)
            except OSError as exc:
                raise ValueError(f"rows unreadable: {exc}") from None
            if (
                len(data) != self.size
                or data.count(b"\n") != self.count
                or (data and not data.endswith(b"\n"))
            ):
                raise ValueError("garbled rows")
            self._data = data
        return self._data

    def append(self, path: Path, data: bytes, lines: int) -> bool:
        """`lines` more rows (`data`) after those that count, beside the fold's file `path`;
        False when they could not be written."""
        if not data:
            return True
        fresh = self.name is None
        name = self.name or f"{path.name}.rows-{os.urandom(_GENERATION_BYTES).hex()}"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path.parent / name, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                written = 0
                while written < len(data):
                    written += os.pwrite(fd, data[written:], self.size + written)
            finally:
                os.close(fd)
        except OSError:
            return False
        if fresh:
            for other in path.parent.glob(f"{path.name}.rows-*"):
                if other.name != name:
                    with contextlib.suppress(OSError):
                        other.unlink()
        if fresh:
            # The whole of a new generation, kept: a reader that needs its rows has them even
            # when another reader's fold from the start removes this file before it reads.
            self._data = data
        elif self._data is not None:
            self._data += data
        self.directory, self.name = path.parent, name
        self.size, self.count = self.size + len(data), self.count + lines
        return True


def fold_path(journal: Path, name: str) -> Path:
    return derived_dir(journal) / name


def derived_paths(journal: Path) -> list[Path]:
    """Where the journal's readers keep what they derive from it (one directory): the loop's
    own, like the journal."""
    return [derived_dir(journal)]


def folded(journal: Path, cls: type[F], needed: bool = True) -> tuple[F, str | None]:
    """`cls`'s fold of the journal, brought up to date (journal -> index -> it), and the
    warning for a torn last line. `needed`: everything it holds is wanted, not only its first
    line."""
    with gc_paused():
        written, torn = catch_up(journal)
        fold = _from_index(journal, cls, needed) if written else None
        if fold is None:  # the index could not be written: fold the journal in memory
            fold, torn = cls(), None
            for entry in _entries_in_memory(journal):
                fold.fold(journal, entry)
    return fold, torn


def _from_index(journal: Path, cls: type[F], needed: bool) -> F | None:
    """None when the index does not belong to the journal."""
    try:
        with open(journal, "rb") as handle:
            head = hashlib.sha256(handle.read(HEAD_BYTES)).hexdigest()
        with open(index_path(journal), "rb") as handle:
            header = handle.readline()
            try:
                meta = orjson.loads(header)
            except orjson.JSONDecodeError:
                return None
            if meta.get("index_version") != INDEX_VERSION or meta.get("head") != head:
                return None
            return _fold_from_handle(journal, cls, needed, header, handle)
    except OSError as exc:
        raise JournalError(f"{journal}: cannot read: {exc.strerror}") from None


def _fold_from_handle(journal: Path, cls: type[F], needed: bool, header: bytes, handle) -> F | None:
    """The stored fold brought on with the index `handle` reads, entry by entry (a season's
    index is never held in memory whole)."""
    fold, start, position, last = _stored(journal, cls, header)
    handle.seek(start)
    # The entry it folded last must still be where it was: else the index was rewritten.
    folded_last = handle.read(position - start)
    lined_up = start == position or (
        folded_last.endswith(b"\n") and hashlib.sha256(folded_last[:-1]).hexdigest() == last
    )
    if lined_up:
        more = handle.read(1)
        handle.seek(position)
        try:
            fold.ready(needed, folding=bool(more))
        except GARBLED:
            lined_up = False
    if not lined_up:
        fold, position = cls(), len(header)
        handle.seek(position)
    return _fold_on(journal, header, fold, position, handle)


def _fold_on(journal: Path, header: bytes, fold: F, position: int, handle) -> F | None:
    """`fold` with the complete entries the index `handle` reads from `position` on folded
    in, written back when there were any (and, on a stored fold, enough: worth_writing)."""
    last, last_start, fresh, folded = None, position, position == len(header), 0
    try:
        for line in handle:
            if not line.endswith(b"\n"):
                break  # an entry being written: the next reader folds it
            fold.fold(journal, orjson.loads(line))
            last, last_start, position = line, position, position + len(line)
            folded += 1
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None  # the index, or what the fold kept, garbled: folded in memory instead
    if last is None or not (fresh or fold.worth_writing(folded)):
        return fold
    path = fold_path(journal, fold.NAME)
    if not fold.write_beside(path):
        return fold
    where = {
        "version": fold.VERSION,
        "index_header": header.decode(),
        "position": position,
        "last_start": last_start,
        "last": hashlib.sha256(last[:-1]).hexdigest(),
    }
    first = orjson.dumps({**where, **fold.first()}) + b"\n"
    _write(path, [first, *fold.rest()])
    return fold


def _stored(journal: Path, cls: type[F], header: bytes) -> tuple[F, int, int, str | None]:
    """The stored fold, where the last entry it folded starts, the index position after it and
    that entry's hash, when it was folded from an index with this header; else an empty one
    from the start."""
    fresh = cls(), len(header), len(header), None
    try:
        with open(fold_path(journal, cls.NAME), "rb") as handle:
            first = orjson.loads(handle.readline())
            position, start = first.get("position"), first.get("last_start")
            if (
                first.get("version") != cls.VERSION
                or first.get("index_header", "").encode() != header
                or not isinstance(position, int)
                or not isinstance(start, int)
                or not len(header) <= start < position
            ):
                return fresh
            fold = cls.stored(first, handle)
    except (OSError, *GARBLED):
        return fresh
    return fold, start, position, first.get("last")


def _entries_in_memory(journal: Path):
    """Index entries made from the journal alone, without writing anything (its warnings
    already name the repeats and a torn last line)."""
    contents = refresh_index(journal)
    for warning in contents.warnings:
        yield {"t": "warning", "w": warning}
    for kind, items in (
        ("session", contents.sessions),
        ("calibration", contents.calibrations),
        ("confirmation", contents.confirmations),
        ("import", contents.imports),
        ("experiment", contents.experiments),
    ):
        for item in items:
            yield {"t": kind, "d": item, "l": 0}


def _write(path: Path, lines: Iterable[bytes]) -> None:
    # Derived data: a directory that cannot take it costs the next reader one fold.
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as handle:
            for line in lines:
                handle.write(line)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
