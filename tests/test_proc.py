"""The subprocess helper: logs, exit codes, timeouts that kill the whole group."""

import os
import sys
import threading

import pytest
from conftest import gone

from autoresearch.bench.environ import BLAS_THREADS_ENV, PINNED_ENV, pin_blas_threads
from autoresearch.bench.proc import run
from autoresearch.cli import main
from autoresearch.process.capture import capture


def test_output_goes_to_the_log_and_the_tail(tmp_path):
    result = run(
        "echo out; echo err >&2; printf '\\xff\\n'; exit 4",
        cwd=tmp_path,
        log_path=tmp_path / "logs" / "x.log",
        timeout_s=10,
    )
    assert result.exit_code == 4 and not result.ok
    assert result.describe() == "exit code 4"
    # Output and errors are two pipes, each relayed a line at a time: each keeps its order.
    lines = result.tail.splitlines()
    assert sorted(lines) == ["err", "out", "\ufffd"]
    assert lines.index("out") < lines.index("\ufffd")
    assert (tmp_path / "logs" / "x.log").exists()


def test_timeout_kills_grandchildren(tmp_path):
    pid_file = tmp_path / "pid"
    result = run(
        f"(sleep 300 & echo $! > {pid_file}; wait) ; sleep 300",
        cwd=tmp_path,
        log_path=tmp_path / "x.log",
        timeout_s=1,
    )
    assert result.timed_out and result.describe().startswith("timed out after")
    assert gone(int(pid_file.read_text()))


def test_term_ignoring_command_is_killed(tmp_path):
    result = run(
        "trap '' TERM; sleep 300", cwd=tmp_path, log_path=tmp_path / "x.log", timeout_s=0.5
    )
    assert result.timed_out


def test_stop_event_interrupts(tmp_path):
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    seen = []
    result = run(
        "sleep 300",
        cwd=tmp_path,
        log_path=tmp_path / "x.log",
        timeout_s=60,
        stop=stop,
        on_start=seen.append,
    )
    assert result.interrupted and not result.timed_out
    assert seen and gone(seen[0])


def test_stragglers_of_a_finished_command_are_killed(tmp_path):
    pid_file = tmp_path / "pid"
    result = run(
        f"sleep 300 & echo $! > {pid_file}", cwd=tmp_path, log_path=tmp_path / "x.log", timeout_s=10
    )
    assert result.ok
    assert gone(int(pid_file.read_text()))


def test_env_is_passed(tmp_path):
    result = run(
        "echo $FOO", cwd=tmp_path, log_path=tmp_path / "x.log", timeout_s=5, env={"FOO": "bar"}
    )
    assert result.tail == "bar"
    assert os.environ.get("FOO") != "bar"


def test_capture_moves_more_than_a_pipe_holds_both_ways(tmp_path):
    # A helper that writes while its input is still being fed: feeding all of it first, or
    # reading one stream to its end before the other, would deadlock on full pipes.
    data = os.urandom(1 << 20)
    script = "import sys; d = sys.stdin.buffer.read(); sys.stderr.write('x' * 300000); "
    script += "sys.stdout.buffer.write(d[::-1]); sys.exit(3)"
    done = capture([sys.executable, "-c", script], cwd=tmp_path, stdin=data)
    assert (done.code, done.timed_out) == (3, False)
    assert done.out == data[::-1] and done.err == b"x" * 300000
    assert done.why() == "x" * 300000


def test_capture_timeout_kills_what_the_helper_started(tmp_path):
    # Its background child keeps the pipes open: the deadline, not their end, stops the wait.
    script = "sleep 300 & echo $!; exec sleep 300"
    done = capture(["sh", "-c", script], cwd=tmp_path, timeout_s=1)
    assert done.timed_out and not done.ok and done.why() == "timed out"
    assert gone(int(done.out.split()[0]))


def test_capture_of_a_helper_that_closes_its_output_waits_for_its_exit(tmp_path):
    done = capture(["sh", "-c", "exec >&- 2>&-; sleep 300"], cwd=tmp_path, timeout_s=1)
    assert done.timed_out and done.code is not None
    fast = capture(["sh", "-c", "exec >&- 2>&-; exit 5"], cwd=tmp_path, timeout_s=60)
    assert (fast.code, fast.timed_out) == (5, False)


def test_capture_of_a_missing_command_says_why(tmp_path):
    done = capture(["no-such-helper-anywhere"], cwd=tmp_path)
    assert done.code is None and not done.ok and "no-such-helper-anywhere" in done.why()


def _blas_seen_by_a_target(tmp_path) -> str:
    return run(
        "echo ${OPENBLAS_NUM_THREADS:-unset}",
        cwd=tmp_path,
        log_path=tmp_path / "blas.log",
        timeout_s=30,
    ).tail


def test_the_cli_runs_blas_on_one_thread_and_a_target_gets_the_user_s_setting(
    tmp_path, monkeypatch
):
    monkeypatch.delenv(BLAS_THREADS_ENV, raising=False)
    monkeypatch.delenv(PINNED_ENV, raising=False)
    with pytest.raises(SystemExit):
        main(["--help"])  # the pin comes before anything a command imports
    assert os.environ[BLAS_THREADS_ENV] == "1"
    assert _blas_seen_by_a_target(tmp_path) == "unset"
    # An autoresearch process started by this one (a cluster's worker) inherits the pin and
    # knows it is not the user's.
    pin_blas_threads()
    assert os.environ[PINNED_ENV] == BLAS_THREADS_ENV
    assert _blas_seen_by_a_target(tmp_path) == "unset"
    # A size the user chose is theirs: the loop keeps it and so does the bench.
    monkeypatch.setenv(BLAS_THREADS_ENV, "3")
    monkeypatch.delenv(PINNED_ENV)
    pin_blas_threads()
    assert os.environ[BLAS_THREADS_ENV] == "3"
    assert _blas_seen_by_a_target(tmp_path) == "3"
