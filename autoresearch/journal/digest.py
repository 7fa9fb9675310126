"""Where each session of a journal stands, kept up to date beside the review index, so that
`status` and `state` on a season's journal read a few kilobytes, not 100,000 rows.

The `summary` of the journal's derived directory (index.py's `derived_dir`) folds the index's
entries (fold.py) into per-session figures (counts by status, the last kept experiment, the
agents' spend) and keeps the few whole records status shows (session lines, calibrations,
confirmations).

Its first line is what `status` reads. What grows with every experiment follows, stored so
that folding a few new entries parses none of it: on the second line a 64-bit hash of each
record's key (what tells a repeated line; the line it repeats is looked up in the index only
when one turns up); in a file of its own (fold.RowsFile), one line per experiment, its attempt
row (attempts.py), which a resume reads instead of the journal and a fold only appends to.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from ..statuses import STATUSES, Status
from .attempts import Attempt
from .fold import SUMMARY, Fold, RecordKeys, RowsFile, fold_path, folded
from .index import UNNAMED_HOST

__all__ = [
    "SessionDigest",
    "counts_said",
    "hosts_lost_said",
    "in_status_order",
    "lost_with_calibration",
    "session_digest",
    "session_digests",
    "summary_path",
]


@dataclass
class SessionDigest:
    """Where one session stands. `fold` is the one reducer of a session's state: the summary
    folds the journal with it (what `status` and a resume read), and the session's journal
    folds each record it appends into its own copy (store.py, `Journal.standing`, which the
    night's `Tally` counts from), so that what the night counts and what the journal says
    cannot drift apart."""

    sessions: list[dict[str, Any]] = field(default_factory=list)
    calibrations: list[dict[str, Any]] = field(default_factory=list)
    confirmations: list[dict[str, Any]] = field(default_factory=list)
    experiments: int = 0
    by_status: Counter = field(default_factory=Counter)
    last_kept: dict[str, Any] | None = None
    agent: Counter = field(default_factory=Counter)  # proposals, cost, unknown cost, outcomes
    # The statuses of attempts a later attempt of the same hypothesis measured again: the
    # summary's (which finds each in its attempt rows); a night's own copy does not count them.
    measured_again: Counter = field(default_factory=Counter)
    # The bench hosts lost while they measured: host -> the experiments' numbers (0: a
    # calibration).
    hosts_lost: dict[str, list[int]] = field(default_factory=dict)
    no_keep_streak: int = 0  # experiments since the last keep (all of them before the first)
    last_n: int = 0  # the highest experiment number recorded
    warnings: list[str] = field(default_factory=list)
    attempts: list[Attempt] | None = None  # in journal order, when asked for (a resume)

    def fold(self, kind: str, record: dict[str, Any]) -> None:
        """Fold in one of the session's records, as the index has it (index.py,
        `index_payload`)."""
        if kind == "experiment":
            self.fold_experiment(record)
        elif kind == "session":
            self.sessions.append(record)
        elif kind == "calibration":
            self.calibrations.append(record)
            for host in lost_with_calibration(record):  # said as a calibration: number 0
                self.hosts_lost.setdefault(host, []).append(0)
        elif kind == "confirmation":
            self.confirmations.append(record)

    def fold_experiment(self, row: dict[str, Any]) -> None:
        self.experiments += 1
        self.by_status[row["status"]] += 1
        self.last_n = max(self.last_n, row["n"])
        self.no_keep_streak = 0 if row["status"] == Status.KEEP else self.no_keep_streak + 1
        if row["status"] == Status.KEEP:
            self.last_kept = {k: row[k] for k in ("id", "title", "commit")}
        for host in row.get("hosts_lost") or []:
            self.hosts_lost.setdefault(host, []).append(row["n"])
        if row.get("agent"):
            cost = row.get("agent_cost_usd")
            self.agent["proposals"] += 1
            # typeshed's Counter holds ints only; a Counter sums the dollars as well
            self.agent["cost_usd"] += cost or 0.0  # type: ignore[assignment]
            self.agent["unknown_cost"] += cost is None
            self.agent[row["status"]] += 1

    def outcomes(self) -> tuple[dict[str, int], int]:
        """The experiments by status with a hypothesis measured again counted once, by its
        last outcome, and how many earlier attempts that leaves apart: what the review says
        (report/summary.py counts the same from the journal's rows)."""
        last = self.by_status - self.measured_again
        return in_status_order(last), sum(self.measured_again.values())

    def to_dict(self) -> dict[str, Any]:
        # The warnings are the reader's; the attempts are stored apart (the second line).
        kept = [k for k in self.__dataclass_fields__ if k not in ("warnings", "attempts")]
        return {k: getattr(self, k) for k in kept}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionDigest:
        digest = cls(**data)
        digest.by_status, digest.agent = Counter(digest.by_status), Counter(digest.agent)
        digest.measured_again = Counter(digest.measured_again)
        return digest

    def standing(self) -> SessionDigest:
        """A copy of the figures alone (no attempt rows, no warnings), to fold on."""
        return copy.deepcopy(SessionDigest.from_dict(self.to_dict()))


def in_status_order(counts: Mapping[str, int]) -> dict[str, int]:
    """Counts by status, the loop's statuses first in their order, any other after; none that
    is zero."""
    ordered = {s: int(counts[s]) for s in STATUSES if counts.get(s)}
    return ordered | {s: int(n) for s, n in counts.items() if s not in ordered and n}


def lost_with_calibration(record: Mapping[str, Any]) -> list[str]:
    """The bench hosts that died while they measured a calibration (its record's `lost`)."""
    lost = record.get("lost") or []
    return [entry.get("host") or UNNAMED_HOST for entry in lost if isinstance(entry, dict)]


def hosts_lost_said(lost: Mapping[str, list[int]]) -> str:
    """The bench hosts that died while they measured experiments, and which (`status`, the
    report and the PR say it in these words; each record says what became of it)."""
    said = [
        f"{host} (while measuring "
        f"{', '.join(f'#{n}' if n else 'a calibration' for n in sorted(set(numbers)))})"
        for host, numbers in lost.items()
    ]
    return "; ".join(said)


def counts_said(by_status: dict[str, int], retried: int) -> str:
    """The experiments by outcome, in words that add up to their total: a hypothesis measured
    again counts once, by its last outcome, and its earlier attempts are said apart."""
    said = ", ".join(f"{status} {n}" for status, n in by_status.items())
    if retried:
        said += f"; {retried} earlier attempt{'s' if retried != 1 else ''} measured again"
    return said


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
        digest.attempts = summary.attempts(session)
    return digest


def session_digests(journal: Path) -> dict[str, SessionDigest]:
    """Every session's digest (without the attempts), by name."""
    if not journal.exists():
        return {}
    return folded(journal, Summary, needed=False)[0].sessions


@dataclass
class Summary(Fold):
    NAME = SUMMARY
    VERSION = 11  # 3: attempts, in a second line; 4: fold.py; 5: hashed keys, a line per attempt;
    # 6: the attempt's rule; 7: the streak without a keep and the last number; 8: the statuses
    # of the attempts measured again; 9: the attempt rows in a file of their own, appended to;
    # 10: the bench hosts lost; 11: and those lost with a calibration

    sessions: dict[str, SessionDigest] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    journal_end: int = 0  # where in the journal the line of the entry folded last ends
    # As stored, parsed only when needed (`ready`): a status with nothing new to fold reads
    # the first line alone, and a fold parses the keys but never reads the stored attempt
    # rows (unless a retry's earlier attempt is looked up), which it only appends to.
    keys: RecordKeys = field(default_factory=RecordKeys)
    rows: RowsFile = field(default_factory=RowsFile)
    new_rows: list[list] = field(default_factory=list)  # attempt rows folded since
    _start: int = 0  # where the line of the entry being folded starts in the journal

    def fold(self, journal: Path, entry: dict[str, Any]) -> None:
        # Where each entry's journal line starts: where the one before it ended.
        self._start, end = self.journal_end, entry.get("o")
        if end is not None:
            self.journal_end = end
        super().fold(journal, entry)

    def warn(self, warning: str) -> None:
        self.warnings.append(warning)

    def add(self, kind: str, record: dict[str, Any], entry: dict[str, Any]) -> None:
        digest = self.sessions.setdefault(record["session"], SessionDigest())
        digest.fold(kind, record)
        if kind == "experiment":
            earlier = record.get("retry_of")
            earlier = earlier and self._status_of(record["session"], earlier)
            if earlier:
                digest.measured_again[earlier] += 1
            # The session, then an Attempt's fields in order (attempts.py).
            row = [record["session"], record["n"], record["id"], record["status"]]
            row += [record.get("proposer"), record.get("retry_of"), record.get("patch") or ""]
            end = entry.get("o")
            row += [self._start, end] if end is not None else [None, None]
            row.append(record.get("rule") or record["status"])
            self.new_rows.append(row)

    def _status_of(self, session: str, id_: str) -> str | None:
        """The status of the session's attempt `id_`, from its attempt row: a retry is rare,
        so the stored rows are searched as bytes for the id and only the lines that hold it
        parsed (a later attempt's `retry_of` holds it too), not all of them."""
        for row in reversed(self.new_rows):
            if row[0] == session and row[2] == id_:
                return row[3]
        needle, stored = orjson.dumps(id_), self.rows.load()
        start = stored.find(needle)
        while start >= 0:
            line_start = stored.rfind(b"\n", 0, start) + 1
            line_end = stored.find(b"\n", start)
            line_end = len(stored) if line_end < 0 else line_end
            row = orjson.loads(stored[line_start:line_end])
            if row[0] == session and row[2] == id_:
                return row[3]
            start = stored.find(needle, line_end)
        return None

    def attempts(self, session: str) -> list[Attempt]:
        """The session's attempts, in journal order."""
        rows = [orjson.loads(line) for line in self.rows.load().splitlines()] + self.new_rows
        return [Attempt._make(row[1:]) for row in rows if row[0] == session]

    def first(self) -> dict[str, Any]:
        return {
            "journal_end": self.journal_end,
            "sessions": {name: d.to_dict() for name, d in self.sessions.items()},
            "warnings": self.warnings,
            **self.rows.fields(),
        }

    def rest(self) -> Iterator[bytes]:
        yield self.keys.to_line()

    def write_beside(self, path: Path) -> bool:
        """The attempt rows folded since, appended to the rows file."""
        data = b"".join(orjson.dumps(row) + b"\n" for row in self.new_rows)
        if not self.rows.append(path, data, len(self.new_rows)):
            return False
        self.new_rows = []
        return True

    @classmethod
    def stored(cls, first: dict[str, Any], rest: BinaryIO) -> Summary:
        summary = cls(
            sessions={k: SessionDigest.from_dict(v) for k, v in first["sessions"].items()},
            warnings=first["warnings"],
            journal_end=first["journal_end"],
            keys=RecordKeys(rest.readline()),
            rows=RowsFile(Path(rest.name).parent, first),
        )
        if not isinstance(summary.journal_end, int) or not isinstance(summary.warnings, list):
            raise TypeError("garbled summary")
        return summary

    def ready(self, needed: bool, folding: bool = False) -> None:
        """The keys readable, to fold; every attempt row there, whole (a count of lines, not
        a parse), for a caller who needs them."""
        if needed:
            self.rows.load()
        if needed or folding:
            self.keys.check()
