"""Does one bench run as five short repetitions measure steadier than one long run?

python benchmarks/bench_repetitions.py [--runs 16]

The bench `init` writes for a Go module ran each benchmark once for Go's default second
(`-count 1`); it now runs five of 200 ms (`-count 5 -benchtime 200ms`), the same time, reading
their median as the metric and their fastest as the `[metric] fallback`. On the first hour's Go
module (tests/test_first_hour.py, `BenchmarkSum64/1KiB`, its test binary built once), the two
run alternately, `--runs` times each, quiet and then with another process keeping a core busy;
a row per way of reading a run: the spread of that reading across runs, as the calibration
reads it (1.4826 x MAD / median) and as a standard deviation (which the outliers a slow second
makes move), and the median run's value. Figures go to docs/results/bench_repetitions/.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from machine_load import a_core_busy
from results import record

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import test_first_hour as go  # noqa: E402

WAYS = {  # a way of running the bench, and how many rows of the benchmark it prints
    "one 1 s run (-count 1)": ["-test.count", "1", "-test.benchtime", "1s"],
    "five 200 ms runs (-count 5 -benchtime 200ms)": [
        "-test.count",
        "5",
        "-test.benchtime",
        "200ms",
    ],
}
ROW = re.compile(r"^BenchmarkSum64/1KiB\S*\s+\d+\s+([\d.]+) ns/op", re.M)


def build(scratch: Path) -> Path:
    """The module's test binary: the same code every run, no compile in the timing."""
    (scratch / "go.mod").write_text("module example.com/hashy\n\ngo 1.22\n")
    (scratch / "hashy.go").write_text(go.SLOW)
    (scratch / "hashy_test.go").write_text(go.TESTS)
    binary = scratch / "hashy.test"
    subprocess.run(["go", "test", "-c", "-o", str(binary), "."], cwd=scratch, check=True)
    return binary


def one_run(binary: Path, flags: list[str]) -> list[float]:
    """One bench run's rows of the benchmark, in ns/op."""
    argv = [str(binary), "-test.run", "^$", "-test.bench", "^BenchmarkSum64$/^1KiB$", *flags]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return [float(v) for v in ROW.findall(out)]


def spread(values: list[float]) -> dict:
    median = statistics.median(values)
    mad = statistics.median(abs(v - median) for v in values)
    return {
        "robust_cv_pct": round(100 * 1.4826 * mad / median, 2),
        "sd_pct": round(100 * statistics.stdev(values) / statistics.mean(values), 2),
        "median_ns_op": round(median, 1),
    }


def measure(binary: Path, runs: int, condition: str) -> list[dict]:
    readings: dict[str, list[float]] = {}
    for _ in range(runs):  # alternately: a phase of the machine's falls on both alike
        for way, flags in WAYS.items():
            rows = one_run(binary, flags)
            readings.setdefault(f"{way}: its median", []).append(statistics.median(rows))
            if len(rows) > 1:
                readings.setdefault(f"{way}: its fastest", []).append(min(rows))
    return [
        {"reading": name, "runs": len(values), **spread(values), "condition": condition}
        for name, values in readings.items()
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=16, help="bench runs of each way, per state")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        binary = build(Path(scratch))
        for busy in (False, True):
            with a_core_busy(busy):
                found = measure(binary, args.runs, "a core busy" if busy else "quiet")
            for row in found:
                cv, sd, median = row["robust_cv_pct"], row["sd_pct"], row["median_ns_op"]
                print(
                    f"{row['condition']:11} {row['reading']:40} robust cv {cv:5.2f}%  "
                    f"sd {sd:5.2f}%  median {median:9.1f} ns/op",
                    flush=True,
                )
            rows += found
    record("bench_repetitions", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
