"""Rows a timed program prints itself in its tool's format: beyond what the bench declares
(`[bench] rows`), they are an error, never a median moved."""

from __future__ import annotations

import sys

import pytest
from conftest import dedent, experiments, run

from autoresearch.bench.metrics import read_run_metrics
from autoresearch.config import BenchConfig
from autoresearch.errors import MetricParseError

ROWS_BENCH = dedent(
    f"""
    #!/usr/bin/env bash
    set -euo pipefail
    cd "$(dirname "$0")"
    {sys.executable} src/work.py
    echo "BenchmarkTime-2  1  $(cat src/value.txt) ns/op"
    echo "METRIC sentinel_ms=50"
    """
)
FORGER = 'print("BenchmarkTime-2  1  1.0 ns/op\\nBenchmarkTime-2  1  1.0 ns/op")\n'


@pytest.mark.e2e
@pytest.mark.parametrize("declared", [0, 1])
def test_rows_the_workload_prints_beyond_the_declared_count_are_a_crash(target, declared):
    config = target.configure()
    text = config.read_text().replace("[bench]\n", f"[bench]\ngo_bench = true\nrows = {declared}\n")
    config.write_text(text.replace('name = "time_ms"', 'name = "time_ns_op"', 1))
    target.use_bench("rows.sh", ROWS_BENCH, "a bench read in go test -bench rows")
    target.add_hypothesis("01-forge", {"src/work.py": FORGER})

    run(target)

    (record,) = experiments(target)
    if declared:
        assert record.status == "crash", (record.status, record.error)
        assert "time_ns_op: 3 rows in one run, and the bench declares 1" in record.error
    else:  # undeclared: the two forged rows are the median, the null passes for a win
        assert record.status == "keep"


def test_a_declared_count_lets_the_tool_s_own_repeats_through():
    rows = "".join(f"BenchmarkWork-2  1  {v} ns/op\n" for v in (10, 12, 11))
    bench = BenchConfig(format="go", rows=3)

    assert read_run_metrics(bench, rows, None, "log") == {"work_ns_op": 11, "work_min_ns_op": 10}
    with pytest.raises(MetricParseError, match=r"log: work_ns_op: 4 rows .* declares 3"):
        read_run_metrics(bench, rows + "BenchmarkWork-2  1  1 ns/op\n", None, "log")
