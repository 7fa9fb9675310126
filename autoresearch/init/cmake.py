"""A CMake project with a Google Benchmark executable: the build, bench and checks `init`
writes for it, read from its CMakeLists.txt files (the project's own options the benchmarks
are built under, the dependencies it fetches at configure time)."""

from __future__ import annotations

import re
from pathlib import Path

from .found import REPETITIONS, Ecosystem
from .found import tree_files as _files
from .found import tree_text as _text

__all__ = ["cmake_ecosystem"]


# What a CMake project fetches at configure time: `FetchContent_Declare(name ...)`.
_DECLARED = re.compile(r"\bFetchContent_Declare\s*\(\s*([A-Za-z0-9_.+-]+)", re.I)


def _declared_content(files: list[Path]) -> list[str]:
    """The names a project's CMake files (CMakeLists.txt, *.cmake) declare FetchContent
    content by, in their order; a name in a variable (`${...}`) is not one init can give."""
    texts = [_text(p) for p in files if p.name == "CMakeLists.txt" or p.suffix == ".cmake"]
    names = [m.group(1) for text in texts for m in _DECLARED.finditer(_cmake_code(text))]
    return list(dict.fromkeys(names))


def _configure(files: list[Path], options: list[str]) -> tuple[str, str, str]:
    """The configure step of each arm's build, the fetch before the night (FetchContent's
    dependencies, fetched once into $AUTORESEARCH_FETCHED, bench/fetched.py: each arm's
    configure reads their sources there, offline; "" when none is declared), and what init
    says of both: the options it turns on, the dependencies it fetches."""
    switches = "".join(f" -D{name}=ON" for name in options)
    said = f", built under the project's option{'s' * (len(options) > 1)} {', '.join(options)}"
    said = said if options else ""
    configure = f"cmake -S . -B build -DCMAKE_BUILD_TYPE=Release{switches}"
    declared = _declared_content(files)
    if not declared:
        return f"{configure} > /dev/null", "", said
    fetch = (
        f'cmake -S . -B "$AUTORESEARCH_FETCHED/build" -DCMAKE_BUILD_TYPE=Release{switches} '
        '-DFETCHCONTENT_BASE_DIR="$AUTORESEARCH_FETCHED/deps" > /dev/null'
    )
    configure += "".join(
        f' -DFETCHCONTENT_SOURCE_DIR_{name.upper()}="$AUTORESEARCH_FETCHED/deps/{name.lower()}-src"'
        for name in declared
    )
    said += f", its FetchContent dependencies ({', '.join(declared)}) fetched before the night"
    return f"{configure} > /dev/null", fetch, said


# An executable linked with Google Benchmark: `target_link_libraries(name ... benchmark::...)`.
_BENCH_TARGET = re.compile(
    r"target_link_libraries\s*\(\s*([A-Za-z0-9_.+-]+)[^)]*\bbenchmark::benchmark", re.S
)


def cmake_ecosystem(directory: Path, files: list[Path] | None = None) -> Ecosystem | None:
    """A CMake project with a Google Benchmark executable: configured and built in Release
    into `build/` (kept across reverts, each arm its own), the executable run with its JSON
    written to the file the loop reads, the project's ctest tests (or its build) as checks.
    None when no CMakeLists.txt links an executable with benchmark::benchmark."""
    if not (directory / "CMakeLists.txt").is_file():
        return None
    files = files or _files(directory)
    lists = [p for p in files if p.name == "CMakeLists.txt"]
    found = [(p, m.group(1)) for p in lists for m in _BENCH_TARGET.finditer(_text(p))]
    if not found:
        return None
    where, target = found[0]
    folder = where.parent.relative_to(directory).as_posix()
    binary = f"build/{target}" if folder == "." else f"build/{folder}/{target}"
    tested = any(re.search(r"^\s*add_test\s*\(", _text(p), re.M) for p in lists)
    options = _switches(directory, where, target, lists)
    configure, fetch, said = _configure(files, options)
    return Ecosystem(
        name="cmake-google-benchmark",
        says=f"a CMake project with a Google Benchmark executable ({target}){said}",
        # Five repetitions: their median is the metric, their fastest its fallback; a phase of
        # a second or two in which a shared machine runs slow takes one, not the run.
        bench=(
            f"./{binary} --benchmark_out=.autoresearch-bench.json --benchmark_out_format=json "
            f"--benchmark_repetitions={REPETITIONS}"
        ),
        checks=(
            "ctest --test-dir build --output-on-failure"
            if tested
            else "cmake --build build  # no ctest tests: the build is the check"
        ),
        build=f"{configure} && cmake --build build --parallel",
        fetch=fetch,
        format="google-benchmark",
        output=".autoresearch-bench.json",
        rows=REPETITIONS,
        keep=("build/",),
        scope=("**/*.cpp", "**/*.cc", "**/*.cxx", "**/*.c", "**/*.h", "**/*.hpp"),
        metrics="bm_name_arg_ns: Google Benchmark's real time per iteration, in nanoseconds, "
        f"the median of {REPETITIONS} repetitions (bm_name_arg_min_ns, the fastest, and "
        "bm_name_arg_cpu_ns, its CPU time, beside it)",
        fastest=True,
    )


_COMMAND = re.compile(
    r"\b(if|elseif|else|endif|add_subdirectory|add_executable)\s*\(([^)]*)\)", re.I
)


def _switches(directory: Path, where: Path, target: str, lists: list[Path]) -> list[str]:
    """The project's options, off by default, that its benchmark executable is built only
    under: each `if(NAME)` around the `add_subdirectory` on the way from the top
    CMakeLists.txt to the executable's, or around the executable itself, whose NAME is an
    `option(...)` that is not ON."""
    options = {
        m.group(1): (m.group(2) or "").upper() == "ON"
        for p in lists
        for m in re.finditer(r"\boption\s*\(\s*(\w+)\s+\"[^\"]*\"\s*(\w+)?\s*\)", _text(p), re.I)
    }
    folder = where.parent.relative_to(directory)
    found: list[str] = []
    for depth in range(len(folder.parts) + 1):
        here = directory.joinpath(*folder.parts[:depth])
        step = folder.parts[depth] if depth < len(folder.parts) else None
        for name in _guards(_text(here / "CMakeLists.txt"), step, target):
            if name in options and not options[name] and name not in found:
                found.append(name)
    return found


def _guards(text: str, step: str | None, target: str) -> list[str]:
    """The plain `if(NAME)` conditions around the first `add_subdirectory(step...)` (or, with
    no step, `add_executable(target ...)`) in a CMakeLists.txt's text."""
    stack: list[str | None] = []
    for match in _COMMAND.finditer(_cmake_code(text)):
        command, args = match.group(1).lower(), match.group(2).split()
        if command == "if":
            stack.append(args[0] if len(args) == 1 and re.fullmatch(r"\w+", args[0]) else None)
        elif command in ("elseif", "else") and stack:
            stack[-1] = None  # the branch taken when the first is not: nothing to switch on
        elif command == "endif" and stack:
            stack.pop()
        elif args and (
            (command == "add_subdirectory" and step and args[0].strip("/").split("/")[0] == step)
            or (command == "add_executable" and step is None and args[0] == target)
        ):
            return [name for name in stack if name]
    return []


def _cmake_code(text: str) -> str:
    """A CMake file's text without its line comments."""
    return re.sub(r"#[^\n]*", "", text)
