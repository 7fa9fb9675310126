"""The journal read from its end gives the records a whole read gives, whatever the blocks."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import experiment_record

from autoresearch.errors import NewerSchemaError
from autoresearch.journal import tail
from autoresearch.journal.store import append_record, read_journal
from autoresearch.journal.tail import last_experiments


def other_session(n: int):
    return dataclasses.replace(experiment_record(n), session="other", id=f"other-{n:04d}")


@pytest.fixture
def journal(tmp_path):
    """A journal of two sessions' experiments, interleaved, with a damaged line among them."""
    path = tmp_path / "experiments.jsonl"
    for n in range(1, 41):
        # Lines of different lengths, so that blocks end anywhere in them.
        append_record(path, experiment_record(n, error="x" * (n % 7) * 30))
        append_record(path, other_session(n))
        if n == 25:
            with open(path, "ab") as handle:
                handle.write(b'{"damaged\n')
    return path


@pytest.mark.parametrize("block", [64, 1000, 1 << 20])
@pytest.mark.parametrize("count", [1, 5, 17, 40, 100])
def test_the_last_records_are_the_whole_reads_last_whatever_the_block(
    journal, monkeypatch, block, count
):
    monkeypatch.setattr(tail, "FIRST_BLOCK", block)
    whole = read_journal(journal).for_session("s").experiments

    assert last_experiments(journal, "s", count) == whole[-count:]


def test_all_of_them_when_the_count_is_not_positive(journal):
    assert last_experiments(journal, "s", 0) == read_journal(journal).for_session("s").experiments


def test_a_torn_last_line_and_a_copied_line_read_as_a_whole_read_does(journal):
    # Of a copy, the earlier line counts when both are in the part read (here the whole file).
    lines = journal.read_bytes().splitlines(keepends=True)
    copied = next(line for line in lines if b'"s-0038"' in line)
    with open(journal, "ab") as handle:
        handle.write(copied)  # experiment 38 again, after 40: a whole read skips the copy
        handle.write(copied[: len(copied) // 2])  # a crash cut this one
    whole = read_journal(journal).for_session("s").experiments

    assert [r.id for r in last_experiments(journal, "s", 3)] == ["s-0038", "s-0039", "s-0040"]
    assert last_experiments(journal, "s", 3) == whole[-3:]


def test_a_missing_journal_has_no_history(tmp_path):
    assert last_experiments(tmp_path / "none.jsonl", "s", 5) == []


def test_a_newer_schema_near_the_end_is_refused_as_in_a_whole_read(journal):
    with open(journal, "ab") as handle:
        handle.write(b'{"schema_version": 99, "type": "experiment"}\n')

    with pytest.raises(NewerSchemaError, match="newer than this autoresearch"):
        last_experiments(journal, "s", 3)
