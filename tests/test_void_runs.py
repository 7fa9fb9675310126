"""A bench run that measured nothing is never a value: a zero where no run measures one, or an
output that says its commands failed while the script exited 0 (bench/void_runs.py)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from conftest import dedent, experiments, git, run, run_cli
from test_sandbox import confine

from autoresearch.bench.bwrap import bwrap_problem
from autoresearch.bench.void_runs import denied_path, void_reason

# What a pi session's bench did, confined: each `go test` failed on a read-only cache in the
# home, the script printed its default and exited 0.
SWALLOWING_BENCH = dedent(
    """
    #!/usr/bin/env bash
    set -u
    cd "$(dirname "$0")"
    cache="${BENCH_CACHE:-$HOME/.cache/autoresearch-void-test}"
    t=0
    if mkdir -p "$cache" && touch "$cache/stamp"; then t=$(cat src/value.txt); fi
    echo "METRIC time_ms=$t"
    echo "METRIC sentinel_ms=50"
    """
)


@pytest.mark.parametrize(
    ("output", "said"),
    [
        ("--- FAIL: TestGet (0.00s)\nFAIL\tgithub.com/x/y\t0.01s\n", "a Go test or benchmark"),
        ("panic: runtime error: index out of range [3]\n", "a Go program panicked"),
        ("thread 'main' panicked at src/lib.rs:3:5:\n", "a Rust program panicked"),
        ('Traceback (most recent call last):\n  File "b.py"\n', "a Python program raised"),
        ("./bench.sh: line 4: gotest: command not found\n", "not found"),
        ("go: mkdir /root/.cache/go-build/ab: read-only file system\n", "refused"),
        ("open /srv/data: Permission denied\n", "refused"),
    ],
)
def test_an_output_that_says_a_command_failed_is_no_measurement(output, said):
    reason = void_reason(f"warming up\n{output}METRIC time_ms=12\n", {"time_ms": 12.0}, [])
    assert reason is not None and said in reason


def test_a_zero_is_a_value_only_for_a_metric_that_counts():
    assert void_reason("", {"time_ms": 0.0}, [("time_ms", "")]) is not None
    assert void_reason("", {"ops_s": 0.0}, [("ops_s", "ops/s")]) is not None
    # An allocation win to zero, a count by its name or its unit: a value.
    assert void_reason("", {"get_allocs_op": 0.0}, [("get_allocs_op", "")]) is None
    assert void_reason("", {"spills": 0.0}, [("spills", "count")]) is None
    # Benign output and a real figure.
    said = "ok  \tgithub.com/x/y\t0.31s\nPASS\nBenchmarkGet-2  100  12 ns/op\n"
    assert void_reason(said, {"time_ms": 12.0}, [("time_ms", "")]) is None


def test_the_denied_path_is_read_from_the_refusal():
    text = "x\ntouch: cannot touch '/root/.cache/void/stamp': Read-only file system\n"
    assert denied_path(text) == "/root/.cache/void/stamp"
    gnu = "mkdir: cannot create directory ‘/home/u/.cache’: Read-only file system"
    assert denied_path(gnu) == "/home/u/.cache"
    assert denied_path("nothing refused\n") is None


def test_a_candidate_whose_bench_printed_zero_is_a_crash_not_a_perfect_win(target):
    """A lower-is-better metric at zero would be a -100% "win": kept, then every later
    candidate judged against nothing."""
    target.add_hypothesis("01-zero", {"src/value.txt": "0\n"})
    target.add_hypothesis("02-win", {"src/value.txt": "80\n"})

    run(target)

    records = experiments(target)
    assert [(r.title, r.status) for r in records] == [("01-zero", "crash"), ("02-win", "keep")]
    assert "measured nothing: it printed time_ms=0" in (records[0].error or "")


@pytest.mark.e2e
@pytest.mark.skipif(bwrap_problem() is not None, reason="needs bubblewrap")
def test_check_names_the_path_a_confined_bench_was_denied_and_what_it_measures_unconfined(
    target, request
):
    target.use_bench("swallow.sh", SWALLOWING_BENCH, "a bench that swallows its failures")
    confine(target)
    # A home outside /tmp (a confined run's /tmp is a private one it may write).
    home = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="autoresearch-home-"))
    request.addfinalizer(lambda: shutil.rmtree(home, ignore_errors=True))
    env = {"HOME": str(home)}

    done = run_cli("check", cwd=target.root, env=env)

    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert "the bench measured nothing on the unmodified code" in said
    assert "a write or read was refused" in said and "Read-only file system" in said
    assert "unconfined, as you would run it, it measured time_ms=100" in said
    assert f"the sandbox denied {os.path.realpath(home)}/.cache." in said
    assert "[sandbox] caches" in said
    # With the cache in the tree, where a confined run writes, the same bench measures.
    text = target.config_path.read_text().replace(
        "[bench]\n", '[bench]\nenv = { BENCH_CACHE = "cache" }\n', 1
    )
    target.config_path.write_text(text)
    git(target.root, "commit", "-qam", "the cache in the tree")

    again = run_cli("check", cwd=target.root, env=env)

    assert again.returncode == 0, again.stdout + again.stderr
