"""The subprocess helper: logs, exit codes, timeouts that kill the whole group."""

import os
import threading

from conftest import gone

from autoresearch.bench.proc import run


def test_output_goes_to_the_log_and_the_tail(tmp_path):
    result = run(
        "echo out; echo err >&2; printf '\\xff\\n'; exit 4",
        cwd=tmp_path,
        log_path=tmp_path / "logs" / "x.log",
        timeout_s=10,
    )
    assert result.exit_code == 4 and not result.ok
    assert result.describe() == "exit code 4"
    assert result.tail == "out\nerr\n\ufffd"
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
