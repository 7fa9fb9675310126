"""The init command: scaffold a session in a repository, or import a pi-autoresearch one."""

from __future__ import annotations

import argparse
import difflib
import os
from collections.abc import Callable
from pathlib import Path

from ..errors import UserError
from ..statuses import Direction
from .common import doc


def cmd_init(args: argparse.Namespace) -> int:
    """Scaffold a session in a repository: config, bench and checks scripts, ideas file; or,
    with --from-pi, turn a pi-autoresearch session into one whose journal holds its runs."""
    from ..init.ecosystems import project_python
    from ..init.scaffold import scaffold

    directory = Path(args.directory).resolve()
    if args.from_pi is not None:
        return _from_pi(args, directory)
    python, why = (
        (args.python, "--python") if args.python else project_python(directory, os.environ)
    )
    ecosystem = _ecosystem(directory, args.ecosystem, python)
    if args.list_metrics:
        return _list_metrics(ecosystem, directory)
    if ecosystem is not None and ecosystem.name == "pytest-benchmark":
        print(f"the bench's interpreter: {python} ({why})")
    if ecosystem is not None and (args.metric or ecosystem.name == "go"):
        ecosystem = _narrowed(ecosystem, directory, args.metric)
    written = scaffold(
        directory,
        session=args.session,
        metric=args.metric or "bench_ms",
        direction=args.direction or "lower",
        unit=args.unit if args.unit is not None else ("ns" if ecosystem else "ms"),
        scope=args.scope or (list(ecosystem.scope) if ecosystem else ["src/**"]),
        force=args.force,
        ecosystem=ecosystem,
        fallback=_fallback(ecosystem, args.metric, args.direction or "lower"),
    )
    for path in written:
        print(f"wrote {path.relative_to(directory)}")
    if ecosystem is None:
        print(
            "next: edit autoresearch.sh to print your METRIC lines, set [scope] in "
            "autoresearch.toml, commit the scripts, put patches in hypotheses/, then "
            "`autoresearch run`"
        )
        return 0
    print(
        f"found {ecosystem.says}: autoresearch.sh runs `{ecosystem.runs or ecosystem.bench}`, and "
        f"autoresearch.checks.sh `{ecosystem.checks}`; metrics read as {ecosystem.metrics}"
    )
    print(
        "next: `autoresearch check` lists the metrics the bench prints; set [metric] name to "
        "the one to improve (--metric at init), commit the scripts, put patches in hypotheses/, "
        "then `autoresearch run`"
    )
    return 0


def _fallback(ecosystem, metric: str | None, direction: str) -> str:
    """The [metric] fallback init writes: the named metric's fastest round, where its harness
    reports one (a timing: lower is better); empty otherwise."""
    from ..readers.rows import minimum_of

    if ecosystem is None or not ecosystem.fastest or not metric or direction != "lower":
        return ""
    return minimum_of(metric) or ""


def _ecosystem(directory: Path, name: str, python: str):
    """The ecosystem `init --ecosystem` names, or the one found in `directory` (auto)."""
    from ..init.ecosystems import (
        ECOSYSTEMS,
        NODE_LIBRARIES,
        cmake_ecosystem,
        detect_ecosystem,
        preloaded_ecosystem,
        python_ecosystem,
        vitest_ecosystem,
    )

    if name == "none":
        return None
    if name == "auto":
        return detect_ecosystem(directory, python)
    if name == "pytest-benchmark":
        return python_ecosystem(python, directory)
    if name == "cmake-google-benchmark":
        found = cmake_ecosystem(directory)
        if found is None:
            raise UserError(
                f"{directory / 'CMakeLists.txt'}: no executable linked with "
                "benchmark::benchmark (target_link_libraries(NAME ... benchmark::benchmark))"
            )
        return found
    if name == "vitest":
        found = vitest_ecosystem(directory)
        if found is None:
            raise UserError(
                f"{directory / 'package.json'}: no Vitest benchmarks (vitest among the "
                "dependencies, and *.bench.js or *.bench.ts files)"
            )
        return found
    if name in NODE_LIBRARIES:
        found = preloaded_ecosystem(directory, name)
        if found is None:
            raise UserError(
                f"{directory / 'package.json'}: no {name} benchmarks ({name} among the "
                "dependencies, and a `bench` script or a .js module that imports it)"
            )
        return found
    return ECOSYSTEMS[name]


def _from_pi(args: argparse.Namespace, directory: Path) -> int:
    """`init --from-pi`: a pi-autoresearch session made this one's."""
    from ..init.pi_import import import_pi

    lines = import_pi(
        directory,
        log=Path(args.from_pi) if args.from_pi else None,
        session=args.session,
        metric=args.metric,
        direction=args.direction,
        unit=args.unit,
        scope=args.scope,
        force=args.force,
    )
    print("\n".join(lines))
    return 0


def _list_metrics(ecosystem, directory: Path) -> int:
    """`init --list-metrics`: the benchmarks the harness lists, each as the metric to name."""
    from ..init.listing import list_benchmarks

    if ecosystem is None:
        raise UserError(f"{directory}: no benchmarks init recognises (see --ecosystem)")
    listed, how = list_benchmarks(ecosystem, directory)
    if not listed:
        print(f"no benchmarks listed: {how}")
        return 0
    print(f"{len(listed)} benchmark{'s' * (len(listed) > 1)} ({how}); name one with --metric:")
    if ecosystem.name == "go":
        print("  (a sub-benchmark, b.Run, adds its name: BenchmarkFib/20 reads as fib_20_ns_op)")
    width = max(len(item.metric) for item in listed)
    for item in listed:
        print(f"  {item.metric:{width}}  {item.benchmark}")
    return 0


def _narrowed(ecosystem, directory: Path, metric: str | None):
    """The ecosystem with its bench narrowed to the benchmark `metric` comes from, when its
    harness lists one; as it was otherwise, said (Go's then profiled by Go itself when its
    benchmarks are in one package)."""
    from dataclasses import replace

    from ..init.listing import go_package_profile, list_benchmarks, narrowed

    try:
        listed, how = list_benchmarks(ecosystem, directory)
    except UserError as exc:
        print(f"warning: {exc}; the bench runs every benchmark")
        return ecosystem
    found = narrowed(listed, metric) if metric else None
    if found is None:
        if ecosystem.name == "go":
            ecosystem = replace(ecosystem, profile=go_package_profile(ecosystem, listed))
        if listed and metric:
            names = [item.metric for item in listed]
            near = difflib.get_close_matches(metric, names, n=3, cutoff=0.5)
            closest = f"; the closest: {', '.join(near)}" if near else ""
            print(f"the bench runs every benchmark: none of the {len(listed)} `{how}` lists "
                  f"reads as {metric}{closest} (`init --list-metrics` names them all)")  # fmt: skip
        return ecosystem
    print(f"the bench runs {found.benchmark} alone, what {metric} comes from (`{how}`)")
    return replace(
        ecosystem,
        bench=found.select,
        narrowed=found.benchmark,
        profile=found.profile,
        rows=found.rows or ecosystem.rows,
    )


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"init": cmd_init}


def add_parsers(sub) -> None:
    from ..init.ecosystems import NAMES  # a small module: the choices are its names

    init = sub.add_parser("init", help=doc(cmd_init), description=doc(cmd_init))
    init.add_argument("directory", nargs="?", default=".", help="the repository (default: .)")
    init.add_argument("--session", default="main", help="session name (default: main)")
    init.add_argument(
        "--metric", help="primary metric name (default: bench_ms, or the pi session's)"
    )
    init.add_argument(
        "--direction",
        choices=[d.value for d in Direction],
        help="default: lower, or the pi session's",
    )
    init.add_argument("--unit", help="primary metric unit (default: ms, or the pi session's)")
    init.add_argument(
        "--scope", action="append", metavar="GLOB", help="what patches may touch (repeatable)"
    )
    init.add_argument("--force", action="store_true", help="overwrite existing files")
    init.add_argument(
        "--list-metrics",
        action="store_true",
        help="list the benchmarks the project's harness lists, each with the metric name to "
        "give --metric, and write nothing; with --metric, the bench init writes runs that "
        "benchmark alone",
    )
    init.add_argument(
        "--ecosystem",
        default="auto",
        choices=["auto", "none", *NAMES],
        help="the benchmarks to run and read: auto (default) finds a Cargo crate with criterion "
        "or #[bench] benches, a Go module with Benchmark functions, Python tests using "
        "pytest-benchmark, a CMake project with a Google Benchmark executable, a JavaScript or "
        "TypeScript package with Vitest benchmarks or a JavaScript one with tinybench or "
        "mitata benchmarks; none writes the plain METRIC-line template",
    )
    init.add_argument(
        "--python",
        metavar="INTERPRETER",
        help="the interpreter a pytest-benchmark bench runs (default: the active virtualenv's, "
        "else the project's .venv, else python3 on the PATH); its version is recorded with "
        "every calibration",
    )
    init.add_argument(
        "--from-pi",
        nargs="?",
        const="",
        metavar="LOG",
        help="import a pi-autoresearch session: its bench and checks scripts, ideas and log "
        "(autoresearch.jsonl or .auto/log.jsonl, found in DIRECTORY unless LOG names it) "
        "become this session's, its runs the journal's history",
    )
