"""A Python package benched with pytest-benchmark, as a new user sets it up: `init` finds the
benchmark tests and writes the bench (pytest writing `--benchmark-json` to the file the loop
reads) and the checks (the other tests), nothing is written by hand but the hypotheses, and the
night keeps the known win and not the null change; the PR names the metric and the interpreter.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import edit_file, run_cli
from ecosystem_night import base_frames, measured_with, night, project, queue_win_and_null
from synthetic import PYTEST_INI

from autoresearch.profiles import in_tree

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


@pytest.mark.slow(seconds=90)
def test_a_night_on_a_python_package_benched_with_pytest_benchmark(tmp_path):
    files = {"fibmod.py": SLOW, "test_fib_bench.py": BENCH_TEST, "test_fibmod.py": TEST}
    # The project's own pytest settings: short benchmark runs (the test's time, not a night's),
    # without the plugins of autoresearch's own tests.
    ini = PYTEST_INI.rstrip("\n") + " --benchmark-max-time=0.02 --benchmark-min-rounds=10\n"
    repo = project(tmp_path, "fibby", {**files, "pytest.ini": ini})

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
    text = (repo / "autoresearch.toml").read_text()
    assert 'output = ".autoresearch-bench.json"' in text and 'unit = "ns"' in text
    queue_win_and_null(
        repo,
        "fibmod.py",
        SLOW,
        ("Cache fib", "each F(k) computed once", FAST),
        ("Say F(n)", "none: a docstring", NULL),
    )

    check = run_cli("check", cwd=repo)
    assert check.returncode == 0, check.stdout + check.stderr
    assert any(line.split()[:1] == ["test_fib_ns"] for line in check.stdout.splitlines())

    journal = night(repo, "test_fib_ns", "Cache fib", "Say F(n)")
    assert "Python 3" in measured_with(repo, "test_fib_ns")
    # The base's profile (init's py-spy command, confined like the bench) names the function
    # the win rewrites, by its file in the repository, with its costliest line: of the
    # repository's own code, the most time in itself (pytest's start outweighs it whole).
    own = [t for t in base_frames(repo, journal) if in_tree(t["frame"])]
    fib = max(own, key=lambda t: t["self_pct"])
    assert (fib["frame"], fib["line"]) == ("fib (fibmod.py)", "fibmod.py:3"), own
    # The keep's differential profile: fib's own time gone with the cache.
    kept = next(r for r in journal.experiments if r.status == "keep").kept_commit
    after = {t["frame"]: t for t in base_frames(repo, journal, kept)}
    assert after.get("fib (fibmod.py)", {"self_pct": 0.0})["self_pct"] < fib["self_pct"] / 2
    shown = run_cli("profile", cwd=repo)
    assert "in the repository's own code:" in shown.stdout, shown.stdout


@pytest.mark.slow(seconds=60)
def test_an_installed_src_layout_is_measured_from_the_arm_s_tree(tmp_path):
    """The project installed in its virtualenv (`pip install -e .`: a path to your checkout's
    src/ in site-packages), runs unconfined: imported from there, both arms would measure
    your checkout's slow code and the win would never be kept, and the checks would test
    your checkout, not the candidate. init's bench imports the tree's src/ first."""
    files = {
        "src/fibmod/__init__.py": SLOW,
        "tests/test_fib_bench.py": BENCH_TEST,
        "tests/test_fibmod.py": TEST,
    }
    ini = PYTEST_INI.rstrip("\n") + " --benchmark-max-time=0.02 --benchmark-min-rounds=10\n"
    repo = project(tmp_path, "fibby", {**files, "pytest.ini": ini})
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", venv],
        check=True,
    )
    (site,) = venv.glob("lib/python3*/site-packages")
    (site / "__editable__.fibby-0.1.0.pth").write_text(f"{repo / 'src'}\n")  # what pip writes
    python = venv / "bin" / "python"
    imported = subprocess.run(
        [python, "-c", "import fibmod; print(fibmod.__file__)"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert imported.stdout.startswith(str(repo / "src")), imported.stdout

    init = run_cli("init", "--metric", "test_fib_ns", "--python", str(python), cwd=repo)
    assert init.returncode == 0, init.stderr
    edit_file(repo / "autoresearch.toml", {'mode = "auto"': 'mode = "off"'})
    queue_win_and_null(
        repo,
        "src/fibmod/__init__.py",
        SLOW,
        ("Cache fib", "each F(k) computed once", FAST),
        ("Say F(n)", "none: a docstring", NULL),
    )
    night(repo, "test_fib_ns", "Cache fib", "Say F(n)")
