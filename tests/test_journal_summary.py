"""The journal's summary: what status shows, kept current fold by fold, refolded when it does
not line up with its index, and always what a whole read of the index says."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections import Counter

import pytest
from conftest import eventually, experiment_record

from autoresearch.journal.agent_run import AgentRun, Usage
from autoresearch.journal.columns import review_table
from autoresearch.journal.digest import session_digest, summary_path
from autoresearch.journal.index import index_path, refresh_index
from autoresearch.journal.store import Journal


def record(n: int, status: str = "discard", title: str | None = None, **more):
    made = experiment_record(n, status, **more)
    kept = f"{n:040x}" if status == "keep" else None
    return dataclasses.replace(made, kept_commit=kept, title=title or made.title)


def agent_record(n: int, status: str, cost: float | None):
    return record(n, status, agent=AgentRun("claude", usage=Usage(cost_usd=cost)))


def expected(path, session="s"):
    """What status used to compute from every row of the index."""
    index = refresh_index(path)
    rows = [r for r in index.experiments if r["session"] == session]
    kept = [r for r in rows if r["status"] == "keep"]
    mine = [r for r in rows if r["agent"]]
    return {
        "experiments": len(rows),
        "by_status": Counter(r["status"] for r in rows),
        "last_kept": {k: kept[-1][k] for k in ("id", "title", "commit")} if kept else None,
        "agent_proposals": len(mine),
        "agent_cost": sum(r["agent_cost_usd"] or 0 for r in mine),
        "warnings": index.warnings,
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
    stored = json.loads(summary_path(journal.path).read_bytes().splitlines()[0])
    journal.append(record(10, "keep"))
    with open(journal.path, "a") as handle:  # a writer that does not know about the index
        handle.write(json.dumps(record(11, "crash").to_dict()) + "\n")

    assert seen(journal.path) == expected(journal.path)
    after = json.loads(summary_path(journal.path).read_bytes().splitlines()[0])
    assert after["position"] > stored["position"]
    assert after["sessions"]["s"]["experiments"] == 10


def test_a_hypothesis_measured_again_counts_once_by_its_last_outcome(journal):
    """The review's counts: an attempt a later one measured again is said apart, whether it
    was folded into the stored summary before (its status found in the stored rows) or with
    the retry; an id of another session's is not this session's attempt."""
    session_digest(journal.path, "s")  # s-0001..s-0008 stored
    journal.append(record(10, "keep", retry_of="s-0003"))  # s-0003 inconclusive, stored
    journal.append(record(11, "discard", retry_of="s-0010"))  # folded with it
    journal.append(dataclasses.replace(record(12, retry_of="s-0004"), session="other"))

    rows = [r for r in refresh_index(journal.path).experiments if r["session"] == "s"]
    again = {r["retry_of"] for r in rows if r["retry_of"]}
    last = Counter(r["status"] for r in rows if r["id"] not in again)
    digest = session_digest(journal.path, "s")
    assert digest.outcomes() == (dict(last), 2)
    assert "inconclusive" not in digest.outcomes()[0] and digest.experiments == 10
    assert session_digest(journal.path, "other").outcomes()[1] == 0
    # Folded from nothing, the same.
    summary_path(journal.path).unlink()
    assert session_digest(journal.path, "s").outcomes() == (dict(last), 2)


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


# -- the attempts a resume reads ----------------------------------------------------------------


def attempts_of_a_whole_read(path, session="s"):
    return [
        (r.n, r.id, r.status, r.proposer, r.retry_of, r.patch_sha256)
        for r in Journal(path, session).read().experiments
    ]


def attempts_of_the_summary(path, session="s"):
    return [a[:6] for a in session_digest(path, session, attempts=True).attempts]


def patched(n: int, status: str = "discard", **more):
    return dataclasses.replace(record(n, status, **more), patch_sha256=f"{n:064x}")


def test_the_attempts_are_the_experiments_a_whole_read_gives(journal):
    journal.append(dataclasses.replace(patched(10, "interrupted"), proposer="sweep"))
    journal.append(dataclasses.replace(patched(10, "keep"), id="s-0011", n=11, retry_of="s-0010"))
    lines = journal.path.read_bytes().splitlines(keepends=True)
    with open(journal.path, "ab") as handle:
        handle.write(b'{"damaged\n\n')
        handle.write(lines[1])  # a repeat: counted once
        handle.write(json.dumps(patched(12).to_dict()).encode() + b"\n")  # past the index
        handle.write(lines[2][:40])  # torn

    assert attempts_of_the_summary(journal.path) == attempts_of_a_whole_read(journal.path)
    assert attempts_of_the_summary(journal.path, "other") == attempts_of_a_whole_read(
        journal.path, "other"
    )
    got = attempts_of_the_summary(journal.path)
    assert [a[0] for a in got] == [1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12]
    assert got[-2][4] == "s-0010" and got[-3][3] == "sweep"


def test_each_attempt_reads_back_its_whole_record(journal, monkeypatch):
    with open(journal.path, "ab") as handle:  # a writer that does not know about the index
        handle.write(json.dumps(patched(10, "keep").to_dict()).encode() + b"\n")
        handle.write(b'{"torn by a crash')  # closed off by the next append
    span = journal.append(patched(11))
    whole = {r.id: r for r in journal.read().experiments}

    attempts = session_digest(journal.path, "s", attempts=True).attempts
    assert len(attempts) == len(whole) == 10
    monkeypatch.setattr(Journal, "read", lambda self: pytest.fail("read the whole journal"))
    for attempt in attempts:
        assert journal.record(attempt) == whole[attempt.id]
    assert (attempts[-1].start, attempts[-1].end) == span
    assert journal.path.read_bytes()[span.start : span.end].endswith(b"\n")


def test_a_record_whose_line_moved_is_found_by_a_whole_read(journal):
    attempt = session_digest(journal.path, "s", attempts=True).attempts[2]
    # Rewritten by hand: a line inserted before it, so its bytes are no longer where they were.
    lines = journal.path.read_bytes().splitlines(keepends=True)
    inserted = json.dumps(patched(20).to_dict()).encode() + b"\n"
    journal.path.write_bytes(lines[0] + inserted + b"".join(lines[1:]))

    assert journal.record(attempt).id == attempt.id == "s-0003"
    assert journal.record(attempt._replace(id="s-0099", start=None)) is None


def test_a_garbled_second_line_is_folded_again_when_a_resume_needs_it(journal):
    before = attempts_of_the_summary(journal.path)
    first = summary_path(journal.path).read_bytes().splitlines()[0]
    summary_path(journal.path).write_bytes(first + b"\n{not json\n")

    assert seen(journal.path) == expected(journal.path)  # status reads the first line only
    assert attempts_of_the_summary(journal.path) == before == attempts_of_a_whole_read(journal.path)
    journal.append(patched(10))
    summary_path(journal.path).write_bytes(first + b"\n[]\n")
    assert seen(journal.path) == expected(journal.path)  # a fold needs it: folded again
    assert attempts_of_the_summary(journal.path) == attempts_of_a_whole_read(journal.path)


def _rows_file(journal):
    first = json.loads(summary_path(journal.path).read_bytes().splitlines()[0])
    return summary_path(journal.path).with_name(first["rows_file"]), first["rows_bytes"]


def test_a_fold_appends_the_new_attempt_rows_and_never_writes_the_others_again(journal):
    """A season's rows are megabytes: a fold adds its own after them, in place."""
    before = attempts_of_the_summary(journal.path)
    rows, size = _rows_file(journal)
    stored, inode = rows.read_bytes(), rows.stat().st_ino
    rows.write_bytes(stored + b"left by a fold cut short\n")  # past what counts: written over

    journal.append(patched(10))
    journal.append(patched(11, "keep"))
    assert seen(journal.path) == expected(journal.path)  # status folds them in

    grown, grown_size = _rows_file(journal)
    assert grown == rows and rows.stat().st_ino == inode
    assert rows.read_bytes()[:size] == stored and grown_size > size
    assert b"cut short" not in rows.read_bytes()[:grown_size]
    assert attempts_of_the_summary(journal.path) == attempts_of_a_whole_read(journal.path)
    assert len(attempts_of_the_summary(journal.path)) == len(before) + 2


@pytest.mark.parametrize("damage", ["cut", "gone", "another file"])
def test_attempt_rows_cut_gone_or_named_elsewhere_are_folded_again(journal, damage):
    """A summary whose rows are not there whole, or that names another file of the directory
    as its rows (the index), is folded again; the index is never written as rows."""
    before = attempts_of_the_summary(journal.path)
    rows, size = _rows_file(journal)
    index = index_path(journal.path).read_bytes()
    if damage == "cut":
        rows.write_bytes(rows.read_bytes()[: size // 2])
    elif damage == "gone":
        rows.unlink()
    else:
        path = summary_path(journal.path)
        first, rest = path.read_bytes().split(b"\n", 1)
        said = json.loads(first) | {"rows_file": "index"}
        path.write_bytes(json.dumps(said).encode() + b"\n" + rest)

    assert attempts_of_the_summary(journal.path) == before == attempts_of_a_whole_read(journal.path)
    journal.append(patched(10))
    assert seen(journal.path) == expected(journal.path)
    assert attempts_of_the_summary(journal.path) == attempts_of_a_whole_read(journal.path)
    assert index_path(journal.path).read_bytes().startswith(index)
    # One rows file in the directory: a fold from the start removes the one it replaced.
    assert len(list(summary_path(journal.path).parent.glob("summary.rows-*"))) == 1


def test_a_reader_whose_rows_another_fold_from_the_start_replaced_still_has_them(journal):
    """A reader finds its rows file gone (another reader's fold from the start removed it) and
    folds from the start, taking a new generation; before it reads those rows, a third reader's
    fold from the start removes that one too. It still has every attempt row (a resume asks for
    them right after its fold)."""
    from autoresearch.journal.digest import Summary
    from autoresearch.journal.fold import folded

    first, _ = folded(journal.path, Summary, needed=True)
    directory = summary_path(journal.path).parent
    (directory / first.rows.name).unlink()
    second, _ = folded(journal.path, Summary, needed=True)  # its rows gone: from the start
    summary_path(journal.path).unlink()
    third, _ = folded(journal.path, Summary, needed=True)
    assert len({first.rows.name, second.rows.name, third.rows.name}) == 3
    assert not (directory / second.rows.name).exists()

    assert [a[:6] for a in second.attempts("s")] == attempts_of_a_whole_read(journal.path)


# A reader as `status`, a resume and the review page are, bringing the journal's index and
# folds up to date over and over until told to stop.
READER = """
import sys
from pathlib import Path
from autoresearch.journal.columns import review_table
from autoresearch.journal.digest import session_digest
journal, stop, ready = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
while not stop.exists():
    session_digest(journal, "s", attempts=True)
    review_table(journal)
    ready.touch()
"""


@pytest.mark.e2e
def test_readers_folding_while_the_loop_appends_agree_with_a_whole_read(journal, tmp_path):
    """Three readers bring the index, the summary and the review's columns up to date over and
    over while records are appended: however they interleave, each new line is indexed once
    (two readers would append it twice, and every fold count it twice) and the summary and the
    columns say what a whole read of the journal says."""
    stop = tmp_path / "stop"
    argv = [sys.executable, "-c", READER, str(journal.path), str(stop)]
    readers = [subprocess.Popen([*argv, str(tmp_path / f"ready-{i}")]) for i in range(3)]
    try:
        for i in range(3):  # each has read once: the appends meet them reading
            eventually((tmp_path / f"ready-{i}").exists, what=f"reader {i} to start")
        for n in range(10, 130):
            journal.append(patched(n, "keep" if n % 7 == 0 else "discard"))
            if n % 40 == 0:  # now and then a fold from the start beside them
                summary_path(journal.path).unlink(missing_ok=True)
    finally:
        stop.touch()
        codes = [reader.wait(timeout=120) for reader in readers]
    assert codes == [0, 0, 0]
    assert seen(journal.path) == expected(journal.path)
    whole = attempts_of_a_whole_read(journal.path)
    assert attempts_of_the_summary(journal.path) == whole
    ids = review_table(journal.path).experiments["id"]
    assert [i for i in ids if i != "other-0009"] == [a[1] for a in whole] and len(ids) == len(
        whole
    ) + 1
    lines = [json.loads(line) for line in index_path(journal.path).read_bytes().splitlines()[1:]]
    assert len({entry["l"] for entry in lines}) == len(lines)


def test_a_journal_concatenated_with_itself_counts_each_record_once(journal):
    for n in range(10, 300):
        journal.append(patched(n))
    once = attempts_of_the_summary(journal.path)
    journal.path.write_bytes(journal.path.read_bytes() * 2)

    got = seen(journal.path)
    assert got == expected(journal.path)
    assert got["experiments"] == 298 and len(got["warnings"]) == 299  # every line once more
    assert attempts_of_the_summary(journal.path) == once
    assert got["warnings"][0].endswith("repeats line 1, skipped")


def test_a_night_and_its_journal_say_the_same_of_the_session_across_a_resume(target):
    """The night folds each record it writes with the journal's reducer: where it says the
    session stands is what the journal's summary says, after a first run and after a resume."""
    from conftest import run

    target.add_hypothesis("01-win", {"src/speedup-a.txt": "0.8\n"})
    target.add_hypothesis("02-loss", {"src/speedup-b.txt": "1.2\n"})
    target.add_hypothesis("03-crash", {"src/mode.txt": "crash\n"})
    target.add_hypothesis("04-win", {"src/speedup-c.txt": "0.7\n"})
    target.add_hypothesis("05-loss", {"src/speedup-d.txt": "1.2\n"})

    first = run(target, max_experiments=3)
    journal = session_digest(target.journal, "t")
    assert first.standing.to_dict() == journal.to_dict()
    assert (journal.experiments, journal.no_keep_streak, journal.last_n) == (3, 2, 3)

    second = run(target)
    journal = session_digest(target.journal, "t")
    assert second.standing.to_dict() == journal.to_dict()
    assert journal.by_status == Counter(keep=2, discard=2, crash=1)
    assert (journal.experiments, journal.no_keep_streak, journal.last_n) == (5, 1, 5)
    assert journal.last_kept["title"] == "04-win"
