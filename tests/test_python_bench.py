"""A Python package benched with pytest-benchmark, as a new user sets it up: `init`, the bench
writing `--benchmark-json` to a file the loop reads (`[bench] output`, its format recognised),
a night that keeps the known win and not the null change, and a PR that names the metric.
"""

from __future__ import annotations

import sys

import pytest
from conftest import git, run_cli
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
BENCH = f"""#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")"
exec {sys.executable} -m pytest -q -p no:cacheprovider bench_fib.py \\
  --benchmark-json=.bench.json --benchmark-min-rounds=15 --benchmark-max-time=0.01 \\
  --benchmark-warmup=off > /dev/null
"""
CHECKS = f"""#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")"
{sys.executable} -c 'import fibmod; assert fibmod.fib(20) == 6765'
"""


def test_a_night_on_a_python_package_benched_with_pytest_benchmark(tmp_path):
    repo = tmp_path / "fibby"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    (repo / "fibmod.py").write_text(SLOW)
    (repo / "bench_fib.py").write_text(BENCH_TEST)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "fibby")

    init = run_cli(
        "init", "--metric", "test_fib_ns", "--unit", "ns", "--scope", "fibmod.py", cwd=repo
    )
    assert init.returncode == 0, init.stderr
    (repo / "autoresearch.sh").write_text(BENCH)
    (repo / "autoresearch.checks.sh").write_text(CHECKS)
    config = repo / "autoresearch.toml"
    text = config.read_text()
    edits = {
        '# output = "bench.json"': 'output = ".bench.json"',
        "min_runs = 3": "min_runs = 4",
        "max_runs = 28": "max_runs = 8",
        "looks = 7": "looks = 2",
        "target_effect_pct = 5.0": "target_effect_pct = 25.0",
        "confirm_runs = 15": "confirm_runs = 6",
    }
    for old, new in edits.items():
        assert old in text, old
        text = text.replace(old, new, 1)
    config.write_text(text)
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
