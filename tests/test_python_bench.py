"""A Python package benched with pytest-benchmark, as a new user sets it up: `init` finds the
benchmark tests and writes the bench (pytest writing `--benchmark-json` to the file the loop
reads) and the checks (the other tests), nothing is written by hand but the hypotheses, and the
night keeps the known win and not the null change; the PR names the metric and the interpreter.
"""

from __future__ import annotations

import sys

import pytest
from conftest import edit_file, git, run_cli
from synthetic import unified_patch

from autoresearch.journal.store import read_journal

pytestmark = pytest.mark.slow  # pytest-benchmark runs, tens of them

SLOW = '''def fib(n):
    """The n-th Fibonacci number."""
    return n if n < 2 else fib(n - 1) + fib(n - 2)
'''
FAST = '''import functools


@functools.cache
def fib(n):
    """The n-th Fibonacci number."""
    return n if n < 2 else fib(n - 1) + fib(n - 2)
'''
NULL = SLOW.replace('"""The n-th Fibonacci number."""', '"""The n-th Fibonacci number, F(n)."""')
BENCH_TEST = """from fibmod import fib


def test_fib(benchmark):
    assert benchmark(fib, 18) == 2584
"""
TEST = """from fibmod import fib


def test_the_first_numbers():
    assert [fib(n) for n in range(8)] == [0, 1, 1, 2, 3, 5, 8, 13]
"""


def test_a_night_on_a_python_package_benched_with_pytest_benchmark(tmp_path):
    repo = tmp_path / "fibby"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    (repo / "fibmod.py").write_text(SLOW)
    (repo / "test_fib_bench.py").write_text(BENCH_TEST)
    (repo / "test_fibmod.py").write_text(TEST)
    # The project's own pytest settings: short benchmark runs (the test's time, not a night's).
    (repo / "pytest.ini").write_text(
        "[pytest]\naddopts = --benchmark-max-time=0.02 --benchmark-min-rounds=10\n"
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "fibby")

    init = run_cli(
        "init",
        "--metric",
        "test_fib_ns",
        "--scope",
        "fibmod.py",
        "--python",
        sys.executable,
        cwd=repo,
    )
    assert init.returncode == 0, init.stderr
    assert "found a Python project whose tests use pytest-benchmark" in init.stdout
    config = repo / "autoresearch.toml"
    text = config.read_text()
    assert 'output = ".autoresearch-bench.json"' in text and 'unit = "ns"' in text
    edits = {  # a shorter decision than a night's: the test's time
        "min_runs = 3": "min_runs = 4",
        "max_runs = 28": "max_runs = 8",
        "looks = 7": "looks = 2",
        "target_effect_pct = 5.0": "target_effect_pct = 25.0",
        "confirm_runs = 15": "confirm_runs = 6",
    }
    edit_file(config, edits)
    header = "Title: {}\nMechanism: {}\n\n"
    (repo / "hypotheses" / "01-cache.patch").write_text(
        header.format("Cache fib", "each F(k) computed once")
        + unified_patch("fibmod.py", SLOW, FAST)
    )
    (repo / "hypotheses" / "02-docstring.patch").write_text(
        header.format("Say F(n)", "none: a docstring") + unified_patch("fibmod.py", SLOW, NULL)
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "autoresearch session")

    check = run_cli("check", cwd=repo)
    assert check.returncode == 0, check.stdout + check.stderr
    assert any(line.split()[:1] == ["test_fib_ns"] for line in check.stdout.splitlines())

    done = run_cli("run", "--accept-noise", cwd=repo, timeout=600)
    assert done.returncode == 0, done.stderr
    journal = read_journal(repo / "experiments.jsonl")
    outcomes = {r.title: r.status for r in journal.experiments}
    assert outcomes["Cache fib"] == "keep", journal.experiments[0].decision
    assert outcomes["Say F(n)"] != "keep"
    kept = next(r for r in journal.experiments if r.status == "keep")
    assert kept.decision["metrics"]["test_fib_ns"]["change_pct"] < -50

    pr = run_cli("pr", cwd=repo)
    assert pr.returncode == 0, pr.stderr
    assert pr.stdout.startswith("# perf: test_fib_ns -")
    measured = next(x for x in pr.stdout.splitlines() if x.startswith("- Measured with: "))
    assert "Python 3" in measured
