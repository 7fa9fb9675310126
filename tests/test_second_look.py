"""Undecided is not discarded: a second look at inconclusive hypotheses, and `retry`."""

from __future__ import annotations

import json

import pytest
from conftest import experiments, run, run_cli, seen, unified_patch

from autoresearch.journal import store
from autoresearch.loop.second_look import second_look_count, undecided
from autoresearch.repo.state_dir import SessionPaths


def _noisy_sentinel(monkeypatch, tmp_path) -> None:
    """The primary win is clear; the sentinel is too noisy to be shown inside its budget."""
    monkeypatch.setenv("BENCH_SENTINEL_SPREAD", "0.3")
    monkeypatch.setenv("BENCH_SENTINEL_COUNTER", str(tmp_path / "sentinel-count"))


def test_inconclusive_is_looked_at_again_and_kept_when_the_machine_is_quiet(
    target, monkeypatch, tmp_path
):
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    _noisy_sentinel(monkeypatch, tmp_path)
    run(target, max_experiments=1)
    (first,) = experiments(target)
    assert (first.status, first.decision.rule) == ("inconclusive", "sentinel_unresolved")
    # What it waits for is the sentinel, not more of the primary's runs: the morning's hint
    # says so, and how to measure it again.
    hint = first.asi.next_action_hint
    assert "a sentinel was not shown within its budget" in hint and "below the noise" not in hint
    assert "autoresearch retry" in hint

    monkeypatch.delenv("BENCH_SENTINEL_SPREAD")
    outcome = run(target)

    first, retry = experiments(target)
    assert (retry.title, retry.status, retry.retry_of) == ("01-win", "keep", first.id)
    assert retry.patch_sha256 == first.patch_sha256
    assert outcome.kept == 1


def test_a_resume_and_its_second_look_never_read_the_whole_journal(target, monkeypatch, tmp_path):
    """What a resume needs comes from the summary beside the index; the inconclusive
    experiment's reasoning from its own line: a season's journal is never parsed whole."""
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"}, mechanism="fewer copies")
    target.add_hypothesis("02-loss", {"src/sentinel.txt": "70\n"})
    _noisy_sentinel(monkeypatch, tmp_path)
    run(target, max_experiments=2)
    first, loss = experiments(target)
    assert (first.status, loss.status) == ("inconclusive", "discard")

    monkeypatch.delenv("BENCH_SENTINEL_SPREAD")
    target.add_hypothesis("03-null", {"src/other.txt": "x\n"})
    monkeypatch.setattr(store, "read_journal", lambda path: pytest.fail(f"read {path} whole"))
    outcome = run(target)
    monkeypatch.undo()

    *_, null, retry = experiments(target)
    assert (null.n, null.title, null.retry_of) == (3, "03-null", None)
    assert (retry.n, retry.title, retry.status, retry.retry_of) == (4, "01-win", "keep", first.id)
    assert retry.asi.mechanism == "fewer copies"
    assert outcome.ran == 2 and outcome.kept == 1


def test_a_retry_that_stays_undecided_is_not_tried_a_third_time(target, monkeypatch, tmp_path):
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    _noisy_sentinel(monkeypatch, tmp_path)

    outcome = run(target)
    run(target)

    first, retry = experiments(target)
    assert [first.status, retry.status] == ["inconclusive", "inconclusive"]
    assert retry.retry_of == first.id
    assert "none undecided" in outcome.stop_reason


def test_retry_command_runs_a_discarded_experiment_again_once(target):
    target.add_hypothesis("01-loss", {"src/value.txt": "130\n"})
    run(target)
    (first,) = experiments(target)
    assert first.status == "discard"

    done = run_cli("retry", first.id, cwd=target.root)
    assert done.returncode == 0, done.stderr
    assert f"queued {first.id}" in done.stdout
    bad = run_cli("retry", "t-0099", cwd=target.root)
    assert bad.returncode == 1 and bad.stderr.startswith("error: no experiment t-0099")

    run(target)
    run(target)

    records = experiments(target)
    assert [(r.title, r.status, r.retry_of) for r in records] == [
        ("01-loss", "discard", None),
        ("01-loss", "discard", first.id),
    ]


def test_a_retry_that_no_longer_applies_is_recorded(target, monkeypatch, tmp_path):
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    _noisy_sentinel(monkeypatch, tmp_path)
    run(target, max_experiments=1)
    monkeypatch.delenv("BENCH_SENTINEL_SPREAD")
    (target.queue / "01-win.patch").unlink()
    target.add_hypothesis("02-other", {"src/value.txt": "70\n"})

    run(target)

    first, other, retry = experiments(target)
    assert other.status == "keep"
    assert (retry.retry_of, retry.status) == (first.id, "apply_failed")
    assert retry.error.startswith("no longer applies to the current best")


def test_review_shows_a_retried_hypothesis_once(target, monkeypatch, tmp_path):
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    _noisy_sentinel(monkeypatch, tmp_path)
    run(target, max_experiments=1)
    # The summary stored with the first attempt in it: the retry is folded on to it later.
    assert "experiments: 1 (inconclusive 1)" in run_cli("status", cwd=target.root).stdout
    monkeypatch.delenv("BENCH_SENTINEL_SPREAD")
    # A win at its first try beside it: no earlier attempt (None, never NaN, in the JSON).
    target.add_hypothesis("02-other", {"src/speedup-other.txt": "0.9\n"})
    run(target)

    done = run_cli("report", "--format", "json", cwd=target.root)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["by_status"] == {"keep": 2}
    # Three experiments: the counts say two outcomes and the earlier attempt, adding up.
    assert report["experiments"] == 3 and report["retried"] == 1
    said = "keep 2; 1 earlier attempt measured again"
    assert report["counts_said"] == said
    assert f"experiments: 3 ({said})" in run_cli("report", cwd=target.root).stdout
    # `status` says the same, from the journal's summary rather than the report's frame.
    assert f"experiments: 3 ({said})" in run_cli("status", cwd=target.root).stdout
    status = json.loads(run_cli("status", "--json", cwd=target.root).stdout)
    assert (status["by_status"], status["retried"]) == ({"keep": 2}, 1)
    other, win = report["wins"]
    assert other["earlier"] is None
    assert win["earlier"] == "retry of #1 (inconclusive)"
    assert report["not_kept"] == []
    pr = seen(run_cli("pr", cwd=target.root).stdout)
    assert "retry of #1 (inconclusive)" in pr
    assert "3 run, 2 kept, and 1 earlier attempt measured again" in pr
    ideas_path = target.root / "ideas.md"
    run_cli("ideas", cwd=target.root)
    ideas = ideas_path.read_text()
    assert "### Worth another look (0)" in ideas
    assert "retry of #1 (inconclusive)" in ideas


def test_a_patch_that_changed_under_its_name_is_new(target):
    """Editing a queued patch makes a new hypothesis; the second look is about identical ones."""
    target.add_hypothesis("01", {"src/value.txt": "130\n"})
    run(target)
    (target.queue / "01.patch").write_text(
        "Title: 01\n\n" + unified_patch("src/value.txt", "100\n", "80\n")
    )
    run(target)
    assert [r.retry_of for r in experiments(target)] == [None, None]


def test_progress_counts_the_second_look_beside_the_plan(target, tmp_path):
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    env = {
        "BENCH_SENTINEL_SPREAD": "0.3",
        "BENCH_SENTINEL_COUNTER": str(tmp_path / "sentinel-count"),
    }
    done = run_cli("run", cwd=target.root, env=env)
    labels = [line.split("]")[0] + "]" for line in done.stderr.splitlines() if line[:1] == "["]
    # The plan said one experiment; the second look is counted beside it, once it is known,
    # with a line saying why: the N the reader saw at the start is the N at the end.
    assert sorted(set(labels)) == ["[1/1]", "[2/1+1]"], done.stderr
    assert "1 more experiment than planned: a second look at a near miss" in done.stderr


def test_a_discard_for_want_of_promise_is_taken_up_again_and_a_shown_loss_is_not(target, tmp_path):
    """`not_promising` stops after a few pairs because a keep looks unlikely, which one unlucky
    run can make of a real win: the second look measures it again, like an inconclusive one.
    A loss shown as such stays closed."""
    target.add_hypothesis("01-loss", {"src/value.txt": "130\n"})
    run(target)
    (loss,) = experiments(target)
    (attempt,) = store.Journal(target.journal, loss.session).digest().attempts
    assert (attempt.status, attempt.rule) == ("discard", "significant_loss")
    paths = SessionPaths(tmp_path)
    assert not undecided(attempt)
    assert second_look_count(paths, {attempt.patch_sha256: [attempt]}, 1) == 0

    dropped = attempt._replace(rule="not_promising")
    assert undecided(dropped)
    assert second_look_count(paths, {attempt.patch_sha256: [dropped]}, 1) == 1
    again = dropped._replace(n=2, id="t-0002", retry_of=dropped.id)
    assert second_look_count(paths, {attempt.patch_sha256: [dropped, again]}, 1) == 0
