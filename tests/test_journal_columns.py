"""The review's columns: what a whole read of the index says, column by column, kept current
fold by fold and folded again when they do not line up."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest
from conftest import experiment_record

from autoresearch.journal.agent_run import AgentRun, Usage
from autoresearch.journal.columns import REWRITE_LEAST, columns_path, review_table
from autoresearch.journal.index import index_path, refresh_index
from autoresearch.journal.store import Journal
from autoresearch.report.frame import COLUMNS
from autoresearch.report.history import _session_frame


def record(n: int, status: str = "discard", session: str = "s", **more):
    made = experiment_record(n, status, **more)
    return dataclasses.replace(
        made,
        session=session,
        id=f"{session}-{n:04d}",
        kept_commit=f"{n:040x}" if status == "keep" else None,
        patch_sha256=f"{n:064x}",
    )


@pytest.fixture
def journal(tmp_path):
    journal = Journal(tmp_path / "experiments.jsonl", "s")
    for n, status in enumerate(["discard", "keep", "inconclusive", "crash", "keep"], 1):
        journal.append(record(n, status))
    journal.append(record(6, agent=AgentRun("claude", usage=Usage(cost_usd=0.5))))
    journal.append(record(7, session="other"))
    return journal


def whole_read(path):
    """What the review read before the columns: every index row."""
    index = refresh_index(path)
    rows = index.experiments
    return {
        "sessions": index.sessions,
        "calibrations": index.calibrations,
        "confirmations": index.confirmations,
        "imports": index.imports,
        "rows": [{k: v for k, v in row.items() if k != "patch"} for row in rows],
        "warnings": index.warnings,
    }


def columns_read(path):
    table = review_table(path)
    names = list(table.experiments)
    columns = zip(*table.experiments.values(), strict=True)
    rows = [dict(zip(names, values, strict=True)) for values in columns]
    return {
        "sessions": table.sessions,
        "calibrations": table.calibrations,
        "confirmations": table.confirmations,
        "imports": table.imports,
        "rows": rows,
        "warnings": table.warnings,
    }


def test_the_columns_hold_every_row_of_the_index(journal):
    got = columns_read(journal.path)
    assert got == whole_read(journal.path)
    assert [r["id"] for r in got["rows"]] == [f"s-{n:04d}" for n in range(1, 7)] + ["other-0007"]


def test_appends_repeats_damage_and_a_torn_line_fold_on_as_a_whole_read_sees_them(journal):
    review_table(journal.path)
    rows_before = json.loads(columns_path(journal.path).read_bytes().splitlines()[0])["rows"]
    lines = journal.path.read_bytes().splitlines(keepends=True)
    journal.append(record(8, "keep"))
    with open(journal.path, "ab") as handle:  # a writer that does not know about the index
        handle.write(b'{"damaged\n')
        handle.write(lines[1])  # a repeat
        handle.write(json.dumps(record(9).to_dict()).encode() + b"\n")
        handle.write(lines[2][:30])  # torn

    got = columns_read(journal.path)
    assert got == whole_read(journal.path)
    assert len(got["rows"]) == 9 and len(got["warnings"]) == 3
    # A few new records are folded from the index by each reader, the stored columns not
    # written again for them; enough of them are written.
    assert stored_rows(journal) == rows_before == 7
    for n in range(10, 10 + REWRITE_LEAST):
        journal.append(record(n))
    got = columns_read(journal.path)
    assert got == whole_read(journal.path)
    assert stored_rows(journal) == len(got["rows"]) == 9 + REWRITE_LEAST


def stored_rows(journal) -> int:
    return json.loads(columns_path(journal.path).read_bytes().splitlines()[0])["rows"]


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"{not json",
        lambda data: data.replace(b'"rows":7', b'"rows":8'),  # a column shorter than the table
        lambda data: b"\n".join(data.split(b"\n")[:2]) + b"\n",  # its columns cut off
    ],
)
def test_garbled_columns_are_folded_again(journal, damage):
    expected = whole_read(journal.path)
    review_table(journal.path)
    path = columns_path(journal.path)
    path.write_bytes(damage(path.read_bytes()))

    assert columns_read(journal.path) == expected


def test_a_rewritten_journal_is_folded_again(journal):
    review_table(journal.path)
    lines = journal.path.read_bytes().splitlines(keepends=True)
    journal.path.write_bytes(b"".join(lines[:3]))
    journal.append(dataclasses.replace(record(4, "keep"), title="another fourth"))

    got = columns_read(journal.path)
    assert got == whole_read(journal.path)
    assert got["rows"][-1]["title"] == "another fourth"


def test_an_index_that_cannot_be_written_is_read_in_memory(journal):
    index_path(journal.path).unlink()
    index_path(journal.path).mkdir()

    got = columns_read(journal.path)
    assert [r["id"] for r in got["rows"]] == [f"s-{n:04d}" for n in range(1, 7)] + ["other-0007"]
    assert not columns_path(journal.path).exists()


def test_the_frame_from_the_columns_is_the_frame_from_the_rows(journal):
    """pandas makes the same frame of a column per field as of a dict per row."""
    rows = [row for row in refresh_index(journal.path).experiments if row["session"] == "s"]
    from_rows = pd.DataFrame(rows, columns=COLUMNS)
    from_columns = _session_frame(review_table(journal.path).experiments, "s")
    pd.testing.assert_frame_equal(from_columns, from_rows)


@pytest.mark.parametrize("damage", ["code out of range", "code not a number", "codes cut"])
def test_a_garbled_coded_column_is_folded_again(journal, damage):
    """Repeated words are stored once each, with a code per row: a column whose codes do not
    decode is folded again, never read as other words."""
    statuses = [r["status"] for r in refresh_index(journal.path).experiments]
    assert review_table(journal.path).experiments["status"] == statuses
    path = columns_path(journal.path)
    lines = path.read_bytes().splitlines(keepends=True)
    (at,) = [i for i, line in enumerate(lines) if line.startswith(b'["status",')]
    name, distinct, codes = json.loads(lines[at])
    assert sorted(distinct) == sorted(set(statuses)) and len(codes) == len(statuses)
    if damage == "code out of range":
        codes[0] = len(distinct)
    elif damage == "code not a number":
        codes[0] = "keep"
    else:
        codes = codes[:-1]
    lines[at] = json.dumps([name, distinct, codes]).encode() + b"\n"
    path.write_bytes(b"".join(lines))

    assert review_table(journal.path).experiments["status"] == statuses
    assert json.loads(path.read_bytes().splitlines()[at])[2] != codes  # written again
