"""An experiment as a resuming session needs it: a few fields and where its record lies.

Opening a session asks of its history which patches were tried, how often and how each try
ended, the experiment numbers used, the streak without a keep: never the runs' samples. The
summary beside the review index keeps one row of this per experiment (summary.py), so a resume
on a season's journal reads those rows, not 100,000 records; the whole record is read back by
its byte range when something needs it (the second look, a proposer reading the history).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from .records import ExperimentRecord

__all__ = ["Attempt", "Span"]


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
