"""benchmarks/suite_cpu.py: where the suite's time goes, summed by test module from the rows
every xdist worker wrote."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "suite_cpu.py"


def summary(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)


def test_the_rows_of_every_worker_are_summed_by_module(tmp_path):
    rows = tmp_path / "tests.tsv"
    rows.write_text(
        "tests/test_a.py::one\t4.000\t1.000\t0.500\n"
        "tests/test_b.py::x[1]\t9.000\t0.250\t0.250\n"  # a test that mostly waits
        "tests/test_a.py::two\t2.000\t0.500\t1.000\n"
    )
    done = summary(str(rows))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].split() == ["tests/test_b.py", "1", "9.0", "0.2", "0.2", "8.5"]
    assert lines[2].split() == ["tests/test_a.py", "2", "6.0", "1.5", "1.5", "3.0"]
    assert "3 tests: 15.0 s wall" in lines[-1] and "the CPU alone takes 1.8 s" in lines[-1]
    over = summary(str(rows), "--over", "1").stdout.split("s of CPU:\n")[1].splitlines()
    assert [line.split() for line in over] == [
        ["1.50", "s", "tests/test_a.py::one"],
        ["1.50", "s", "tests/test_a.py::two"],
    ]


def test_a_file_that_is_not_its_rows_is_named_with_its_line(tmp_path):
    rows = tmp_path / "tests.tsv"
    rows.write_text("tests/test_a.py::one\t4.000\t1.000\t0.500\ntests/test_a.py::two\t2.0\n")
    done = summary(str(rows))
    assert done.returncode == 1
    assert done.stderr.strip() == f"{rows}:2: not a suite_cpu row (test, wall, own, children)"
    done = summary(str(tmp_path / "missing.tsv"))
    assert "missing.tsv: cannot read it (No such file or directory)" in done.stderr
