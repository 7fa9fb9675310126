"""What `init` recognises in a repository, and the bench it writes for it.

A Cargo crate with criterion benches (or libtest `#[bench]` ones), a Python project whose tests
use pytest-benchmark's `benchmark` fixture, a Go module with `Benchmark` functions: each gets a
bench script that runs the project's own benchmarks and a config that reads their output in the
tool's format (bench/formats.py), a build step where the toolchain has one (so that runs measure
the code, not the compiler), its usual tests as the checks, and its sources as the scope.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

__all__ = ["ECOSYSTEMS", "Ecosystem", "detect_ecosystem", "python_ecosystem"]

# Directories no ecosystem's sources are looked for in.
SKIP = {".git", "target", "node_modules", ".venv", "venv", "__pycache__", "build", "vendor"}
MAX_FILES = 5000  # a look at this many files is enough to tell


@dataclass(frozen=True)
class Ecosystem:
    name: str
    says: str  # what init found, for the user
    bench: str  # the bench script's commands, run from the repository's root
    checks: str  # the checks script's commands
    build: str = ""  # [bench] build
    format: str = ""  # [bench] format ("" leaves it auto)
    output: str = ""  # [bench] output
    go_bench: bool = False
    keep: tuple[str, ...] = ()  # [bench] keep: build output a revert leaves (each arm its own)
    scope: tuple[str, ...] = ("src/**",)
    metrics: str = ""  # how its metric names read, for the user


def detect_ecosystem(directory: Path, python: str = "python3") -> Ecosystem | None:
    """The first ecosystem `directory` is recognisably in, or None."""
    files = _files(directory)
    cargo = directory / "Cargo.toml"
    if cargo.is_file():
        manifest = cargo.read_text(encoding="utf-8", errors="replace")
        if re.search(r"^\s*criterion\s*=", manifest, re.M):
            return ECOSYSTEMS["cargo-criterion"]
        if any(p.suffix == ".rs" and "#[bench]" in _text(p) for p in files):
            return ECOSYSTEMS["cargo-libtest"]
    if (directory / "go.mod").is_file() and any(
        p.name.endswith("_test.go") and re.search(r"^func Benchmark", _text(p), re.M) for p in files
    ):
        return ECOSYSTEMS["go"]
    tests = [p for p in files if p.suffix == ".py" and re.search(r"\bbenchmark\b", _text(p))]
    if any(re.search(r"def test\w*\([^)]*\bbenchmark\b", _text(p)) for p in tests):
        return python_ecosystem(python)
    return None


def python_ecosystem(python: str) -> Ecosystem:
    """pytest-benchmark's, run with `python`."""
    pytest = f"{python} -m pytest -q -p no:cacheprovider"
    return Ecosystem(
        name="pytest-benchmark",
        says="a Python project whose tests use pytest-benchmark",
        bench=(
            f"{pytest} --benchmark-only --benchmark-json=.autoresearch-bench.json "
            "--benchmark-warmup=on"
        ),
        checks=f"{pytest} --benchmark-skip",
        format="pytest-benchmark",
        output=".autoresearch-bench.json",
        scope=("**/*.py",),
        metrics="test_name_ns: each test's median, in nanoseconds (its group first)",
    )


ECOSYSTEMS = {
    "cargo-criterion": Ecosystem(
        name="cargo-criterion",
        says="a Cargo crate with criterion benches",
        bench="cargo bench --quiet",
        checks="cargo test --quiet",
        build="cargo bench --no-run --quiet",
        format="criterion",
        keep=("target/",),
        scope=("src/**",),
        metrics="group_function_param_ns: criterion's estimate, in nanoseconds",
    ),
    "go": Ecosystem(
        name="go",
        says="a Go module with Benchmark functions",
        bench="go test -run '^$' -bench . -count 1 ./...",
        checks="go vet ./... && go test -count 1 ./...",
        go_bench=True,
        scope=("**/*.go",),
        metrics="name_sub_ns_op, name_sub_bytes_op, name_sub_allocs_op: go test -bench rows",
    ),
    "pytest-benchmark": python_ecosystem("python3"),
}
# The same crate with libtest's #[bench] functions instead: read as libtest's rows.
ECOSYSTEMS["cargo-libtest"] = replace(
    ECOSYSTEMS["cargo-criterion"],
    name="cargo-libtest",
    says="a Cargo crate with libtest #[bench] benches",
    format="libtest",
    metrics="bench_name_ns: ns/iter",
)


def _files(directory: Path) -> list[Path]:
    found: list[Path] = []
    for root, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d not in SKIP)
        found += (Path(root) / name for name in sorted(names))
        if len(found) >= MAX_FILES:
            break
    return found


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:200_000]
    except OSError:
        return ""
