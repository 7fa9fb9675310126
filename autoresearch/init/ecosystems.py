"""What `init` recognises in a repository, and the bench it writes for it.

A Cargo crate with criterion benches (or libtest `#[bench]` ones), a Python project whose tests
use pytest-benchmark's `benchmark` fixture, a Go module with `Benchmark` functions, a CMake
project with a Google Benchmark executable, a JavaScript or TypeScript package with Vitest
benchmarks, tinybench or mitata ones: each gets a
bench script that runs the project's own benchmarks and a config that reads their output in the
tool's format (readers/formats.py), a build step where the toolchain has one (so that runs measure
the code, not the compiler), its usual tests as the checks, and its sources as the scope.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from .cmake import cmake_ecosystem
from .found import REPETITIONS, Ecosystem
from .found import tree_files as _files
from .found import tree_text as _text

__all__ = [
    "ECOSYSTEMS",
    "NAMES",
    "NODE_LIBRARIES",
    "REPETITIONS",
    "Ecosystem",
    "cmake_ecosystem",
    "detect_ecosystem",
    "preloaded_ecosystem",
    "project_python",
    "python_ecosystem",
    "vitest_ecosystem",
]

# Go's tests, counted by the loop from go test's own report (bench/testcount.py): test2json
# escapes what a test prints, so a test cannot report a pass of its own.
GO_CHECKS = """go vet ./...
if [ -n "${AUTORESEARCH_TEST_REPORT:-}" ]; then  # under the loop: the report it counts
  go test -count 1 -json ./... | tee "$AUTORESEARCH_TEST_REPORT"
else
  go test -count 1 ./...
fi"""
# Cargo's tests, counted the same way from libtest's own summary of each test binary (a
# binary that exits before it, having run nothing, counts none).
CARGO_CHECKS = """if [ -n "${AUTORESEARCH_TEST_REPORT:-}" ]; then  # under the loop: its count
  cargo test --quiet 2>&1 | tee "$AUTORESEARCH_TEST_REPORT"
else
  cargo test --quiet
fi"""


def vitest_ecosystem(directory: Path, files: list[Path] | None = None) -> Ecosystem | None:
    """A JavaScript or TypeScript package with Vitest benchmarks (`*.bench.*` files and vitest
    among its dependencies): `vitest bench` writing its JSON report where the loop reads it,
    the package's tests as checks, `node_modules/` installed once per arm from the lock file
    (offline, from npm's cache: fetch before the night) and kept across reverts. None when
    it is not one."""
    package = _package(directory)
    if package is None or "vitest" not in _dependencies(package):
        return None
    found = files if files is not None else _files(directory)
    if not any(".bench." in p.name for p in found):
        return None
    return Ecosystem(
        name="vitest",
        says="a JavaScript/TypeScript package with Vitest benchmarks",
        bench="npx vitest bench --run --outputJson .autoresearch-bench.json",
        checks="npx vitest run --passWithNoTests",
        build=_npm_build(directory),
        format="vitest",
        output=".autoresearch-bench.json",
        keep=("node_modules/",),
        scope=_JS_SCOPE,
        metrics="describe_name_ns: each benchmark's median, in nanoseconds (describe_name_min_ns, "
        "its fastest sample, beside it)",
        fastest=True,
    )


_JS_SCOPE = ("**/*.js", "**/*.mjs", "**/*.cjs", "**/*.ts", "**/*.mts", "**/*.cts")


def _package(directory: Path) -> dict[str, Any] | None:
    """The package.json of `directory`, or None when it has none that reads as an object."""
    try:
        package = json.loads((directory / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return package if isinstance(package, dict) else None


def _dependencies(package: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    for key in ("dependencies", "devDependencies"):
        if isinstance(package.get(key), dict):
            found |= set(package[key])
    return found


def _npm_build(directory: Path) -> str:
    """node_modules installed once per arm: from the lock file when there is one."""
    install = "npm ci" if (directory / "package-lock.json").is_file() else "npm install"
    return f"test -d node_modules || {install} --no-audit --no-fund --loglevel=error"


# A library's results as METRIC lines (autoresearch.<library>.mjs, which node loads first),
# collected in a file and handed on to the loop's channel, which the timed program never holds.
NODE_PRELOADED = """exec {{metrics}}>&"${{AUTORESEARCH_METRIC_FD:-1}}"
if [ -n "${{AUTORESEARCH_METRIC_FD:-}}" ]; then exec {{AUTORESEARCH_METRIC_FD}}>&-; fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
export AUTORESEARCH_METRICS_OUT="$out"
preload="--import=\\"$PWD/{preload}\\""
export NODE_OPTIONS="${{NODE_OPTIONS:+$NODE_OPTIONS }}$preload"
( exec {{metrics}}>&-; {runs} )
cat "$out" >&"$metrics"
"""
# The benchmark libraries with no report of their own that node runs with a module of init's
# loaded first: what init says of them, and how their metrics read.
NODE_LIBRARIES = {
    "tinybench": "bench_task_ns: each task's median latency, in nanoseconds "
    "(bench_task_min_ns, its fastest sample, beside it)",
    "mitata": "group_name_ns: each benchmark's median (p50), in nanoseconds "
    "(group_name_min_ns, its fastest sample, beside it)",
}
_RUNNABLE = (".js", ".mjs", ".cjs")


def preloaded_ecosystem(
    directory: Path, library: str, files: list[Path] | None = None
) -> Ecosystem | None:
    """A JavaScript package benched with tinybench or mitata (`library` among its
    dependencies, and a module that imports it): its `bench` script run, or each such module
    with node, with a module node loads first (autoresearch.<library>.mjs) that prints each
    benchmark's median as a METRIC line; `node_modules/` installed as for Vitest. None when
    it is not one."""
    package = _package(directory)
    if package is None or library not in _dependencies(package):
        return None
    imports = re.compile(rf"""(from\s*|import\s*\(\s*|require\s*\(\s*)['"]{library}['"]""")
    found = files if files is not None else _files(directory)
    modules = [p for p in found if p.suffix in _RUNNABLE and imports.search(_text(p))]
    scripts = package.get("scripts")
    if not isinstance(scripts, dict):
        scripts = {}
    names = [str(p.relative_to(directory)) for p in modules]
    if isinstance(scripts.get("bench"), str):
        runs, bench_files = "npm run bench --silent", ["package.json", *names]
    elif modules:
        runs, bench_files = " && ".join(f"node {shlex.quote(n)}" for n in names), names
    else:
        return None
    preload = f"autoresearch.{library}.mjs"
    return Ecosystem(
        name=library,
        says=f"a JavaScript package with {library} benchmarks",
        bench=NODE_PRELOADED.format(runs=runs, preload=preload).rstrip("\n"),
        runs=runs,
        checks="npm test --silent",  # a package without tests fails it, saying so
        build=_npm_build(directory),
        keep=("node_modules/",),
        scope=_JS_SCOPE,
        metrics=NODE_LIBRARIES[library],
        fastest=True,
        files=(preload,),
        # A candidate that edits what the bench runs (a task made to do less, the script
        # pointed elsewhere) would measure its own bench, not the code.
        protect=tuple(bench_files),
    )


def detect_ecosystem(directory: Path, python: str = "python3") -> Ecosystem | None:
    """The first ecosystem `directory` is recognisably in, or None."""
    files = _files(directory)
    node = vitest_ecosystem(directory, files)
    for library in NODE_LIBRARIES:
        node = node or preloaded_ecosystem(directory, library, files)
    if node is not None:
        return node
    if (directory / "Cargo.toml").is_file():
        manifests = [p for p in files if p.name == "Cargo.toml"]  # a workspace's members too
        if any(_uses_criterion(_manifest(p)) for p in manifests):
            return ECOSYSTEMS["cargo-criterion"]
        if any(p.suffix == ".rs" and "#[bench]" in _text(p) for p in files):
            return ECOSYSTEMS["cargo-libtest"]
    if (directory / "go.mod").is_file() and any(
        p.name.endswith("_test.go") and re.search(r"^func Benchmark", _text(p), re.M) for p in files
    ):
        return ECOSYSTEMS["go"]
    tests = [p for p in files if p.suffix == ".py" and re.search(r"\bbenchmark\b", _text(p))]
    if any(re.search(r"def test\w*\([^)]*\bbenchmark\b", _text(p)) for p in tests):
        return python_ecosystem(python, directory)
    return cmake_ecosystem(directory, files)


# The crates a benchmark harness comes as: criterion, or a fork that stands in for it.
CRITERION_CRATES = {"criterion", "codspeed-criterion-compat"}


def _manifest(path: Path) -> dict[str, Any]:
    """A Cargo manifest's tables; {} for one that is not TOML (cargo would refuse it too)."""
    try:
        return tomllib.loads(_text(path))
    except tomllib.TOMLDecodeError:
        return {}


def _uses_criterion(manifest: dict[str, Any]) -> bool:
    """Whether a manifest depends on criterion in any of the ways Cargo takes: a plain or
    inline table (`criterion = "0.5"`, `{ version = ... }`, `.workspace = true`), the
    `[dev-dependencies.criterion]` table crates.io normalises it to, a target's own
    dependencies, or another crate renamed to it (`package = ...`)."""
    targets = manifest.get("target")
    tables = [manifest, *(targets.values() if isinstance(targets, dict) else ())]
    for table in tables:
        for kind in ("dev-dependencies", "dependencies"):
            deps = table.get(kind) if isinstance(table, dict) else None
            for name, spec in (deps if isinstance(deps, dict) else {}).items():
                renamed = spec.get("package") if isinstance(spec, dict) else None
                if name in CRITERION_CRATES or renamed in CRITERION_CRATES:
                    return True
    return False


def project_python(directory: Path, environ: Mapping[str, str]) -> tuple[str, str]:
    """The interpreter a Python project's bench runs when `init --python` names none, and why:
    the active virtualenv's, else the project's own `.venv`, else `python3` on the PATH. By
    absolute path: a worktree has no `.venv` of its own, and a confined run finds the path
    again (bench/sandbox.py shows what a command names)."""
    active = environ.get("VIRTUAL_ENV")
    for where, why in (
        (active, "the active virtualenv"),
        (directory / ".venv", "the project's .venv"),
    ):
        if where and (Path(where) / "bin" / "python").is_file():
            return str((Path(where) / "bin" / "python").absolute()), why
    return "python3", "python3 on the PATH"


def python_ecosystem(python: str, directory: Path | None = None) -> Ecosystem:
    """pytest-benchmark's, run with `python`; with the project's package under src/ (in
    `directory`), that src/ first on PYTHONPATH: a project installed in its interpreter (`pip
    install -e .`, `uv sync`) is otherwise imported from your checkout, or from
    site-packages, and every arm would measure and test that same code. Before
    site-packages, an editable install's path and its import hook alike; `env`, so that the
    profiler's command (py-spy ... -- COMMAND) takes it too."""
    first = _source_root(directory) if directory is not None else ""
    where = f'env PYTHONPATH="$PWD/{first}${{PYTHONPATH:+:$PYTHONPATH}}" ' if first else ""
    pytest = f"{where}{python} -m pytest -q -p no:cacheprovider"
    imports = f" (the tests import {first}/ from the tree: first on PYTHONPATH)" if first else ""
    return Ecosystem(
        name="pytest-benchmark",
        says=f"a Python project whose tests use pytest-benchmark{imports}",
        bench=(
            f"{pytest} --benchmark-only --benchmark-json=.autoresearch-bench.json "
            "--benchmark-warmup=on"
        ),
        checks=f"{pytest} --benchmark-skip",
        format="pytest-benchmark",
        output=".autoresearch-bench.json",
        scope=("**/*.py",),
        metrics="test_name_ns: each test's median, in nanoseconds (its group first; "
        "test_name_min_ns, its fastest round, beside it)",
        fastest=True,
    )


def _source_root(directory: Path) -> str:
    """The folder a src layout keeps the project's code in ("src"), when there is one: a
    package or module under it, and not a package itself (then `import src...` is meant,
    from the root); "" for a flat layout, which `python -m pytest` imports from the tree."""
    src = directory / "src"
    if not src.is_dir() or (src / "__init__.py").exists():
        return ""
    code = [p for p in src.iterdir() if p.suffix == ".py" or (p.is_dir() and any(p.glob("*.py")))]
    return "src" if code else ""


ECOSYSTEMS = {
    "cargo-criterion": Ecosystem(
        name="cargo-criterion",
        says="a Cargo crate with criterion benches",
        bench="cargo bench --quiet",
        checks=CARGO_CHECKS,
        build="cargo bench --no-run --quiet",
        # The crates, into cargo's cache in your home, which confined builds read offline
        # (CARGO_NET_OFFLINE): a Cargo.lock the crate ignores resolves from the index it left.
        fetch="cargo fetch --quiet",
        format="criterion",
        keep=("target/",),
        scope=("src/**",),
        metrics="group_function_param_ns: criterion's estimate, in nanoseconds",
    ),
    "go": Ecosystem(
        name="go",
        says="a Go module with Benchmark functions",
        # Go's one second a benchmark as five of 200 ms: their median is steadier than one
        # second's mean where a shared machine slows for a second at a time, and their fastest
        # is the night's fallback. -benchmem: the allocations per op beside the time (a win
        # of 4 allocs/op to none is one a metric shows).
        bench=f"go test -run '^$' -bench . -benchmem -count {REPETITIONS} -benchtime 200ms ./...",
        # Every test binary compiled and run with nothing selected: the arm's build cache
        # then holds what the bench compiles, which each bench run starts from again.
        build="go test -run '^$' -bench '^$' -count 1 ./... > /dev/null",
        fetch="go mod download",  # into the module cache, which confined builds read (GOPROXY=off)
        checks=GO_CHECKS,
        go_bench=True,
        scope=("**/*.go",),
        metrics="name_sub_ns_op, name_sub_bytes_op, name_sub_allocs_op: go test -bench rows, "
        "the median of five (name_sub_min_ns_op, the fastest, beside them)",
        fastest=True,
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


# What `init --ecosystem` takes: the fixed ones, and those read from the tree (CMake's
# executable, a package's lock file).
NAMES = (*ECOSYSTEMS, "cmake-google-benchmark", "vitest", *NODE_LIBRARIES)
