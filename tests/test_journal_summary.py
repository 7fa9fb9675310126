"""The journal's summary: what status shows, kept current fold by fold, refolded when it does
not line up with its index, and always what a whole read of the index says."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

import pytest
from conftest import experiment_record

from autoresearch.journal.index import index_path, refresh_index
from autoresearch.journal.store import Journal
from autoresearch.journal.summary import session_digest, summary_path


def record(n: int, status: str = "discard", title: str | None = None, **more):
    made = experiment_record(n, status, **more)
    kept = f"{n:040x}" if status == "keep" else None
    return dataclasses.replace(made, kept_commit=kept, title=title or made.title)


def agent_record(n: int, status: str, cost: float | None):
    usage = {"cost_usd": cost} if cost is not None else {}
    return record(n, status, agent={"preset": "claude", "usage": usage})


def expected(path, session="s"):
    """What status used to compute from every row of the index."""
    rows = refresh_index(path).for_session(session)
    kept = [r for r in rows.experiments if r["status"] == "keep"]
    mine = [r for r in rows.experiments if r["agent"]]
    return {
        "experiments": len(rows.experiments),
        "by_status": Counter(r["status"] for r in rows.experiments),
        "last_kept": {k: kept[-1][k] for k in ("id", "title", "commit")} if kept else None,
        "agent_proposals": len(mine),
        "agent_cost": sum(r["agent_cost_usd"] or 0 for r in mine),
        "warnings": rows.warnings,
    }


def seen(path, session="s"):
    digest = session_digest(path, session)
    return {
        "experiments": digest.experiments,
        "by_status": +digest.by_status,
        "last_kept": digest.last_kept,
        "agent_proposals": digest.agent["proposals"],
        "agent_cost": digest.agent["cost_usd"],
        "warnings": digest.warnings,
    }


@pytest.fixture
def journal(tmp_path):
    journal = Journal(tmp_path / "experiments.jsonl", "s")
    statuses = ["discard", "keep", "inconclusive", "crash", "keep", "discard"]
    for n, status in enumerate(statuses, 1):
        journal.append(record(n, status))
    journal.append(agent_record(7, "refused", 0.25))
    journal.append(agent_record(8, "keep", None))
    journal.append(dataclasses.replace(record(9), session="other", id="other-0009"))
    return journal


def test_the_digest_says_what_every_row_says(journal):
    assert seen(journal.path) == expected(journal.path)
    digest = session_digest(journal.path, "s")
    assert digest.experiments == 8 and digest.by_status["keep"] == 3
    assert digest.last_kept["id"] == "s-0008"
    assert digest.agent["proposals"] == 2 and digest.agent["unknown_cost"] == 1
    assert session_digest(journal.path, "other").experiments == 1


def test_appends_fold_on_from_where_the_summary_stopped(journal):
    session_digest(journal.path, "s")
    stored = json.loads(summary_path(journal.path).read_bytes())
    journal.append(record(10, "keep"))
    with open(journal.path, "a") as handle:  # a writer that does not know about the index
        handle.write(json.dumps(record(11, "crash").to_dict()) + "\n")

    assert seen(journal.path) == expected(journal.path)
    after = json.loads(summary_path(journal.path).read_bytes())
    assert after["position"] > stored["position"]
    assert after["sessions"]["s"]["experiments"] == 10


def test_a_summary_that_does_not_line_up_is_folded_again(journal):
    session_digest(journal.path, "s")
    # The journal cut back and written on differently: same first bytes, other history.
    lines = journal.path.read_bytes().splitlines(keepends=True)
    journal.path.write_bytes(b"".join(lines[:3]))
    journal.append(record(4, "keep", title="another fourth"))

    assert seen(journal.path) == expected(journal.path)
    assert session_digest(journal.path, "s").last_kept["title"] == "another fourth"


def test_a_garbled_summary_is_folded_again(journal):
    session_digest(journal.path, "s")
    summary_path(journal.path).write_bytes(b"{not json")

    assert seen(journal.path) == expected(journal.path)


def test_damage_repeats_and_a_torn_line_are_warned_as_a_whole_read_warns(journal):
    lines = journal.path.read_bytes().splitlines(keepends=True)
    with open(journal.path, "ab") as handle:
        handle.write(b'{"damaged\n')
        handle.write(lines[1])  # experiment 2 again: counted once
        handle.write(lines[2][:40])  # a crash cut this one

    got = seen(journal.path)
    assert got == expected(journal.path)
    assert got["experiments"] == 8
    assert len(got["warnings"]) == 3


def test_a_repeat_of_a_record_folded_in_an_earlier_status_is_counted_once(journal):
    session_digest(journal.path, "s")
    assert seen(journal.path)["experiments"] == 8  # nothing new: the stored summary as is
    with open(journal.path, "ab") as handle:
        handle.write(journal.path.read_bytes().splitlines(keepends=True)[1])

    got = seen(journal.path)
    assert got == expected(journal.path)
    assert got["experiments"] == 8 and len(got["warnings"]) == 1
    journal.append(record(10, "keep"))
    assert seen(journal.path) == expected(journal.path)


def test_an_index_that_cannot_be_written_is_summed_up_in_memory(journal):
    index_path(journal.path).unlink()
    index_path(journal.path).mkdir()  # unwritable as a file, even for root

    assert seen(journal.path) == expected(journal.path)
    assert session_digest(journal.path, "s").experiments == 8
    assert not summary_path(journal.path).exists()


def test_a_summary_that_cannot_be_written_is_folded_each_time(journal):
    summary_path(journal.path).mkdir()

    assert seen(journal.path) == expected(journal.path)
    assert summary_path(journal.path).is_dir()


def test_a_missing_journal_has_an_empty_digest(tmp_path):
    assert session_digest(tmp_path / "none.jsonl", "s").experiments == 0
