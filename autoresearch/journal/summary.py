"""Where each session of a journal stands, kept up to date beside the review index, so that
`status` and `state` on a season's journal read a few kilobytes, not 100,000 rows.

`.experiments.jsonl.summary` folds the index's entries into per-session figures (counts by
status, the last kept experiment, the agents' spend) and keeps the few whole records status
shows (session lines, calibrations, confirmations). It notes how far into the index it has
folded and the bytes of the last entry it folded; when the index is rebuilt or does not line up,
the summary is folded again from the index's start. Like the index it is derived data: deleting
it costs one fold.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..errors import JournalError
from ..statuses import Status
from .index import HEAD_BYTES, INDEX_VERSION, catch_up, index_path, refresh_index
from .lines import duplicate_warning, gc_paused

__all__ = ["SessionDigest", "derived_paths", "session_digest", "summary_path"]

SUMMARY_VERSION = 2  # 2: where the entry folded last starts


@dataclass
class SessionDigest:
    """One session as status shows it."""

    sessions: list[dict[str, Any]] = field(default_factory=list)
    calibrations: list[dict[str, Any]] = field(default_factory=list)
    confirmations: list[dict[str, Any]] = field(default_factory=list)
    experiments: int = 0
    by_status: Counter = field(default_factory=Counter)
    last_kept: dict[str, Any] | None = None
    agent: Counter = field(default_factory=Counter)  # proposals, cost, unknown cost, outcomes
    warnings: list[str] = field(default_factory=list)

    def fold_experiment(self, row: dict[str, Any]) -> None:
        self.experiments += 1
        self.by_status[row["status"]] += 1
        if row["status"] == Status.KEEP:
            self.last_kept = {k: row[k] for k in ("id", "title", "commit")}
        if row.get("agent"):
            cost = row.get("agent_cost_usd")
            self.agent["proposals"] += 1
            self.agent["cost_usd"] += cost or 0.0
            self.agent["unknown_cost"] += cost is None
            self.agent[row["status"]] += 1

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "warnings"}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionDigest:
        digest = cls(**data)
        digest.by_status, digest.agent = Counter(digest.by_status), Counter(digest.agent)
        return digest


def summary_path(journal: Path) -> Path:
    return journal.with_name(f".{journal.name}.summary")


def derived_paths(journal: Path) -> list[Path]:
    """The files the journal's readers keep beside it: the loop's own, like the journal."""
    return [index_path(journal), summary_path(journal)]


def session_digest(journal: Path, session: str) -> SessionDigest:
    """The session's digest, the summary brought up to date first (journal -> index -> it)."""
    if not journal.exists():
        return SessionDigest()
    with gc_paused():
        written, torn = catch_up(journal)
        folded = _fold_index(journal) if written else None
        if folded is None:  # the index could not be written: fold the journal in memory
            folded, torn = _Summary.of_entries(journal, _entries_in_memory(journal)), None
    digest = folded.sessions.get(session) or SessionDigest()
    digest.warnings = folded.warnings + ([torn] if torn else [])
    return digest


@dataclass
class _Summary:
    sessions: dict[str, SessionDigest] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # Record key -> its first line, for the repeats; kept as stored until an entry is folded:
    # a status with nothing new to fold need not rebuild 100,000 keys.
    seen_stored: list[list] = field(default_factory=list)
    _seen: dict[tuple, int] | None = None
    last: str | None = None  # the hash of the index entry folded last

    @classmethod
    def of_entries(cls, journal: Path, entries) -> _Summary:
        summary = cls()
        for entry in entries:
            summary.fold(journal, entry)
        return summary

    def fold(self, journal: Path, entry: dict[str, Any]) -> None:
        """One index entry, as `refresh_index` reads it: a warning, a repeat, or a record."""
        kind = entry["t"]
        if kind == "warning":
            self.warnings.append(entry["w"])
            return
        record = entry["d"]
        if repeat := duplicate_warning(journal, self.seen(), kind, record, entry["l"]):
            self.warnings.append(repeat)
            return
        digest = self.sessions.setdefault(record["session"], SessionDigest())
        if kind == "experiment":
            digest.fold_experiment(record)
        elif kind == "session":
            digest.sessions.append(record)
        elif kind == "calibration":
            digest.calibrations.append(record)
        elif kind == "confirmation":
            digest.confirmations.append(record)

    def seen(self) -> dict[tuple, int]:
        if self._seen is None:
            self._seen = {tuple(item[:3]): item[3] for item in self.seen_stored}
        return self._seen

    def to_bytes(self, header: bytes, position: int, last_start: int, last: bytes) -> bytes:
        return orjson.dumps(
            {
                "summary_version": SUMMARY_VERSION,
                "index_header": header.decode(),
                "position": position,
                "last_start": last_start,
                "last": hashlib.sha256(last).hexdigest(),
                "sessions": {name: d.to_dict() for name, d in self.sessions.items()},
                "warnings": self.warnings,
                "seen": self.seen_stored
                if self._seen is None
                else [[*key, line] for key, line in self._seen.items()],
            }
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> tuple[_Summary, dict[str, Any]]:
        raw = orjson.loads(data)
        summary = cls(
            sessions={k: SessionDigest.from_dict(v) for k, v in raw["sessions"].items()},
            warnings=raw["warnings"],
            seen_stored=raw["seen"],
        )
        return summary, raw


def _fold_index(journal: Path) -> _Summary | None:
    """The summary, folded on from where it stopped to the index's end and written back; None
    when the index does not belong to the journal. Reads the index from the last entry it
    folded, not from its start: status on a season's journal reads kilobytes."""
    try:
        with open(journal, "rb") as handle:
            head = hashlib.sha256(handle.read(HEAD_BYTES)).hexdigest()
        with open(index_path(journal), "rb") as handle:
            header = handle.readline()
            summary, start, position = _stored(journal, header)
            handle.seek(start)
            tail = handle.read()
    except OSError as exc:
        raise JournalError(f"{journal}: cannot read: {exc.strerror}") from None
    try:
        meta = orjson.loads(header)
    except orjson.JSONDecodeError:
        return None
    if meta.get("index_version") != INDEX_VERSION or meta.get("head") != head:
        return None
    if start != position and hashlib.sha256(tail[: position - start - 1]).hexdigest() != (
        summary.last
    ):  # the entry it folded last is not there: the index was rewritten since
        return _fold_from(journal, header, _Summary(), len(header), _index_from(journal, header))
    return _fold_from(journal, header, summary, position, tail[position - start :])


def _index_from(journal: Path, header: bytes) -> bytes:
    """The index's entries, all of them."""
    try:
        with open(index_path(journal), "rb") as handle:
            handle.seek(len(header))
            return handle.read()
    except OSError as exc:
        raise JournalError(f"{journal}: cannot read: {exc.strerror}") from None


def _fold_from(
    journal: Path, header: bytes, summary: _Summary, position: int, data: bytes
) -> _Summary | None:
    """`summary` with the complete entries of `data` (the index from `position` on) folded
    in, written back when there were any."""
    end = data.rfind(b"\n") + 1
    if end == 0:
        return summary
    lines = data[:end].splitlines()
    try:
        for line in lines:
            summary.fold(journal, orjson.loads(line))
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    last_start = position + end - 1 - len(lines[-1])
    _write(summary_path(journal), summary.to_bytes(header, position + end, last_start, lines[-1]))
    return summary


def _stored(journal: Path, header: bytes) -> tuple[_Summary, int, int]:
    """The stored summary, where the last entry it folded starts and the index position after
    it, when it was folded from an index with this header; else an empty one from the start."""
    fresh = _Summary(), len(header), len(header)
    try:
        summary, raw = _Summary.from_bytes(summary_path(journal).read_bytes())
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return fresh
    position, start = raw.get("position"), raw.get("last_start")
    if (
        raw.get("summary_version") != SUMMARY_VERSION
        or raw.get("index_header", "").encode() != header
        or not isinstance(position, int)
        or not isinstance(start, int)
        or not len(header) <= start < position
    ):
        return fresh
    summary.last = raw.get("last")
    return summary, start, position


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
        ("experiment", contents.experiments),
    ):
        for item in items:
            yield {"t": kind, "d": item, "l": 0}


def _write(path: Path, data: bytes) -> None:
    # Derived data: a directory that cannot take it costs the next reader one fold.
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
