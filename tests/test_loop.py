"""The loop end to end on the synthetic target: every status, keep and revert, isolation."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from conftest import alive, experiments, git, gone, run, spawn_loop, wait_for_candidate

from autoresearch.journal.draft import parse_trailers
from autoresearch.journal.store import read_journal
from autoresearch.repo.state_dir import session_paths


def test_keep_commits_on_session_branch_and_leaves_checkout_alone(target):
    target.add_hypothesis(
        "01-faster",
        {"src/value.txt": "80\n"},
        title="Make it faster",
        hypothesis="less work",
        mechanism="skip a step",
        expected_effect="-20% time_ms",
    )
    head_before = git(target.root, "rev-parse", "HEAD")

    outcome = run(target)

    assert outcome.kept == 1
    (record,) = experiments(target)
    assert record.status == "keep"
    assert record.touched_files == ["src/value.txt"]
    assert record.asi.mechanism == "skip a step"
    assert record.asi.rollback_reason is None
    assert record.decision.primary == "time_ms"  # the decision names the metric it went on
    metric = record.decision.metrics["time_ms"]
    assert metric.baseline_median == pytest.approx(100)
    assert metric.candidate_median == pytest.approx(80)
    assert metric.change_pct == pytest.approx(-20)
    assert record.sentinels["sentinel_ms"].ok is True
    assert record.checks.exit_code == 0
    # The kept commit is the branch tip and carries the evidence in its trailers.
    tip = git(target.root, "rev-parse", "autoresearch/t").strip()
    assert record.kept_commit == tip
    message = git(target.root, "log", "-1", "--format=%B", tip)
    assert message.startswith("Make it faster\n")
    assert "Mechanism: skip a step" in message
    trailers = parse_trailers(message)
    assert trailers["Experiment-Id"] == record.id
    assert json.loads(trailers["Result"])["change_pct"] == pytest.approx(-20)
    assert git(target.root, "show", f"{tip}:src/value.txt") == "80\n"
    # The user's checkout did not move and is not dirty.
    assert git(target.root, "rev-parse", "HEAD") == head_before
    assert target.file("src/value.txt") == "100\n"
    assert git(target.root, "status", "--porcelain", "--untracked-files=no") == ""


def test_losses_small_changes_and_sentinel_breaches_are_reverted(target):
    target.add_hypothesis("01-slower", {"src/value.txt": "130\n"})
    target.add_hypothesis("02-tiny-win", {"src/value.txt": "99.8\n"})
    target.add_hypothesis(
        "03-trade", {"src/value.txt": "80\n", "src/sentinel.txt": "60\n"}, title="trade"
    )

    outcome = run(target)

    statuses = [(r.title, r.status, r.decision.rule) for r in experiments(target)]
    assert statuses == [
        ("01-slower", "discard", "significant_loss"),
        ("02-tiny-win", "discard", "below_threshold"),
        ("trade", "discard", "sentinel_budget"),
    ]
    assert outcome.kept == 0
    assert target.branch_log() == ["synthetic target"]
    sentinel = experiments(target)[2].sentinels["sentinel_ms"]
    assert sentinel.ok is False and sentinel.change_pct == pytest.approx(20)
    worktree = session_paths(target.load()).worktree
    assert (worktree / "src" / "value.txt").read_text() == "100\n"
    assert all(r.asi.rollback_reason for r in experiments(target))


def test_keeps_compound_and_measure_against_current_best(target):
    target.add_hypothesis("01", {"src/value.txt": "80\n"})
    # Written against the tip it will meet (after the first keep), as a queue author would.
    target.add_hypothesis("02", {"src/value.txt": "60\n"})
    patch = (target.queue / "02.patch").read_text().replace("-100", "-80")
    (target.queue / "02.patch").write_text(patch)

    run(target)

    first, second = experiments(target)
    assert (first.status, second.status) == ("keep", "keep")
    assert second.parent_commit == first.kept_commit
    assert second.decision.metrics["time_ms"].baseline_median == pytest.approx(80)
    assert target.branch_log()[:2] == ["02", "01"]


@pytest.mark.parametrize(
    ("mode", "status", "detail"),
    [
        ("crash\n", "crash", "exit code 3"),
        ("garbage\n", "crash", "not a finite number"),
        ("nometric\n", "crash", "no 'METRIC time_ms=...' line"),
    ],
)
def test_bench_failures_become_statuses(target, mode, status, detail):
    target.add_hypothesis("01", {"src/mode.txt": mode})
    target.add_hypothesis("02-next", {"src/value.txt": "80\n"})

    run(target)

    first, second = experiments(target)
    assert first.status == status
    assert detail in first.error
    assert first.bench_logs and os.path.exists(first.bench_logs[0])
    assert first.decision is None
    assert second.status == "keep"  # the loop went on, from a clean tree


def test_timeout_kills_the_whole_process_group(target, tmp_path):
    target.configure(bench_timeout=2)
    child_pid_file = tmp_path / "child.pid"
    target.add_hypothesis("01-hang", {"src/mode.txt": "hang\n"})

    run(target, env={"BENCH_CHILD_PID": str(child_pid_file)})

    (record,) = experiments(target)
    assert record.status == "timeout"
    assert "timed out" in record.error
    child = int(child_pid_file.read_text())
    assert gone(child), "the bench's grandchild survived the timeout"


def test_checks_failure_reverts(target):
    target.add_hypothesis("01-fast-but-wrong", {"src/value.txt": "80\n", "src/broken.txt": "1\n"})

    run(target)

    (record,) = experiments(target)
    assert record.status == "checks_failed"
    assert record.checks.exit_code == 1
    assert "broken" in record.checks.tail
    assert target.branch_log() == ["synthetic target"]


def test_apply_failure_and_scope_violations(target):
    (target.queue / "01-stale.patch").write_text(
        "Title: stale\n\n"
        + "diff --git a/src/value.txt b/src/value.txt\n--- a/src/value.txt\n+++ b/src/value.txt\n"
        + "@@ -1 +1 @@\n-999\n+1\n"
    )
    target.add_hypothesis("02-protected", {"src/protected.txt": "mine\n"})
    target.add_hypothesis("03-bench", {"bench.py": "print('METRIC time_ms=1')\n"})
    target.add_hypothesis("04-outside", {"README": "hello\n"})
    (target.queue / "05-escape.patch").write_text(
        "diff --git a/../evil b/../evil\nnew file mode 100644\n--- /dev/null\n+++ b/../evil\n"
        "@@ -0,0 +1 @@\n+x\n"
    )

    run(target)

    got = [(r.title, r.status) for r in experiments(target)]
    assert got == [
        ("stale", "apply_failed"),
        ("02-protected", "scope_violation"),
        ("03-bench", "scope_violation"),
        ("04-outside", "scope_violation"),
        ("05-escape", "scope_violation"),
    ]
    errors = [r.error for r in experiments(target)]
    assert "protected (matches 'src/protected.txt')" in errors[1]
    assert "protected (matches 'bench.py')" in errors[2]
    assert "outside the scope" in errors[3]
    assert "escapes the repository" in errors[4]
    assert not (target.root.parent / "evil").exists()


def test_symlink_in_scope_cannot_be_written_through(target):
    (target.root / "src" / "link").symlink_to(target.root.parent)
    git(target.root, "add", "src/link")
    git(target.root, "commit", "-q", "-m", "a link")
    target.add_hypothesis("01", {"src/link/escaped.txt": "x\n"})

    run(target)

    (record,) = experiments(target)
    assert record.status == "scope_violation"
    assert "symbolic link src/link" in record.error


def test_stray_bench_output_is_not_committed(target):
    target.add_hypothesis("01", {"src/value.txt": "80\n", "src/mode.txt": "writes\n"})

    run(target)

    (record,) = experiments(target)
    assert record.status == "keep"
    files = git(target.root, "show", "--name-only", "--format=", record.kept_commit).split()
    assert files == ["src/mode.txt", "src/value.txt"]
    worktree = session_paths(target.load()).worktree
    assert not (worktree / "src" / "cache.bin").exists()
    assert not (worktree / "out").exists()


def test_identical_patch_is_not_run_twice(target):
    target.add_hypothesis("01", {"src/value.txt": "130\n"})
    run(target)
    (target.queue / "02-copy.patch").write_text((target.queue / "01.patch").read_text())

    outcome = run(target)

    assert outcome.ran == 0
    assert len(experiments(target)) == 1


def test_stops_after_consecutive_non_keeps_and_on_budget(target):
    for i in range(4):
        target.add_hypothesis(f"0{i}", {"src/value.txt": f"{110 + i}\n"})

    outcome = run(target, stop_after_no_keep=2)
    assert outcome.ran == 2
    assert "2 consecutive experiments without a keep" in outcome.stop_reason

    outcome = run(target, max_experiments=3)
    assert outcome.ran == 1
    assert "budget reached: 3 experiments" in outcome.stop_reason


def test_journal_holds_session_and_calibration_lines(target):
    target.add_hypothesis("01", {"src/value.txt": "80\n"})
    run(target)
    contents = read_journal(target.journal)
    (session,) = contents.sessions
    assert session.event == "start"
    assert session.environment["cpu_count"] == os.cpu_count()
    assert session.environment["python"].count(".") == 2
    assert session.config["metric"]["name"] == "time_ms"
    # Once at the start, once more on the kept commit, the new best.
    first, after_keep = contents.calibrations
    assert first.samples["time_ms"] == [100.0] * 4
    assert first.threshold_pct == 1.0
    assert after_keep.samples["time_ms"] == [80.0] * 4
    assert after_keep.commit == contents.experiments[0].kept_commit
    # Two calibrations within one second still keep their own logs.
    assert not set(first.bench_logs) & set(after_keep.bench_logs)
    assert "METRIC time_ms=100" in Path(first.bench_logs[0]).read_text()
    lines = target.journal.read_text().splitlines()
    assert all(json.loads(line)["schema_version"] == 1 for line in lines)


def test_noise_raises_the_threshold(target, tmp_path):
    target.configure(calibration_runs=6)
    target.add_hypothesis("01-small-win", {"src/value.txt": "97\n"})
    # Calibration sees 100, 96, 104: MAD 4, robust CV 5.93%, threshold 3 x 5.93%.
    factors = {"BENCH_FACTORS": "1.0,0.96,1.04", "BENCH_COUNTER": str(tmp_path / "n")}

    run(target, env=factors, accept_noise=True)

    (calibration,) = read_journal(target.journal).calibrations
    assert calibration.noise_pct["time_ms"] == pytest.approx(100 * 1.4826 * 0.04)
    assert calibration.threshold_pct == pytest.approx(3 * 100 * 1.4826 * 0.04)
    (record,) = experiments(target)
    # A true 3% win cannot be worth claiming against a 17.8% threshold.
    assert (record.status, record.decision.rule) == ("discard", "below_noise_threshold")
    assert "the threshold the noise set" in record.decision.reason


@pytest.mark.e2e
def test_sigterm_stops_bench_reverts_and_records(target, tmp_path):
    target.add_hypothesis("01-slow", {"src/mode.txt": "slow\n", "src/value.txt": "80\n"})
    target.add_hypothesis("02-never", {"src/value.txt": "70\n"})
    started = tmp_path / "bench-started"
    # Calibration runs are not slow; the candidate's are.
    proc = spawn_loop(target, {"BENCH_SLOW_S": "60", "BENCH_STARTED": str(started)})
    wait_for_candidate(target, started)

    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)

    assert proc.returncode == 3, err
    (record,) = experiments(target)
    assert record.status == "interrupted"
    bench_pid = int(started.read_text())
    assert not alive(bench_pid)
    worktree = session_paths(target.load()).worktree
    assert (worktree / "src" / "mode.txt").read_text() == "ok\n"
    assert not session_paths(target.load()).inflight.exists()
