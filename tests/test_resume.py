"""Unattended: resume after kill -9 in each phase, and one loop per session."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys

import pytest
from conftest import alive, experiments, git, run, run_cli, spawn_loop, wait_for, wait_for_candidate

from autoresearch.errors import SessionBusyError
from autoresearch.journal.draft import Draft
from autoresearch.repo.state_dir import SessionLock, session_paths
from autoresearch.repo.workspace import open_workspace


def _kill9(proc):
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)


@pytest.mark.e2e
def test_kill9_during_bench_then_resume(target, tmp_path, monkeypatch):
    target.add_hypothesis("01-slow", {"src/mode.txt": "slow\n", "src/value.txt": "80\n"})
    target.add_hypothesis("02-win", {"src/sentinel.txt": "45\n"})
    started = tmp_path / "started"
    proc = spawn_loop(target, {"BENCH_SLOW_S": "60", "BENCH_STARTED": str(started)})
    wait_for_candidate(target, started)
    _kill9(proc)
    paths = session_paths(target.load())
    assert paths.inflight.exists()
    worktree = paths.worktree
    assert (worktree / "src" / "mode.txt").read_text() == "slow\n"  # left dirty by the crash

    orphan = int(started.read_text())
    assert alive(orphan)  # the bench survives its loop: it has a process group of its own

    monkeypatch.setenv("BENCH_SLOW_S", "0")
    outcome = run(target)

    assert not alive(orphan), "the resumed run did not stop the dead loop's bench"

    first, retry, second = experiments(target)
    assert (first.title, first.status) == ("01-slow", "interrupted")
    assert "bench phase" in first.asi.rollback_reason
    # Interrupted is undecided: the hypothesis runs again, once, pointing to its first try.
    assert (retry.title, retry.status, retry.retry_of) == ("01-slow", "keep", first.id)
    assert (second.title, second.retry_of) == ("02-win", None)
    assert len({first.id, retry.id, second.id}) == 3
    assert outcome.ran == 2
    assert not paths.inflight.exists()
    sessions = [s.event for s in _sessions(target)]
    assert sessions == ["start", "resume"]


@pytest.mark.e2e
def test_kill9_during_checks_then_resume(target, tmp_path):
    target.add_hypothesis("01-win", {"src/value.txt": "80\n", "src/checks_sleep.txt": "60\n"})
    started = tmp_path / "checks-started"
    proc = spawn_loop(target, {"CHECKS_STARTED": str(started)})
    wait_for(started, timeout=60)
    _kill9(proc)
    checks_pid = int(started.read_text())

    run(target, max_experiments=1)  # recovery only: the retry would sleep in the checks

    (record,) = experiments(target)
    assert record.status == "interrupted"
    assert "checks phase" in record.asi.rollback_reason
    assert target.branch_log() == ["synthetic target"]
    assert not alive(checks_pid)


def test_crash_after_commit_before_record_keeps_the_commit(target):
    """The keep commit landed, then the loop died: the next run writes the keep record."""
    config = target.load()
    paths = session_paths(config)
    ws = open_workspace(config.repo_path, config.branch, paths.worktree, "HEAD")
    parent = ws.tip()
    draft = Draft(
        paths.inflight,
        {
            "session": "t",
            "id": "t-0001",
            "n": 1,
            "title": "landed",
            "proposer": "queue",
            "source": None,
            "patch_sha256": "ab" * 32,
            "touched_files": ["src/value.txt"],
            "parent_commit": parent,
            "kept_commit": None,
            "started_at": "2026-01-01T00:00:00+00:00",
            "asi": {"mechanism": "m"},
        },
    )
    draft.phase("commit")
    pending = draft.finish("keep", None, decision={"reason": "better"})
    draft.save(pending=pending.to_dict())
    (ws.path / "src" / "value.txt").write_text("80\n")
    sha = ws.keep(["src/value.txt"], "landed\n\nExperiment-Id: t-0001\nResult: {}\n")

    run(target)

    (record,) = experiments(target)
    assert (record.id, record.status, record.kept_commit) == ("t-0001", "keep", sha)
    assert git(target.root, "rev-parse", "autoresearch/t").strip() == sha


def test_crash_during_apply_is_recorded_once(target):
    config = target.load()
    paths = session_paths(config)
    ws = open_workspace(config.repo_path, config.branch, paths.worktree, "HEAD")
    draft = Draft(
        paths.inflight,
        {
            "session": "t",
            "id": "t-0001",
            "n": 1,
            "title": "half applied",
            "proposer": "queue",
            "source": None,
            "patch_sha256": "cd" * 32,
            "touched_files": [],
            "parent_commit": ws.tip(),
            "kept_commit": None,
            "started_at": "2026-01-01T00:00:00+00:00",
            "asi": {},
        },
    )
    draft.phase("apply")
    (ws.path / "src" / "value.txt").write_text("garbage from a torn apply\n")
    (ws.path / "src" / "new.txt").write_text("untracked\n")

    run(target)
    run(target)  # a second resume must not record it again

    (record,) = experiments(target)
    assert (record.id, record.status) == ("t-0001", "interrupted")
    assert (ws.path / "src" / "value.txt").read_text() == "100\n"
    assert not (ws.path / "src" / "new.txt").exists()


def test_record_written_but_marker_left_is_not_duplicated(target):
    target.add_hypothesis("01", {"src/value.txt": "130\n"})
    run(target)
    (record,) = experiments(target)
    paths = session_paths(target.load())
    paths.inflight.write_text(json.dumps({"fields": {"id": record.id}, "phase": "commit"}))

    run(target)

    assert len(experiments(target)) == 1
    assert not paths.inflight.exists()


def test_second_loop_on_same_session_refuses(target):
    paths = session_paths(target.load())
    with SessionLock(paths.lock):
        with pytest.raises(SessionBusyError, match="already running"):
            SessionLock(paths.lock).acquire()
        done = run_cli("run", cwd=target.root)
    assert done.returncode == 1
    assert done.stderr.startswith("error: session is already running (pid ")
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_lock_whose_named_holder_is_dead_is_waited_for_not_refused(tmp_path):
    """A killed loop's child between fork and exec holds the lock's descriptor a moment
    longer than the loop lives: the next run waits for it instead of saying "busy"."""
    lock = tmp_path / "lock"
    gone = subprocess.Popen(["true"])
    gone.wait()
    lock.write_text(f"pid {gone.pid} on {socket.gethostname()}")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_FOR_A_MOMENT, str(lock)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline() == "holding\n"
    with SessionLock(lock):
        assert holder.poll() is not None  # taken once the leftover let go
    holder.communicate(timeout=30)


HOLD_FOR_A_MOMENT = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.flock(fd, fcntl.LOCK_EX)
print("holding", flush=True)
time.sleep(0.5)
"""


@pytest.mark.e2e
def test_lock_held_by_a_killed_process_is_free(target, tmp_path):
    target.add_hypothesis("01-slow", {"src/mode.txt": "slow\n"})
    started = tmp_path / "started"
    proc = spawn_loop(target, {"BENCH_SLOW_S": "60", "BENCH_STARTED": str(started)})
    # The candidate's slow run, not a quick calibration run of the best (those write `started`
    # too): killed between the two, nothing would be in flight.
    wait_for_candidate(target, started)
    status = run_cli("status", "--json", cwd=target.root)
    assert json.loads(status.stdout)["running"] is True
    _kill9(proc)

    status = run_cli("status", "--json", cwd=target.root)
    data = json.loads(status.stdout)
    assert data["running"] is False
    assert data["in_flight"]["orphaned"] is True
    SessionLock(session_paths(target.load()).lock).acquire()
    _kill_orphan(int(started.read_text()))


def _sessions(target):
    from autoresearch.journal.store import read_journal

    return read_journal(target.journal).sessions


def _kill_orphan(pid: int) -> None:
    """A bench orphaned by kill -9 of the loop keeps its group; tidy it up after the test."""
    import os

    if alive(pid):
        os.killpg(pid, signal.SIGKILL)


def test_kill9_during_calibration_then_resume(target, tmp_path):
    (target.root / "src" / "mode.txt").write_text("slow\n")
    git(target.root, "commit", "-qam", "a slow bench")
    started = tmp_path / "started"
    proc = spawn_loop(target, {"BENCH_SLOW_S": "60", "BENCH_STARTED": str(started)})
    wait_for(started, timeout=60)
    paths = session_paths(target.load())
    wait_for(paths.inflight)
    assert json.loads(paths.inflight.read_text())["phase"] == "calibration"
    _kill9(proc)
    orphan = int(started.read_text())
    assert alive(orphan)

    outcome = run(target, env={"BENCH_SLOW_S": "0"})

    assert not alive(orphan)
    assert experiments(target) == []
    assert outcome.baseline == pytest.approx(100)
    assert not paths.inflight.exists()
