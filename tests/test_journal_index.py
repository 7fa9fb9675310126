"""The review index: kept current by appends, rebuilt when it does not match its journal."""

from __future__ import annotations

import json

from conftest import experiment_record as record
from conftest import git, run, run_cli

from autoresearch.journal.index import INDEX_VERSION, derived_dir, index_path, refresh_index
from autoresearch.journal.store import Journal


def test_appends_keep_the_index_current(tmp_path):
    journal = Journal(tmp_path / "j.jsonl", "s")
    for n in (1, 2):
        journal.append(
            record(
                n, decision={"metrics": {"t": {"threshold_pct": 1.0, "candidate_median": 9.5 + n}}}
            )
        )
    lines = index_path(journal.path).read_text().splitlines()
    assert json.loads(lines[0])["index_version"] == INDEX_VERSION
    assert [json.loads(line)["d"]["n"] for line in lines[1:]] == [1, 2]
    rows = refresh_index(journal.path).experiments
    assert [(r["n"], r["value"], r["status"]) for r in rows] == [
        (1, 10.5, "discard"),
        (2, 11.5, "discard"),
    ]
    assert "baseline_samples" not in json.dumps(rows)  # the digest leaves the samples out


def test_lines_appended_without_the_index_are_digested_on_the_next_read(tmp_path):
    journal = Journal(tmp_path / "j.jsonl", "s")
    journal.append(record(1))
    with open(journal.path, "a") as handle:  # a writer that does not know about the index
        handle.write(json.dumps(record(2).to_dict()) + "\n")
    assert [r["n"] for r in refresh_index(journal.path).experiments] == [1, 2]
    assert len(index_path(journal.path).read_text().splitlines()) == 3


def test_a_rewritten_journal_rebuilds_the_index(tmp_path):
    journal = Journal(tmp_path / "j.jsonl", "s")
    for n in (1, 2, 3):
        journal.append(record(n))
    journal.path.write_text(json.dumps(record(7).to_dict()) + "\n")
    assert [r["n"] for r in refresh_index(journal.path).experiments] == [7]


def test_damaged_and_torn_lines_are_reported(tmp_path):
    journal = Journal(tmp_path / "j.jsonl", "s")
    journal.append(record(1))
    with open(journal.path, "a") as handle:
        handle.write("{not json}\n")
    journal.append(record(2))
    with open(journal.path, "a") as handle:
        handle.write('{"schema_version": 1, "ty')
    contents = refresh_index(journal.path)
    assert [r["n"] for r in contents.experiments] == [1, 2]
    assert contents.warnings == [
        f"{journal.path}:2: damaged line skipped (not valid JSON)",
        f"{journal.path}:4: torn last line skipped (not valid JSON)",
    ]
    again = refresh_index(journal.path)  # read from the index this time: the same answer
    assert again.warnings == contents.warnings


def test_an_unwritable_index_is_digested_in_memory(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text(json.dumps(record(1).to_dict()) + "\n")
    index_path(path).mkdir(parents=True)  # unwritable as a file, even for root
    assert [r["n"] for r in refresh_index(path).experiments] == [1]
    assert index_path(path).is_dir()


def test_a_damaged_index_is_rebuilt(tmp_path):
    journal = Journal(tmp_path / "j.jsonl", "s")
    journal.append(record(1))
    index_path(journal.path).write_text("garbage\n")
    assert [r["n"] for r in refresh_index(journal.path).experiments] == [1]
    assert (
        json.loads(index_path(journal.path).read_text().splitlines()[0])["index_version"]
        == INDEX_VERSION
    )


def status_cli(target):
    return run_cli("status", cwd=target.root, timeout=120)


def test_after_a_night_and_its_review_your_checkout_holds_the_journal_and_nothing_derived(target):
    """The index, the summary and the columns live outside the checkout (in the repository's
    git directory), so that `git status` shows the journal and ideas.md, nothing else."""
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    run(target)
    assert status_cli(target).returncode == 0

    untracked = git(target.root, "status", "--porcelain", "--untracked-files=all", "--ignored")
    new = sorted(line[3:] for line in untracked.splitlines())
    queued = [f"hypotheses/{p.name}" for p in target.queue.iterdir()]  # the test's own
    assert sorted(set(new) - set(queued) - {"ideas.md"}) == ["experiments.jsonl"]
    where = derived_dir(target.journal)
    assert (where / "index").is_file() and (where / "summary").is_file()
    assert where.is_relative_to((target.root / ".git").resolve())


def test_two_journals_of_one_name_never_share_what_is_derived(tmp_path):
    """Keyed by the journal's path: a review of a copy never reads the original's index."""
    first, second = tmp_path / "a" / "j.jsonl", tmp_path / "b" / "j.jsonl"
    for n, path in ((1, first), (2, second)):
        path.parent.mkdir()
        Journal(path, "s").append(record(n))
    assert derived_dir(first) != derived_dir(second)
    assert [r["n"] for r in refresh_index(first).experiments] == [1]
    assert [r["n"] for r in refresh_index(second).experiments] == [2]
