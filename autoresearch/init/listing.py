"""The benchmarks a project's harness lists, without running them, each with the metric the
loop reads it as: what `init --list-metrics` prints, and how `init --metric` narrows the bench
to the one benchmark that metric comes from (a whole suite a run is a night of two decisions:
ten criterion benchmarks at its defaults take over two minutes a run).

Each harness's own listing: `go test -list`, `cargo bench --bench NAME -- --list` (criterion's
and libtest's, target by target), `pytest --collect-only`, and a Google Benchmark executable's
`--benchmark_list_tests` once the project's build (the one the night runs) made it. Vitest has
no listing: `autoresearch check` runs the bench once and lists what it printed.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..bench.fetched import FETCHED_ENV
from ..errors import UserError
from ..process.capture import capture
from ..readers.formats import metric_name
from .ecosystems import REPETITIONS, Ecosystem

__all__ = ["Listed", "cargo_benchmarks", "go_package_profile", "list_benchmarks", "narrowed"]

LIST_TIMEOUT_S = 900  # a first `cargo bench -- --list` compiles the benches
# What a metric's name ends with beside its benchmark's: the readers' units.
UNITS = ("_ns_op", "_bytes_op", "_allocs_op", "_mb_s", "_cpu_ns", "_ns", "_ops_s", "_mib_s")
# criterion, one benchmark at the times the project gives it (3 s of warm-up and 5 of
# measurement by default: a run within the 10-20 s a loop can afford), without its plots.
CRITERION_SIZE = "--noplot"


@dataclass(frozen=True)
class Listed:
    benchmark: str  # as the harness names it
    metric: str  # the time the loop reads it as
    select: str  # the bench command, narrowed to this benchmark alone
    # A profile of that one benchmark the harness takes itself, as pprof (Go's -cpuprofile): a
    # test binary perf would sample is deleted before its frames could be named.
    profile: str = ""
    package: str = ""  # Go's import path of the package it is in
    rows: int = 0  # rows of it one run of `select` prints ([bench] rows), where known


def list_benchmarks(ecosystem: Ecosystem, directory: Path) -> tuple[list[Listed], str]:
    """The benchmarks of the project in `directory` and the listing command that found them;
    ([], why) when there is no listing for it. A listing that fails is a UserError."""
    if ecosystem.name == "go":
        argv = ["go", "test", "-list", "^Benchmark", "./..."]
        return _go_listed(ecosystem, _lines(argv, directory)), " ".join(argv)
    if ecosystem.name in ("cargo-criterion", "cargo-libtest"):
        return _cargo_listed(ecosystem, directory), "cargo bench --offline --bench NAME -- --list"
    if ecosystem.name == "cmake-google-benchmark":
        listing = f"{ecosystem.build}, then --benchmark_list_tests"
        return _google_listed(ecosystem, directory), listing
    if ecosystem.name == "pytest-benchmark":
        return _pytest_listed(ecosystem, directory)
    return [], (
        f"{ecosystem.says} lists its benchmarks only when built or run: `autoresearch check` "
        "runs the bench once and lists every metric it printed"
    )


def narrowed(listed: list[Listed], metric: str) -> Listed | None:
    """The benchmark `metric` comes from, among `listed` (Go lists top-level benchmarks: the
    longest whose name starts the metric's); None when not one."""
    base = _base(metric)
    found = [
        (len(own), item)
        for item in listed
        if base == (own := _base(item.metric)) or base.startswith(own + "_")
    ]
    longest = max((n for n, _ in found), default=0)
    best = [item for n, item in found if n == longest]
    return best[0] if len(best) == 1 else None


def _base(metric: str) -> str:
    return next((metric[: -len(u)] for u in UNITS if metric.endswith(u)), metric)


def _go_listed(ecosystem: Ecosystem, lines: list[str]) -> list[Listed]:
    """`go test -list` prints each package's names, then `ok <import path> <time>`: each
    benchmark is run from its own package alone (one test binary, and a CPU profile of it)."""
    found, names = [], []
    for line in lines:
        if re.fullmatch(r"Benchmark\w*", line):
            names.append(line)
        elif (parts := line.split())[0] == "ok" and len(parts) >= 2:
            found += [_go(ecosystem, name, parts[1]) for name in dict.fromkeys(names)]
            names = []
    return found


def _go(ecosystem: Ecosystem, name: str, package: str) -> Listed:
    select = _in(ecosystem, package).replace("-bench .", f"-bench '^{name}$'", 1)
    metric = metric_name(name.removeprefix("Benchmark"), "ns_op")
    return Listed(name, metric, select, _cpu_profile(select), package, REPETITIONS)


def go_package_profile(ecosystem: Ecosystem, listed: list[Listed]) -> str:
    """Go's CPU profile of the whole bench: go test takes -cpuprofile for one package only, so
    with benchmarks in several each package's are profiled in turn (into a scratch directory)
    and pprof merges them, every frame named; "" when Go lists no benchmark."""
    packages = list(dict.fromkeys(item.package for item in listed))
    if len(packages) <= 1:
        return _cpu_profile(_in(ecosystem, packages[0])) if packages else ""
    parts = '"$parts"'
    steps = ["parts=$(mktemp -d)"]
    steps += [_cpu_profile(_in(ecosystem, p), f"{parts}/{i}.pprof") for i, p in enumerate(packages)]
    steps.append(f'go tool pprof -proto {parts}/*.pprof > "$AUTORESEARCH_PROFILE_OUT"')
    return " && ".join(steps) + f"; status=$?; rm -rf {parts}; exit $status"


def _in(ecosystem: Ecosystem, package: str) -> str:
    """The bench's command run on one package."""
    return ecosystem.bench.replace(" ./...", f" {package}", 1)


def _cpu_profile(command: str, out: str = '"$AUTORESEARCH_PROFILE_OUT"') -> str:
    # -o /dev/null: the test binary -cpuprofile keeps is not left in the tree (go test runs it
    # from its own build directory, and never replaces /dev/null, as root either).
    return f"{command} -cpuprofile {out} -o /dev/null"


def _cargo_listed(ecosystem: Ecosystem, directory: Path) -> list[Listed]:
    """Each bench target's benchmarks (and, for libtest, the library's `#[bench]` functions),
    listed target by target: a filter and criterion's options go to that target alone (the
    library's own test harness refuses criterion's). The crates fetched first, as the
    night's pre-flight fetches them (`[bench] fetch`), then listed offline."""
    _fetch(ecosystem, directory)
    argv = ["cargo", "metadata", "--offline", "--no-deps", "--format-version", "1"]
    metadata = json.loads("\n".join(_lines(argv, directory)))
    targets = [
        ("--bench", t["name"])
        for package in metadata["packages"]
        for t in package["targets"]
        if "bench" in t["kind"]
    ]
    criterion = ecosystem.name == "cargo-criterion"
    size = f" {CRITERION_SIZE}" if criterion else ""
    found = []
    for target in [*targets, *([] if criterion else [("--lib",)])]:
        chosen = " ".join(_quoted(part) if i else part for i, part in enumerate(target))
        listing = ["cargo", "bench", "--offline", "--quiet", *target, "--", "--list"]
        for name in cargo_benchmarks(_lines(listing, directory)):
            # criterion's filter is a regular expression in every version (its --exact came
            # with 0.4: 0.3 refuses it); libtest's a substring, matched whole with --exact.
            only = _quoted(_anchored(name)) if criterion else f"--exact {_quoted(name)}"
            select = f"cargo bench --quiet {chosen} -- {only}{size}"
            found.append(Listed(name, metric_name(name, "ns"), select))
    return found


def cargo_benchmarks(lines: list[str]) -> list[str]:
    """The benchmarks a bench target's `--list` names: `name: benchmark` from criterion 0.4
    on, `name: bench` from criterion 0.3 and libtest (whose tests, `name: test`, are not)."""
    return [
        line.rsplit(": ", 1)[0]
        for line in lines
        if ": " in line and line.rsplit(": ", 1)[1] in ("benchmark", "bench")
    ]


def _google_listed(ecosystem: Ecosystem, directory: Path) -> list[Listed]:
    """The executable's benchmarks (`BM_Sum/10000`), built first as the night builds it, but
    into a directory of its own that is removed after (a `build/` left in your checkout would
    be committed with it, or taken for the arms' by CMake); each selected by an anchored
    filter."""
    with tempfile.TemporaryDirectory(prefix="autoresearch-list-") as made:
        build = ecosystem.build.replace("-B build", f"-B {made}").replace(
            "--build build", f"--build {made}"
        )
        # What the night's fetch would leave, here in the listing's own directory.
        env = {FETCHED_ENV: f"{made}/fetched"}
        _fetch(ecosystem, directory, env)
        print(f"building the project to list its benchmarks: {build}", file=sys.stderr)
        _lines(["bash", "-c", build], directory, env)
        executable = made + ecosystem.bench.split()[0].removeprefix("./build")
        names = _lines([executable, "--benchmark_list_tests=true"], directory)
    found = []
    for name in names:
        select = f"{ecosystem.bench} --benchmark_filter={_quoted(_anchored(name))}"
        found.append(Listed(name, metric_name(name, "ns"), select))
    return found


def _pytest_listed(ecosystem: Ecosystem, directory: Path) -> tuple[list[Listed], str]:
    """The tests that take the benchmark fixture, as pytest collects them with the bench's
    interpreter (src/ first on PYTHONPATH, in a src layout). A test module pytest cannot
    import (a test dependency not installed: a project's own suite often needs more than its
    benchmarks) does not hide the rest: it is named, on stderr, and the listing goes on."""
    python = ecosystem.bench.split(" -m pytest", 1)[0]
    command = (
        f"{python} -m pytest --collect-only -q -p no:cacheprovider --continue-on-collection-errors"
    )
    done = capture(["bash", "-c", command], cwd=directory, timeout_s=LIST_TIMEOUT_S)
    lines = [line.strip() for line in done.text().splitlines()]
    ids = [line for line in lines if "::" in line and not line.startswith("ERROR")]
    if not ids and not done.ok:
        raise UserError(f"{directory}: `{command}` failed, listing nothing: {done.why()}")
    failed = [
        line.removeprefix("ERROR ").split(" - ")[0] for line in lines if line.startswith("ERROR ")
    ]
    if failed:
        print(
            f"pytest could not collect {', '.join(failed)} (what benchmarks they hold are not "
            f"listed; a test dependency not installed in {python.split()[-1]}?): `{command}` "
            "says why",
            file=sys.stderr,
        )
    return [_pytest(ecosystem, i) for i in ids if _benchmarked(directory, i)], command


def _pytest(ecosystem: Ecosystem, node: str) -> Listed:
    name = node.rsplit("::", 1)[1]
    return Listed(node, metric_name(name, "ns"), f"{ecosystem.bench} {_quoted(node)}")


def _benchmarked(directory: Path, node: str) -> bool:
    """Whether the test `node` names is in a file whose tests take the benchmark fixture."""
    path = directory / node.split("::", 1)[0]
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    name = node.rsplit("::", 1)[1].split("[", 1)[0]
    return bool(re.search(rf"def {re.escape(name)}\([^)]*\bbenchmark\b", text))


def _fetch(ecosystem: Ecosystem, directory: Path, env: dict[str, str] | None = None) -> None:
    """What the build needs from the network, fetched as the night's pre-flight fetches it
    (`[bench] fetch`, bench/fetched.py), before the listing builds."""
    if ecosystem.fetch:
        print(f"fetching what the build needs: {ecosystem.fetch}", file=sys.stderr)
        _lines(["bash", "-c", ecosystem.fetch], directory, env)


def _lines(argv: list[str], directory: Path, env: dict[str, str] | None = None) -> list[str]:
    done = capture(argv, cwd=directory, timeout_s=LIST_TIMEOUT_S, env=env)
    if not done.ok:
        raise UserError(f"{directory}: `{' '.join(argv)}` failed, listing nothing: {done.why()}")
    return [line.strip() for line in done.text().splitlines() if line.strip()]


def _anchored(name: str) -> str:
    """A regular expression matching `name` alone, in the syntax both std::regex (Google
    Benchmark's) and Rust's regex crate (criterion's) read: their metacharacters escaped."""
    return "^" + re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\1", name) + "$"


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
