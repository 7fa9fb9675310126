"""The review's table in columns, kept beside the index: `report`, `pr` and `plot` on a
season's journal build their frame from a column per field, not from 100,000 rows parsed one by
one.

The `columns` of the journal's derived directory (index.py's `derived_dir`) fold the index's
entries (fold.py): every experiment row (index.py's `experiment_row`) as one value in each
column, and the few whole records beside them (session lines, calibrations, confirmations,
imports) with the reader's warnings. A review reads it in one parse and hands the columns to
pandas as they are."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from .fold import COLUMNS, Fold, RecordKeys, fold_path, folded

__all__ = ["ReviewTable", "columns_path", "review_table"]


@dataclass
class ReviewTable:
    """A journal as the review reads it: experiment rows in columns, the rest whole."""

    sessions: list[dict[str, Any]] = field(default_factory=list)
    calibrations: list[dict[str, Any]] = field(default_factory=list)
    confirmations: list[dict[str, Any]] = field(default_factory=list)
    imports: list[dict[str, Any]] = field(default_factory=list)
    experiments: dict[str, list[Any]] = field(default_factory=dict)  # field -> a value per row
    warnings: list[str] = field(default_factory=list)


def columns_path(journal: Path) -> Path:
    return fold_path(journal, COLUMNS)


def review_table(journal: Path) -> ReviewTable:
    """The journal's review table, the columns brought up to date first (journal -> index ->
    them)."""
    fold, torn = folded(journal, _Columns, needed=False)  # its keys only when it folds
    table = fold.table
    return ReviewTable(
        sessions=table.sessions,
        calibrations=table.calibrations,
        confirmations=table.confirmations,
        imports=table.imports,
        experiments=table.experiments,
        warnings=table.warnings + ([torn] if torn else []),
    )


NOT_REVIEWED = frozenset({"patch"})  # a row's fields the review has no use for (a resume has)


@dataclass
class _Columns(Fold):
    NAME = COLUMNS
    VERSION = 4  # 2: a line per column; 3: hashed record keys; 4: repeated values by code

    table: ReviewTable = field(default_factory=ReviewTable)
    rows: int = 0
    keys: RecordKeys = field(default_factory=RecordKeys)
    _same: dict[str, str] = field(default_factory=dict)  # one object per repeated value

    def warn(self, warning: str) -> None:
        self.table.warnings.append(warning)

    def add(self, kind: str, record: dict[str, Any], entry: dict[str, Any]) -> None:
        table = self.table
        if kind != "experiment":
            whole = {
                "session": table.sessions,
                "calibration": table.calibrations,
                "confirmation": table.confirmations,
                "import": table.imports,
            }
            whole[kind].append(record)
            return
        columns = table.experiments
        for key, value in record.items():
            if key in NOT_REVIEWED:
                continue
            if key not in columns:  # a field earlier rows lack: None for each of them
                columns[key] = [None] * self.rows
            if key in REPEATED and type(value) is str:
                value = self._same.setdefault(value, value)
            columns[key].append(value)
        self.rows += 1
        for values in columns.values():  # a field this row lacks (an older index's)
            if len(values) < self.rows:
                values.append(None)

    def worth_writing(self, folded: int) -> bool:
        """A season's columns are tens of megabytes: written again once the entries folded
        since are worth it, else a reader folds those few from the index again (milliseconds
        for a few thousand), and a report after each experiment does not write 30 MB."""
        return folded >= min(REWRITE_MOST, max(REWRITE_LEAST, self.rows // 16))

    def first(self) -> dict[str, Any]:
        return {"rows": self.rows}

    def rest(self) -> Iterator[bytes]:
        """The whole records on one line, then a line per column: a reader parses one column at
        a time, never the whole table's text at once. A column of repeated words is its
        distinct values and a code per row."""
        table = self.table
        yield self.keys.to_line()
        yield orjson.dumps({k: getattr(table, k) for k in _WHOLE}) + b"\n"
        for name, values in table.experiments.items():
            coded = _coded(values) if name in REPEATED else None
            yield orjson.dumps([name, *coded] if coded else [name, values]) + b"\n"

    @classmethod
    def stored(cls, first: dict[str, Any], rest: BinaryIO) -> _Columns:
        rows = first["rows"]
        keys = RecordKeys(rest.readline())
        whole = orjson.loads(rest.readline())
        columns = {}
        for line in rest:
            name, values, *codes = orjson.loads(line)
            if codes:  # one object per distinct value, shared by its rows
                try:
                    values = [values[code] for code in codes[0]]
                except IndexError:
                    raise ValueError("garbled columns") from None
            if not isinstance(name, str) or not isinstance(values, list) or len(values) != rows:
                raise ValueError("garbled columns")
            columns[name] = values
        table = ReviewTable(**{k: whole[k] for k in _WHOLE}, experiments=columns)
        if rows and "id" not in columns:
            raise ValueError("garbled columns")
        return cls(table=table, rows=rows, keys=keys)

    def ready(self, needed: bool, folding: bool = False) -> None:
        if needed or folding:
            self.keys.check()


# Entries folded since the stored columns before they are written again: a sixteenth of the
# rows (a write's cost spread over them), within these bounds.
REWRITE_LEAST, REWRITE_MOST = 64, 4096
_WHOLE = ("sessions", "calibrations", "confirmations", "imports", "warnings")
# Fields whose values repeat from row to row: one string object for each value, not one per row
# (a season's status column alone would hold 100,000 copies of a few words).
REPEATED = frozenset({"status", "rule", "proposer", "session", "parent", "family", "refusal"})


def _coded(values: list[Any]) -> tuple[list[Any], list[int]] | None:
    """A column's distinct values and each row's code; None when a value is neither a string
    nor null (1, 1.0 and True would share a code)."""
    distinct: dict[str | None, int] = {}
    codes = []
    for value in values:
        if value is not None and type(value) is not str:
            return None
        codes.append(distinct.setdefault(value, len(distinct)))
    return list(distinct), codes
