"""The executor seam: a night measures through the executor it is given, and the suite's
simulated one (inprocess.py) says what the real runs would have said."""

from __future__ import annotations

import pytest
from conftest import experiments, run
from inprocess import InProcess

from autoresearch.bench.runners import LocalRunner


def test_a_night_runs_its_bench_and_checks_through_the_executor_it_is_given(target):
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    executor = InProcess()

    outcome = run(target, runner=executor)

    assert outcome.kept == 1
    (record,) = experiments(target)
    runs = len(record.bench_logs) + 1  # the candidate's and the best's runs, and the checks
    assert executor.calls["real"] == 0
    assert executor.calls["in_process"] > runs


def test_what_needs_a_process_gets_one(target):
    # "slow" sleeps in its bench: a process with a timeout, never this test's thread.
    target.add_hypothesis("01-slow-win", {"src/value.txt": "80\n", "src/mode.txt": "slow\n"})
    executor = InProcess()

    run(target, runner=executor, env={"BENCH_SLOW_S": "0"})

    (record,) = experiments(target)
    assert record.status == "keep"
    candidate_runs = sum("candidate" in log for log in record.bench_logs)
    assert executor.calls["real"] >= candidate_runs > 0
    assert executor.calls["in_process"] > 0  # the best's runs, and the calibration's


@pytest.mark.parametrize("mode", ["ok", "crash", "garbage", "nometric", "writes"])
@pytest.mark.parametrize("command", ["./bench.py", "./bench.py --sentinels", "./checks.py"])
def test_in_process_runs_say_what_the_process_would_have(target, tmp_path, mode, command):
    (target.root / "src" / "mode.txt").write_text(f"{mode}\n")
    env = {"BENCH_FACTORS": "0.9,1.1", "BENCH_COUNTER": str(tmp_path / "counter")}
    done = {}
    for name, runner in {"process": LocalRunner(), "in-process": InProcess()}.items():
        (tmp_path / "counter").unlink(missing_ok=True)
        result = runner.run(
            command, cwd=target.root, log_path=tmp_path / f"{name}.log", timeout_s=60, env=env,
            stop=None, on_start=None, token=None,
        )  # fmt: skip
        done[name] = (result.exit_code, result.timed_out, sorted(result.tail.splitlines()))
    assert done["in-process"] == done["process"]
