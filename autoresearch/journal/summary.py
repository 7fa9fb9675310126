"""Where each session of a journal stands, kept up to date beside the review index, so that
`status` and `state` on a season's journal read a few kilobytes, not 100,000 rows.

`.experiments.jsonl.summary` folds the index's entries (fold.py) into per-session figures
(counts by status, the last kept experiment, the agents' spend) and keeps the few whole records
status shows (session lines, calibrations, confirmations).

It is two lines. The first is what `status` reads. The second holds what grows with every
experiment: the keys that tell a repeated line (to fold new entries) and, per session, one
attempt row per experiment (attempts.py) that a resume reads instead of the journal; it is
parsed only by a fold with something new and by a resume.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from ..statuses import Status
from .attempts import Attempt
from .fold import SUMMARY, Fold, fold_path, folded
from .lines import duplicate_warning

__all__ = ["SessionDigest", "session_digest", "session_digests", "summary_path"]


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
    attempts: list[Attempt] | None = None  # in journal order, when asked for (a resume)

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
        # The warnings are the reader's; the attempts are stored apart (the second line).
        kept = [k for k in self.__dataclass_fields__ if k not in ("warnings", "attempts")]
        return {k: getattr(self, k) for k in kept}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionDigest:
        digest = cls(**data)
        digest.by_status, digest.agent = Counter(digest.by_status), Counter(digest.agent)
        return digest


def summary_path(journal: Path) -> Path:
    return fold_path(journal, Summary.NAME)


def session_digest(journal: Path, session: str, attempts: bool = False) -> SessionDigest:
    """The session's digest, the summary brought up to date first (journal -> index -> it);
    with `attempts`, its experiments' attempt rows too."""
    if not journal.exists():
        return SessionDigest(attempts=[] if attempts else None)
    summary, torn = folded(journal, Summary, needed=attempts)
    digest = summary.sessions.get(session) or SessionDigest()
    digest.warnings = summary.warnings + ([torn] if torn else [])
    if attempts:
        digest.attempts = list(map(Attempt._make, summary.attempts.get(session, [])))
    return digest


def session_digests(journal: Path) -> dict[str, SessionDigest]:
    """Every session's digest (without the attempts), by name."""
    if not journal.exists():
        return {}
    return folded(journal, Summary, needed=False)[0].sessions


@dataclass
class Summary(Fold):
    NAME = SUMMARY
    VERSION = 4  # 2: where the entry folded last starts; 3: attempts, in a second line; 4: fold.py

    sessions: dict[str, SessionDigest] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    journal_end: int = 0  # where in the journal the line of the entry folded last ends
    # The second line as stored, parsed only when it is needed (`ready`): a status with
    # nothing new to fold reads the first line alone.
    stored_rest: bytes | None = None
    # Record key -> its first line, for the repeats; kept as stored until an entry is folded:
    # a resume with nothing new to fold need not rebuild 100,000 keys.
    seen_stored: list[list] = field(default_factory=list)
    _seen: dict[tuple, int] | None = None
    attempts: dict[str, list[list]] = field(default_factory=dict)  # session -> attempt rows

    def fold(self, journal: Path, entry: dict[str, Any]) -> None:
        """One index entry: a warning, a repeat, or a record."""
        start, end = self.journal_end, entry.get("o")
        if end is not None:
            self.journal_end = end
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
            # An Attempt's fields, in order (attempts.py).
            row = [record["n"], record["id"], record["status"], record.get("proposer")]
            row += [record.get("retry_of"), record.get("patch") or ""]
            row += [start, end] if end is not None else [None, None]
            self.attempts.setdefault(record["session"], []).append(row)
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

    def first(self) -> dict[str, Any]:
        return {
            "journal_end": self.journal_end,
            "sessions": {name: d.to_dict() for name, d in self.sessions.items()},
            "warnings": self.warnings,
        }

    def rest(self) -> list[bytes]:
        seen = (
            self.seen_stored
            if self._seen is None
            else [[*key, line] for key, line in self._seen.items()]
        )
        return [orjson.dumps({"seen": seen, "attempts": self.attempts}) + b"\n"]

    @classmethod
    def stored(cls, first: dict[str, Any], rest: BinaryIO) -> Summary:
        summary = cls(
            sessions={k: SessionDigest.from_dict(v) for k, v in first["sessions"].items()},
            warnings=first["warnings"],
            journal_end=first["journal_end"],
            stored_rest=rest.read(),
        )
        if not isinstance(summary.journal_end, int) or not isinstance(summary.warnings, list):
            raise TypeError("garbled summary")
        return summary

    def ready(self, needed: bool) -> None:
        if not needed or self.stored_rest is None:
            return
        raw = orjson.loads(self.stored_rest)
        seen, attempts = raw["seen"], raw["attempts"]
        if not isinstance(seen, list) or not isinstance(attempts, dict):
            raise TypeError("garbled summary")
        self.seen_stored, self.attempts, self.stored_rest = seen, attempts, None
