"""A first hour per ecosystem, as the README says it, at `init`'s defaults.

python benchmarks/first_hour.py [--ecosystem python,go,rust] [--busy]

For each ecosystem, a small real project (the fixtures of its slow test: a Python package with
pytest-benchmark, a Go module with `go test -bench`, a Rust crate with criterion) in a fresh
git repository; `autoresearch init` with only the flags the README names; three hypotheses
queued (the known win, a null change, a regression); then `check` and `run` with no edit of
the config and no `--accept-noise`. A row per ecosystem: one bench run's seconds and what the
calibration can detect (as `check` says them), whether the night was refused as too noisy,
its minutes, each hypothesis' status, and the confirmed change. What #53 asks of a first
hour: the win kept, neither the null nor the regression, no refusal on a quiet machine, a
night of three hypotheses under 30 minutes. Figures go to docs/results/first_hour/.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine_load import a_core_busy
from results import record

from autoresearch.journal.store import read_journal

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the ecosystems' fixtures, as their slow tests have them

import test_first_hour as go  # noqa: E402
import test_python_bench as py  # noqa: E402
import test_rust_bench as rs  # noqa: E402
from ecosystem_night import project  # noqa: E402
from synthetic import unified_patch  # noqa: E402


def _ecosystems() -> dict[str, dict]:
    """Each: its files, init's flags, the file the hypotheses change, and that file's slow
    text with the win, the null and the regression."""
    return {
        "python": {
            "files": {
                "fibmod.py": py.SLOW,
                "test_fib_bench.py": py.BENCH_TEST,
                "test_fibmod.py": py.TEST,
            },
            "init": ["--metric", "test_fib_ns", "--scope", "fibmod.py", "--python", sys.executable],
            "path": "fibmod.py",
            "slow": py.SLOW,
            "win": py.FAST,
            "null": py.NULL,
            "regression": py.SLOW.replace(
                "    return n if", "    sum(range(48))  # a leftover check\n    return n if"
            ),
        },
        "go": {
            "files": {
                "go.mod": "module example.com/hashy\n\ngo 1.22\n",
                "hashy.go": go.SLOW,
                "hashy_test.go": go.TESTS,
            },
            "init": ["--metric", "sum64_1kib_ns_op", "--unit", "ns", "--scope", "hashy.go"],
            "path": "hashy.go",
            "slow": go.SLOW,
            "win": go.FAST,
            "null": go.SLOW.replace("// Sum64 is 64-bit", "// Sum64 is the 64-bit"),
            "regression": go.SLOW.replace("i < 24", "i < 48"),
        },
        "rust": {
            "files": {
                "Cargo.toml": rs.CARGO,
                "src/lib.rs": rs.SLOW,
                "benches/fib.rs": rs.BENCH.replace(
                    # criterion at its defaults: the bench init writes sizes the run
                    "    config = Criterion::default()\n"
                    "        .warm_up_time(Duration::from_millis(100))\n"
                    "        .measurement_time(Duration::from_millis(300))\n"
                    "        .sample_size(10);\n",
                    "    config = Criterion::default();\n",
                ).replace("use std::time::Duration;\n", ""),
                ".gitignore": "target/\nCargo.lock\n",
            },
            "init": ["--metric", "fib_20_ns"],
            "fetch": ["cargo", "fetch", "--quiet"],  # the README's step for a Cargo project
            "path": "src/lib.rs",
            "slow": rs.SLOW,
            "win": rs.FAST,
            "null": rs.NULL,
            "regression": rs.SLOW.replace(
                "    if n < 2 { n } else { fib(n - 1) + fib(n - 2) }",
                # eight opaque calls a call, adding nothing
                "    if n < 2 { n } else { (0..8u64).map(std::hint::black_box).fold(0, |a, _| a)"
                " + fib(n - 1) + fib(n - 2) }",
            ),
        },
    }


def cli(repo: Path, *args: str, timeout: float = 7200) -> subprocess.CompletedProcess:
    """This tree's `autoresearch` in `repo`."""
    return subprocess.run(
        [sys.executable, "-m", "autoresearch", *args],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def first_hour(name: str, spec: dict, parent: Path) -> dict:
    """init, the three hypotheses, check, run: the ecosystem's row."""
    repo = project(parent, name, spec["files"])
    if "fetch" in spec:
        subprocess.run(spec["fetch"], cwd=repo, check=True, timeout=1200)
    init = cli(repo, "init", *spec["init"])
    if init.returncode != 0:
        raise SystemExit(f"{name}: init failed:\n{init.stderr}")
    for number, (kind, title) in enumerate(
        (("win", "the known win"), ("null", "a null change"), ("regression", "a regression")), 1
    ):
        patch = f"Title: {title}\nMechanism: {kind}\n\n"
        patch += unified_patch(spec["path"], spec["slow"], spec[kind])
        (repo / "hypotheses" / f"0{number}-{kind}.patch").write_text(patch)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "autoresearch session"], cwd=repo, check=True)
    check = cli(repo, "check")
    said = check.stdout + check.stderr
    run_s = re.search(r"one bench run took ([\d.]+)s", said)
    detect = re.search(r"detect ([\d.]+)% with 90% power", said)
    started = time.monotonic()
    night = cli(repo, "run", "--quiet")
    minutes = (time.monotonic() - started) / 60
    journal = read_journal(repo / "experiments.jsonl")
    statuses = {r.title: str(r.status) for r in journal.experiments}
    confirmation = journal.confirmations[-1] if journal.confirmations else None
    return {
        "ecosystem": name,
        "check_exit": check.returncode,
        "run_s": float(run_s.group(1)) if run_s else None,
        "detectable_pct": float(detect.group(1)) if detect else None,
        "refused": "too noisy" in night.stderr,
        "night_exit": night.returncode,
        "night_min": round(minutes, 1),
        "statuses": statuses,
        "win_kept": statuses.get("the known win") == "keep",
        "nothing_else_kept": all(
            statuses.get(t) != "keep" for t in ("a null change", "a regression")
        ),
        "confirmed_pct": confirmation.change_pct if confirmation is not None else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ecosystem", default="python,go,rust", help="comma-separated")
    parser.add_argument("--busy", action="store_true", help="another process keeps a core busy")
    args = parser.parse_args()
    ecosystems = _ecosystems()
    wanted = args.ecosystem.split(",")
    if unknown := sorted(set(wanted) - set(ecosystems)):
        parser.error(f"unknown ecosystem {unknown}; known: {sorted(ecosystems)}")
    condition = "a core busy" if args.busy else "quiet"
    rows = []
    with tempfile.TemporaryDirectory() as scratch, a_core_busy(args.busy):
        for name in wanted:
            row = {**first_hour(name, ecosystems[name], Path(scratch)), "condition": condition}
            rows.append(row)
            print(
                f"{name:7} {condition:11} run {row['run_s']}s, detects {row['detectable_pct']}%, "
                f"refused {row['refused']}, night {row['night_min']} min (exit "
                f"{row['night_exit']}), {row['statuses']}, confirmed {row['confirmed_pct']}",
                flush=True,
            )
    record("first_hour", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
