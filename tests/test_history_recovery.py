"""Ids never repeat and every kept commit has its record, whatever happened to the journal."""

from __future__ import annotations

import json

from conftest import experiments, git, run, run_cli, unified_patch

from autoresearch.journal.store import read_journal
from autoresearch.repo.state_dir import session_paths


def _two_keeps(target):
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    second = unified_patch("src/value.txt", "80\n", "60\n")
    (target.queue / "02-win.patch").write_text("Title: 02-win\n\n" + second)
    target.add_hypothesis("03-loss", {"src/value.txt": "130\n"})
    run(target)
    keeps = [r for r in experiments(target) if r.status == "keep"]
    assert len(keeps) == 2
    return keeps


def _kept_ids_on_branch(target) -> list[str]:
    fmt = "--format=%(trailers:key=Experiment-Id,valueonly)"
    out = git(target.root, "log", fmt, "autoresearch/t")
    return [line.strip() for line in out.splitlines() if line.strip()]


def test_damaged_keep_line_is_recovered_from_the_branch_and_ids_stay_unique(target):
    keeps = _two_keeps(target)
    lines = target.journal.read_text().splitlines(keepends=True)
    damaged = [line[:40] + "\n" if f'"id": "{keeps[0].id}"' in line else line for line in lines]
    target.journal.write_text("".join(damaged))
    target.add_hypothesis("04-more", {"src/checks_sleep.txt": "0\n"})

    run(target)

    records = experiments(target)
    ids = [r.id for r in records]
    assert len(ids) == len(set(ids)), ids
    by_id = {r.id: r for r in records}
    for exp_id in _kept_ids_on_branch(target):
        assert by_id[exp_id].status == "keep"
    recovered = by_id[keeps[0].id]
    assert recovered.decision.rule == "recovered"
    assert recovered.decision.metrics["time_ms"].change_pct < -15
    # The recovered keep carries its patch's hash: the queue does not propose it again.
    assert recovered.patch_sha256 == keeps[0].patch_sha256
    assert [r.title for r in records if r.title.startswith("01")] == ["01-win"]


def test_emptied_journal_recovers_the_base_from_the_branch(target):
    keeps = _two_keeps(target)
    base = read_journal(target.journal).sessions[0].base_commit
    target.journal.write_bytes(b"")
    target.add_hypothesis("04-more", {"src/checks_sleep.txt": "0\n"})

    done = run_cli("run", cwd=target.root)

    assert done.returncode == 0, done.stderr
    assert "the session's base is" in done.stderr and base[:10] in done.stderr
    contents = read_journal(target.journal)
    assert contents.sessions[0].base_commit == base
    assert contents.sessions[0].event == "recover"
    kept = [r for r in contents.experiments if r.status == "keep"]
    assert [r.id for r in kept][:2] == [k.id for k in keeps]
    status = json.loads(run_cli("status", "--json", cwd=target.root).stdout)
    assert status["base_commit"] == base


def test_a_failing_baseline_is_not_the_candidates_fault(target, tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_FAIL_TREE", "baseline")
    monkeypatch.setenv("BENCH_FAIL_COUNTER", str(tmp_path / "count"))
    monkeypatch.setenv("BENCH_FAIL_AFTER", "3")  # calibration (2 runs) passes, then it fails
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})

    run(target, max_experiments=1)

    (record,) = experiments(target)
    assert record.status == "baseline_failed"
    assert record.error.startswith("baseline arm:")
    assert "current best failed" in record.asi.next_action_hint

    monkeypatch.delenv("BENCH_FAIL_TREE")
    run(target)

    first, retry = experiments(target)
    assert (retry.status, retry.retry_of) == ("keep", first.id)


def test_a_recalibration_whose_baseline_fails_once_is_retried_and_the_night_goes_on(
    target, tmp_path, monkeypatch
):
    """The new best's bench fails once as it is calibrated after a keep: a baseline failure
    like any other, said; the calibration runs again, and the rest of the queue runs."""
    monkeypatch.setenv("BENCH_FAIL_VALUE", "80")
    monkeypatch.setenv("BENCH_FAIL_TIMES", "1")
    monkeypatch.setenv("BENCH_FAIL_COUNTER", str(tmp_path / "count"))
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    target.add_hypothesis("02-win", {"src/speedup-b.txt": "0.8\n"})

    done = run_cli("run", cwd=target.root)

    assert done.returncode == 0, done.stderr
    assert "the calibration of the best failed (1 in a row)" in done.stderr, done.stderr
    assert [r.status for r in experiments(target)] == ["keep", "keep"]
    calibrations = read_journal(target.journal).calibrations
    assert [c.medians["time_ms"] for c in calibrations] == [100, 80, 64]


def test_a_best_whose_calibration_keeps_failing_stops_the_night_with_a_reason(
    target, tmp_path, monkeypatch
):
    """Three failed calibrations in a row: no candidate can be judged against that best. The
    night stops by itself, says why, and the queue is left for the next run."""
    monkeypatch.setenv("BENCH_FAIL_VALUE", "80")
    monkeypatch.setenv("BENCH_FAIL_COUNTER", str(tmp_path / "count"))
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    target.add_hypothesis("02-win", {"src/speedup-b.txt": "0.8\n"})

    done = run_cli("run", cwd=target.root)

    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    assert "failed 3 times in a row" in done.stderr, done.stderr
    assert [r.status for r in experiments(target)] == ["keep"]
    assert not session_paths(target.load()).inflight.exists()

    monkeypatch.delenv("BENCH_FAIL_VALUE")
    again = run_cli("run", cwd=target.root)
    assert again.returncode == 0, again.stderr
    assert [r.status for r in experiments(target)] == ["keep", "keep"]
