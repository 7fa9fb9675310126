"""The JSONL journal: durable append, tolerant read.

Append-only, one JSON object a line, flushed and fsynced so that a record the loop has written
survives a power cut. Reading never dies on a torn or damaged line: it is reported and skipped.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..atomic import json_safe
from ..errors import JournalError
from .attempts import Attempt, Span
from .digest import SessionDigest, session_digest
from .index import derived_dir, index_payload, update_index
from .lines import BOM, duplicate_warning, gc_paused, parse_lines, torn_line_warning
from .records import (
    CalibrationRecord,
    ConfirmationRecord,
    ExperimentRecord,
    ImportRecord,
    SessionRecord,
    _Record,
)

__all__ = [
    "Journal",
    "JournalContents",
    "append_record",
    "read_journal",
    "write_all",
]


@dataclass
class JournalContents:
    """Everything readable in a journal, plus what had to be skipped and why."""

    sessions: list[SessionRecord] = field(default_factory=list)
    calibrations: list[CalibrationRecord] = field(default_factory=list)
    experiments: list[ExperimentRecord] = field(default_factory=list)
    confirmations: list[ConfirmationRecord] = field(default_factory=list)
    imports: list[ImportRecord] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def for_session(self, name: str) -> JournalContents:
        return JournalContents(
            sessions=[r for r in self.sessions if r.session == name],
            calibrations=[r for r in self.calibrations if r.session == name],
            experiments=[r for r in self.experiments if r.session == name],
            confirmations=[r for r in self.confirmations if r.session == name],
            imports=[r for r in self.imports if r.session == name],
            warnings=list(self.warnings),
        )


def append_record(path: Path, record: _Record) -> Span:
    """Append one record (`append_dict`); returns where its line lies."""
    return append_dict(path, record.kind, json_safe(record.to_dict()))


def append_dict(path: Path, kind: str, data: dict[str, Any]) -> Span:
    """Append one record of `kind`, as its JSON-safe dict `data`, durably, whole or not at
    all; returns where its line lies. A torn last line left by a crash is closed off first.
    When the disk is full the partial line is taken back and a JournalError says so: the
    journal stays as it was, and the caller keeps what it could not write."""
    line = json.dumps(data, ensure_ascii=False, allow_nan=False)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError as exc:
        raise JournalError(f"{path}: cannot open the journal: {exc.strerror}") from None
    try:
        size = os.fstat(fd).st_size
        torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
        payload = line.encode("utf-8") + b"\n"
        write_all(fd, (b"\n" if torn else b"") + payload)
        os.fsync(fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
        raise JournalError(
            f"{path}: cannot append the {kind} record ({exc.strerror}); the journal is "
            "unchanged: free space (or fix the file system) and run again to resume"
        ) from None
    finally:
        os.close(fd)
    start = size + torn
    return Span(start, start + len(payload))


def write_all(fd: int, data: bytes) -> None:
    """os.write until all of `data` is written: a short write is not success."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[written:]


def read_journal(path: Path) -> JournalContents:
    """Read every record; a damaged line becomes a warning naming its line number."""
    with gc_paused():
        return _read_journal(path)


def _read_journal(path: Path) -> JournalContents:
    contents = JournalContents()
    if not path.exists():
        return contents
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise JournalError(f"{path}: cannot read: {exc.strerror}") from None
    buckets: dict[str, list[Any]] = {
        "session": contents.sessions,
        "calibration": contents.calibrations,
        "experiment": contents.experiments,
        "confirmation": contents.confirmations,
        "import": contents.imports,
    }
    items, consumed, lineno = parse_lines(path, data, 0, 1)
    seen: dict[tuple[object, ...], int] = {}
    for line, _, item in items:
        if isinstance(item, str):
            contents.warnings.append(item)
            continue
        duplicate = duplicate_warning(path, seen, item.kind, vars(item), line)
        if duplicate:
            contents.warnings.append(duplicate)
        else:
            buckets[item.kind].append(item)
    torn = torn_line_warning(path, data[consumed:], lineno)
    if torn:
        contents.warnings.append(torn)
    return contents


class Journal:
    """A journal file bound to one session: appends and the session's view of history."""

    def __init__(self, path: Path, session: str):
        self.path = path
        self.session = session
        # The last read and the file state it saw: opening a session asks for the history a
        # few times in a row, and a 100,000-record journal takes seconds to parse each time.
        self._cached: tuple[tuple[int, int, int], JournalContents] | None = None
        self._digest: tuple[tuple[int, int, int], SessionDigest] | None = None
        self._standing: SessionDigest | None = None

    def owns(self, path: str) -> bool:
        """Whether `path` is this journal or what is derived from it (`.<name>.d/index`, ...):
        the loop's own writes in your checkout, not a run's."""
        folder, _, name = path.rpartition(os.sep)
        own = self.path.name
        if folder == str(derived_dir(self.path)):
            return True
        return folder == str(self.path.parent) and (name == own or name.startswith(f".{own}."))

    def append(self, record: _Record) -> Span:
        """Append `record`; where its line lies."""
        data = json_safe(record.to_dict())
        span = append_dict(self.path, record.kind, data)
        update_index(self.path)
        if self._standing is not None and record.session == self.session:
            # As the index will read it back from the line.
            self._standing.fold(record.kind, index_payload(record.kind, data))
        return span

    def standing(self) -> SessionDigest:
        """Where the session stands: read from the summary the first time, then folded on
        with each record `append` writes, by the reducer the summary folds the journal with."""
        if self._standing is None:
            self._standing = self.digest().standing()
        return self._standing

    def digest(self) -> SessionDigest:
        """The session as a resume needs it (its figures, whole session lines and calibrations,
        an attempt row per experiment), from the summary beside the index, not the journal;
        read again only when the file changed."""
        state = self._state()
        if state is None or self._digest is None or self._digest[0] != state:
            digest = session_digest(self.path, self.session, attempts=True)
            self._digest = (state, digest) if state is not None else None
            return digest
        return self._digest[1]

    def record(self, attempt: Attempt) -> ExperimentRecord | None:
        """The whole record of `attempt`, read from its line (checked as any read checks it);
        from a whole read when the line is not where the summary said (a rewritten journal)."""
        if attempt.start is not None and attempt.end is not None:
            try:
                with open(self.path, "rb") as handle:
                    handle.seek(attempt.start)
                    data = handle.read(attempt.end - attempt.start)
            except OSError as exc:
                raise JournalError(f"{self.path}: cannot read: {exc.strerror}") from None
            items, _, _ = parse_lines(self.path, data.removeprefix(BOM), attempt.start, 0)
            found = [item for _, _, item in items if isinstance(item, ExperimentRecord)]
            if len(found) == 1 and found[0].id == attempt.id and found[0].n == attempt.n:
                return found[0]
        return next((r for r in self.read().experiments if r.id == attempt.id), None)

    def _state(self) -> tuple[int, int, int] | None:
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return stat.st_ino, stat.st_size, stat.st_mtime_ns

    def read(self) -> JournalContents:
        """The session's records; parsed again only when the file changed since the last read
        (any append changes its size)."""
        state = self._state()
        if state is None or self._cached is None or self._cached[0] != state:
            contents = read_journal(self.path).for_session(self.session)
            self._cached = (state, contents) if state is not None else None
        else:
            contents = self._cached[1]
        return contents.for_session(self.session)  # fresh lists: callers may change theirs
