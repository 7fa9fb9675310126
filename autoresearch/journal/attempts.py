"""An experiment as a resuming session needs it: a few fields and where its record lies.

Opening a session asks of its history which patches were tried, how often and how each try
ended, the experiment numbers used, the streak without a keep: never the runs' samples. The
summary beside the review index keeps one row of this per experiment (digest.py), so a resume
on a season's journal reads those rows, not 100,000 records; the whole record is read back by
its byte range when something needs it (the second look, a proposer reading the history).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from ..statuses import Status

if TYPE_CHECKING:
    from .records import ExperimentRecord

__all__ = ["Attempt", "Span", "attempts_by_patch", "may_run_again", "tried_patches"]


class Span(NamedTuple):
    """Where a record's line lies in the journal: from `start` to `end`, its newline included."""

    start: int
    end: int


class Attempt(NamedTuple):
    """The summary stores these fields as a row, in this order (`Attempt._make(row)`)."""

    n: int
    id: str
    status: str
    proposer: str | None
    retry_of: str | None
    patch_sha256: str
    start: int | None  # the byte range of its line; None when the summary was folded without
    end: int | None  # the index's offsets (an index that could not be written)
    rule: str | None = None  # the part of the decision rule that decided (the status if none)

    @classmethod
    def of(cls, record: ExperimentRecord, span: Span | None) -> Attempt:
        start, end = span if span is not None else (None, None)
        return cls(
            record.n,
            record.id,
            str(record.status),
            record.proposer,
            record.retry_of,
            record.patch_sha256,
            start,
            end,
            record.rule or str(record.status),
        )


def attempts_by_patch(experiments: list[Attempt]) -> dict[str, list[Attempt]]:
    """The attempts of each patch (by its sha256), in journal order."""
    found: dict[str, list[Attempt]] = {}
    for attempt in experiments:
        found.setdefault(attempt.patch_sha256, []).append(attempt)
    return found


def tried_patches(attempts: dict[str, list[Attempt]], retries: int) -> set[str]:
    """Patches not to propose again (of `attempts` by patch): all tried ones but those whose
    last try was cut short and that have retries left."""
    return {sha for sha, tries in attempts.items() if not may_run_again(tries, retries)}


UNDECIDED = frozenset(s.value for s in Status if s.undecided)


def may_run_again(records: list[Attempt], retries: int) -> bool:
    """An experiment cut short (a crash of the loop, a signal, a failing baseline) decided
    nothing about its patch: it runs again at once, up to `[budget] retries` times
    (inconclusive ones wait for the second look at the end, second_look.py)."""
    return len(records) <= retries and records[-1].status in UNDECIDED
