"""The METRIC channel: a descriptor the bench script writes its METRIC lines to and closes for
the program it times, so that nothing the program prints passes for a measurement."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from conftest import dedent, experiments, run

from autoresearch.bench.channel import Channel
from autoresearch.bench.metrics import metric_channel, run_output

CHANNEL_BENCH = dedent(
    f"""
    #!/usr/bin/env bash
    set -euo pipefail
    cd "$(dirname "$0")"
    # METRIC lines go to the loop's channel (stdout when run by hand), which the workload never
    # holds: moved to a descriptor of its own, and closed for the program.
    exec {{metrics}}>&"${{AUTORESEARCH_METRIC_FD:-1}}"
    if [ -n "${{AUTORESEARCH_METRIC_FD:-}}" ]; then exec {{AUTORESEARCH_METRIC_FD}}>&-; fi
    ( exec {{metrics}}>&-; {sys.executable} src/work.py )
    echo "METRIC time_ms=$(cat src/value.txt)" >&"$metrics"
    echo "METRIC sentinel_ms=50" >&"$metrics"
    """
)

# The candidate's workload: prints forged lines, and writes them to every descriptor it can.
FORGER = dedent(
    """
    import os
    print("METRIC time_ms=1.0")
    print("METRIC sentinel_ms=1.0")
    print("BenchmarkWork-2  1  1.0 ns/op")
    reached = []
    for fd in [int(os.environ.get("AUTORESEARCH_METRIC_FD", "3")), *range(3, 64)]:
        try:
            os.write(fd, b"METRIC time_ms=1.0\\n")
            reached.append(fd)
        except OSError:
            pass
    print("forger reached descriptors:", reached)
    """
)


@pytest.mark.e2e
@pytest.mark.parametrize("sandbox", ["off", "auto"])
def test_what_the_workload_prints_is_not_a_measurement(target, sandbox):
    target.configure(sandbox=sandbox)
    target.use_bench("ch.sh", CHANNEL_BENCH, "a bench that reports through the channel")
    target.add_hypothesis("01-forge", {"src/work.py": FORGER})

    run(target)

    (record,) = experiments(target)
    assert record.status == "discard", (record.status, record.error)
    log = Path(record.bench_logs[-1])
    text, source = run_output(log)
    assert source == str(metric_channel(log))
    assert text == "METRIC time_ms=100\nMETRIC sentinel_ms=50\n"
    assert "forger reached descriptors: []" in log.read_text()


def test_a_bench_that_never_uses_the_channel_is_read_from_its_output(target):
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})

    run(target)

    (record,) = experiments(target)
    assert record.status == "keep"
    assert run_output(record.bench_logs[-1])[1] == record.bench_logs[-1]


def test_a_channel_closes_its_write_end_once_and_never_a_descriptor_opened_since(tmp_path):
    """A run's channel is kept, then closed (measure.py's finally): between the two, another
    thread (an agent preparing the next proposal) may open a descriptor that takes the write
    end's number; the second close must leave it alone (it was the exec-status pipe of that
    thread's git call, which then read the next run's channel and hung the night)."""
    channel = Channel()
    number = channel.write_end
    channel.keep(tmp_path / "run.log")
    taken: list[int] = []
    try:
        while not taken or taken[-1] < number:  # the lowest free numbers, up to the freed one
            taken.append(os.open(os.devnull, os.O_RDONLY))
        assert number in taken
        channel.close()
        os.fstat(number)  # still ours: raises when the second close took it
    finally:
        for fd in taken:
            os.close(fd)
