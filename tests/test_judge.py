"""The loop as a judge for an agent driving its own session: `try`, `state`, `history`,
`ideas add|list`, driven through the real console entry point as an agent would."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import eventually, experiments, git, run_cli, unified_patch

from autoresearch.journal.records import EXIT_CODES
from autoresearch.repo.state_dir import session_paths

QUIET = {"BENCH_NOISE_PCT": "0"}


def try_cli(target, *args: str, env: dict | None = None):
    done = run_cli("try", *args, cwd=target.root, env={**QUIET, **(env or {})}, timeout=300)
    out = json.loads(done.stdout) if done.stdout.strip().startswith("{") else None
    return done, out


def test_try_a_patch_file_with_a_title_keeps_a_win(target, tmp_path):
    patch = tmp_path / "faster.patch"
    patch.write_text(unified_patch("src/value.txt", "100\n", "80\n"))

    done, out = try_cli(target, "--patch", str(patch), "--title", "Make it faster")

    assert done.returncode == 0, done.stderr
    assert out["status"] == "keep" and out["exit_code"] == 0
    assert round(out["change_pct"], 6) == -20.0 and out["ci_high_pct"] < 0
    assert out["rule"] and out["next_action_hint"]
    assert out["kept_commit"] == git(target.root, "rev-parse", "autoresearch/t").strip()
    (record,) = experiments(target)
    assert record.proposer == "try" and record.title == "Make it faster"
    assert "keep:" in done.stderr  # progress on stderr, JSON alone on stdout


def test_try_the_worktree_an_agent_edits_and_read_the_state(target):
    (target.root / "src" / "value.txt").write_text("120\n")

    done, out = try_cli(
        target, "--title", "Unroll", "--family", "loops", "--mechanism", "fewer branches"
    )

    assert done.returncode == EXIT_CODES["discard"] == 10, done.stderr
    assert out["status"] == "discard" and round(out["change_pct"], 6) == 20.0
    assert target.file("src/value.txt") == "120\n"  # the agent's worktree is its own
    state = json.loads(run_cli("state", "--json", cwd=target.root).stdout)
    assert state["baseline"] == 100 and state["experiments"] == 1
    assert state["threshold_pct"] is not None and state["noise_pct"] is not None
    assert state["budget"]["experiments_left"] == 49
    history = json.loads(run_cli("history", "--last", "5", "--json", cwd=target.root).stdout)
    (row,) = history
    assert row["status"] == "discard" and row["family"] == "loops"
    assert row["mechanism"] == "fewer branches" and row["next_action_hint"]


def test_a_try_that_edits_the_bench_is_refused_without_benching(target, tmp_path):
    patch = tmp_path / "bench.patch"
    bench = target.file("bench.py")
    patch.write_text(unified_patch("bench.py", bench, bench + "# faster\n"))
    done, out = try_cli(target, "--patch", str(patch), "--title", "Tune the bench")
    assert done.returncode == EXIT_CODES["scope_violation"], done.stderr
    assert out["status"] == "scope_violation" and "bench.py" in out["refused"]
    (record,) = experiments(target)
    assert record.bench_logs == []


@pytest.mark.e2e
def test_two_tries_at_once_and_a_try_during_run_refuse_and_what_is_measured_is_a_copy(
    target, tmp_path
):
    (target.root / "src" / "value.txt").write_text("80\n")
    env = {**os.environ, **QUIET, "BENCH_SLEEP_S": "0.4"}
    first = subprocess.Popen(
        [sys.executable, "-m", "autoresearch.cli", "try", "--title", "Faster", "--quiet"],
        cwd=target.root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lock = target.root / ".git" / "autoresearch" / "t" / "lock"
    inflight = session_paths(target.load()).inflight
    # Its first process (the pre-flight) runs once the change was read from the worktree.
    eventually(inflight.exists, what="the first try to start measuring")
    # The agent goes on editing while its try is measured: what is measured does not change.
    (target.root / "src" / "value.txt").write_text("500\n")
    second, _ = try_cli(target, "--title", "Another")
    assert second.returncode == 1
    assert "session is already running" in second.stderr
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    result = json.loads(out)
    assert result["status"] == "keep" and round(result["candidate_median"], 6) == 80.0
    # `run` holding the session refuses a try the same way.
    runner = subprocess.Popen(
        [sys.executable, "-m", "autoresearch.cli", "run", "--quiet"],
        cwd=target.root,
        env={**env, "BENCH_SLEEP_S": "2"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        eventually(lambda: str(runner.pid) in lock.read_text(), what="run to take the session")
        during, _ = try_cli(target, "--title", "During the night")
        assert during.returncode == 1 and "already running" in during.stderr
    finally:
        runner.terminate()
        runner.communicate(timeout=120)


def test_an_empty_try_and_a_try_without_title_are_clear_errors(target, tmp_path):
    done, _ = try_cli(target, "--title", "Nothing")
    assert done.returncode == 1 and "nothing to try: the change is empty" in done.stderr
    (target.root / "src" / "value.txt").write_text("90\n")
    done, _ = try_cli(target)
    assert done.returncode == 1 and "a try needs a title" in done.stderr
    assert experiments(target) == []


def test_ideas_add_and_list_leave_the_journal_section_alone(target):
    ideas = target.root / "ideas.md"
    ideas.write_text("# Ideas\n\nfree text\n")
    for text in ("presize the batch", "try a bloom filter"):
        done = run_cli("ideas", "add", text, cwd=target.root)
        assert done.returncode == 0, done.stderr
    listed = run_cli("ideas", "list", cwd=target.root)
    assert listed.stdout.splitlines() == ["- presize the batch", "- try a bloom filter"]
    assert ideas.read_text() == (
        "# Ideas\n\nfree text\n\n## Backlog\n\n- presize the batch\n- try a bloom filter\n"
    )


@pytest.mark.e2e
def test_a_detached_try_returns_an_id_at_once_and_result_reads_it(target, tmp_path):
    patch = tmp_path / "faster.patch"
    patch.write_text(unified_patch("src/value.txt", "100\n", "80\n"))
    started, out = try_cli(target, "--patch", str(patch), "--title", "Faster", "--detach")
    assert started.returncode == 0, started.stderr
    assert out["status"] == "running" and out["id"].startswith("try-")
    done = run_cli("result", out["id"], "--wait", "240", cwd=target.root, timeout=300)
    result = json.loads(done.stdout)
    assert result["status"] == "keep" and done.returncode == 0
    missing = run_cli("result", "try-nope", cwd=target.root)
    assert missing.returncode == 1 and "no try try-nope" in missing.stderr


def test_try_needs_no_proposer_nor_its_queue(target, tmp_path):
    """An agent driving its own session has no queue: `try` judges the patch all the same."""
    text = target.config_path.read_text().replace('[proposer]\ndir = "hypotheses"\n', "")
    target.config_path.write_text(text)
    git(target.root, "commit", "-qam", "no proposer table")
    target.queue.rmdir()
    patch = tmp_path / "faster.patch"
    patch.write_text(unified_patch("src/value.txt", "100\n", "80\n"))

    done, out = try_cli(target, "--patch", str(patch), "--title", "Faster, no queue")

    assert done.returncode == 0, done.stderr
    assert out["status"] == "keep"
