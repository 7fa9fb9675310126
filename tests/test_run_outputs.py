"""What a run leaves for the loop to read is the candidate's: its bench's output file, the
checks' test report, its profile. Each is read by one reader (files.read_bounded) that does
not follow a link, refuses what is not a regular file (a FIFO would hang the night, a link to
/dev/zero fill the loop's memory) and bounds the size; the layout test holds that nothing of
the package opens a file outside it but for the loop's own files. Each attack is written as
the run would leave it."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from conftest import dedent, experiments, run

from autoresearch.bench.metrics import read_run_metrics
from autoresearch.bench.testcount import read_report
from autoresearch.config import BenchConfig
from autoresearch.errors import MetricParseError

BMF = '{"work": {"latency": {"value": 100.0}}}'


def left(tree: Path, name: str, how: str) -> Path:
    """`name` in `tree` as a run could leave it: a FIFO, a link to /dev/zero or to a file
    outside the tree, or a directory."""
    path = tree / name
    if how == "fifo":
        os.mkfifo(path)
    elif how == "zero":
        path.symlink_to("/dev/zero")
    elif how == "outside":
        (tree.parent / "elsewhere.json").write_text(BMF)
        path.symlink_to(tree.parent / "elsewhere.json")
    else:
        path.mkdir()
    return path


def finishes(call, timeout_s: float = 20.0):
    """`call()`'s result (or what it raised), or a failure if it did not end in time: a hang
    here is a night hung past its signals."""
    done: dict = {}

    def target() -> None:
        try:
            done["value"] = call()
        except Exception as exc:  # what the reader raised is the result
            done["value"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout_s)
    assert not thread.is_alive(), "the reader did not come back"
    return done["value"]


@pytest.mark.parametrize("how", ["fifo", "zero", "outside", "directory"])
def test_a_bench_output_that_is_not_a_file_of_the_tree_is_the_run_s_failure(tmp_path, how):
    tree = tmp_path / "tree"
    tree.mkdir()
    left(tree, "results.json", how)
    bench = BenchConfig(output="results.json")

    got = finishes(lambda: read_run_metrics(bench, "", tree, "bench.log"))

    assert isinstance(got, MetricParseError), got
    assert "results.json" in str(got)


@pytest.mark.parametrize("how", ["fifo", "zero", "outside", "directory"])
def test_a_test_report_that_is_not_a_file_counts_nothing(tmp_path, how):
    report = left(tmp_path, "report.xml", how)

    assert finishes(lambda: read_report(report)) is None


# A bench that writes its results, then runs a step of the candidate's (a clean-up): the step
# swaps the results file for a FIFO, which the loop would then wait on forever.
SWAPPING_BENCH = dedent(
    """
    #!/usr/bin/env bash
    set -euo pipefail
    cd "$(dirname "$0")"
    printf '{"work": {"latency": {"value": %s}}}' "$(cat src/value.txt)" > results.json
    python3 src/work.py
    """
)
SWAP = "import os\nos.remove('results.json')\nos.mkfifo('results.json')\n"


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_a_candidate_that_leaves_a_fifo_for_its_results_fails_and_the_night_goes_on(target):
    config = target.configure()
    text = config.read_text().replace("[bench]\n", '[bench]\noutput = "results.json"\n', 1)
    text = text.replace('name = "time_ms"', 'name = "work_latency"')
    config.write_text(text.replace('[[sentinel]]\nname = "sentinel_ms"\nbudget_pct = 5.0\n', ""))
    target.use_bench("swap.sh", SWAPPING_BENCH, "results in a file, a clean-up step after")
    target.add_hypothesis("01-swap", {"src/work.py": SWAP, "src/value.txt": "10\n"})
    target.add_hypothesis("02-win", {"src/value.txt": "80\n"})

    run(target, real=True)

    records = {r.title: r for r in experiments(target)}
    assert records["01-swap"].status == "crash"
    assert "not a regular file (a FIFO)" in records["01-swap"].asi.rollback_reason
    assert records["02-win"].status == "keep"
