"""A candidate that reaches outside its patch while it runs is `tampered`, never a keep."""

from __future__ import annotations

import pytest
from conftest import experiments, git, run

from autoresearch.repo.state_dir import session_paths

CASES = {
    "baseline": "the baseline worktree was written to",
    "bench": "files of the candidate worktree changed during the run: bench.py",
    "readme": "files of the candidate worktree changed during the run: README",
    "commit": "the session branch moved",
    "checkout": "tracked files of your checkout",
    # Its patched file made a FIFO: the guard's look must not wait on it.
    "fifo": "files of the candidate worktree changed during the run: src/mode.txt, src/value.txt",
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("what", list(CASES))
def test_tampering_candidate_is_caught_and_undone(target, what):
    # A real win besides: without the guard, every one of these would be kept.
    target.add_hypothesis(
        "01-tamper", {"src/mode.txt": f"tamper-{what}\n", "src/value.txt": "80\n"}
    )
    target.add_hypothesis("02-win", {"src/sentinel.txt": "49\n"})
    head_before = git(target.root, "rev-parse", "HEAD")

    run(target)

    records = experiments(target)
    first = records[0]
    assert first.status == "tampered", (first.status, first.error)
    assert CASES[what] in first.error
    assert first.kept_commit is None
    assert "never keep it" in first.asi.next_action_hint
    # Undone: the branch holds only recorded keeps, both trees are clean.
    kept_titles = [r.title for r in reversed(records) if r.status == "keep"]
    assert target.branch_log() == [*kept_titles, "synthetic target"]
    paths = session_paths(target.load())
    assert git(paths.worktree, "status", "--porcelain") == ""
    assert git(paths.baseline, "status", "--porcelain") == ""
    assert (paths.baseline / "src" / "value.txt").read_text() == "100\n"
    assert git(target.root, "rev-parse", "HEAD") == head_before
    # The next experiment ran normally against an intact baseline.
    assert records[1].status in ("discard", "keep")
    assert records[1].decision.metrics["time_ms"].baseline_median == pytest.approx(100)


def test_tampering_in_the_checks_is_caught(target):
    checks = target.root / "checks.py"
    checks.write_text(
        checks.read_text().replace(
            '    print("checks: ok", file=out)',
            '    if (root / "src" / "evil.txt").exists():\n'
            "        import json\n"
            '        arms = json.loads((root.parent / "arms.json").read_text())\n'
            '        (root.parent / arms["baseline"] / "README").write_text("x")\n'
            '    print("checks: ok", file=out)',
        )
    )
    git(target.root, "commit", "-qam", "checks that can be abused")
    target.add_hypothesis("01-win", {"src/value.txt": "80\n", "src/evil.txt": "1\n"})

    run(target)

    (record,) = experiments(target)
    assert record.status == "tampered"
    assert record.error.startswith("checks: the baseline worktree was written to")
    assert target.branch_log() == ["checks that can be abused", "synthetic target"]


def test_rewriting_an_already_changed_file_of_the_checkout_is_caught(target):
    """Your checkout has uncommitted work; a candidate writes the same bytes over it."""
    (target.root / "README").write_text("written into your checkout")  # the user's own edit
    target.add_hypothesis("01", {"src/mode.txt": "tamper-checkout\n", "src/value.txt": "80\n"})

    run(target)

    (record,) = experiments(target)
    assert record.status == "tampered"
    assert "tracked files of your checkout" in record.error


def test_a_write_into_a_directory_the_baseline_gained_mid_night_is_caught(target):
    """The watches last the night: a directory the baseline's tree gains when the best moves
    is watched from then on, so a candidate's write there is seen without a walk."""
    target.add_hypothesis("01-win", {"src/late/deeper/kept.txt": "1\n", "src/value.txt": "80\n"})
    target.add_hypothesis("02-tamper", {"src/mode.txt": "tamper-baseline-late\n"})

    run(target)

    first, second = experiments(target)
    assert first.status == "keep", (first.status, first.error)
    assert second.status == "tampered", (second.status, second.error)
    assert "the baseline worktree was written to during the candidate's run" in second.error
    paths = session_paths(target.load())
    assert not (paths.baseline / "src" / "late" / "deeper" / "planted.txt").exists()


def test_a_change_staged_by_the_candidate_is_not_committed_with_its_keep(target):
    """The guard compares the working tree with HEAD; a change staged in the index alone
    (`git update-index`) is not there. The keep commits the patch's paths only."""
    target.add_hypothesis("01-win", {"src/mode.txt": "tamper-stage\n", "src/value.txt": "80\n"})

    run(target)

    (record,) = experiments(target)
    assert record.status == "keep", (record.status, record.error)
    changed = git(target.root, "show", "--name-only", "--format=", record.kept_commit).split()
    assert sorted(changed) == ["src/mode.txt", "src/value.txt"]
    assert "smuggled" not in git(target.root, "show", f"{record.kept_commit}:README")
