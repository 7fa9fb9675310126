"""A C++ project built with CMake and benched with Google Benchmark, as a new user sets it up:
`init` finds the executable linked with benchmark::benchmark and writes the build (a Release
build kept in each arm's `build/`), the bench (its JSON written to the file the loop reads) and
the checks (ctest); nothing is written by hand but the hypotheses, and the night keeps the
known win and not the null change; the PR names the metric and the compiler.
"""

from __future__ import annotations

import shutil

import pytest
from conftest import edit_file, run_cli
from ecosystem_night import (
    base_profile_share,
    measured_with,
    night,
    project,
    queue_win_and_null,
)

from autoresearch.repo.state_dir import SessionPaths

pytestmark = pytest.mark.slow  # C++ builds and Google Benchmark runs

CMAKE = """cmake_minimum_required(VERSION 3.16)
project(summer CXX)
set(CMAKE_CXX_STANDARD 17)
add_library(summer src/summer.cpp)
target_include_directories(summer PUBLIC include)
# The benchmarks only under the project's own switch, off by default (init turns it on).
option(WITH_BENCHMARKS "Build the benchmarks" OFF)
if(WITH_BENCHMARKS)
  add_subdirectory(bench)
endif()
enable_testing()
add_executable(summer_test test/summer_test.cpp)
target_link_libraries(summer_test PRIVATE summer)
add_test(NAME summer_test COMMAND summer_test)
"""
SLOW = """#include "summer.h"

#include <numeric>
#include <vector>

// The sum 1 + 2 + ... + n.
long long sum_to(int n) {
    std::vector<long long> values;
    for (int i = 1; i <= n; ++i) values.push_back(i);
    return std::accumulate(values.begin(), values.end(), 0LL);
}
"""
FAST = """#include "summer.h"

// The sum 1 + 2 + ... + n.
long long sum_to(int n) { return static_cast<long long>(n) * (n + 1) / 2; }
"""
NULL = SLOW.replace("// The sum 1 + 2 + ... + n.", "// The sum of the first n integers.")
FILES = {
    "CMakeLists.txt": CMAKE,
    "include/summer.h": "#pragma once\nlong long sum_to(int n);\n",
    "src/summer.cpp": SLOW,
    "bench/CMakeLists.txt": """find_package(benchmark REQUIRED)
add_executable(summer_bench summer_bench.cpp)
target_link_libraries(summer_bench PRIVATE summer benchmark::benchmark benchmark::benchmark_main)
""",
    "bench/summer_bench.cpp": """#include <benchmark/benchmark.h>

#include "summer.h"

static void BM_SumTo(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(sum_to(static_cast<int>(state.range(0))));
}
BENCHMARK(BM_SumTo)->Arg(10000);

// Another the night does not run: init narrows the bench to the metric's benchmark.
static void BM_SumToSmall(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(sum_to(10));
}
BENCHMARK(BM_SumToSmall);
""",
    "test/summer_test.cpp": """#include "summer.h"

int main() { return sum_to(100) == 5050 && sum_to(1) == 1 ? 0 : 1; }
""",
}


def test_the_machine_has_what_a_cmake_project_needs():
    """The README's set-up and .ci/run install Google Benchmark (Debian's libbenchmark-dev)."""
    assert shutil.which("cmake") and shutil.which("c++"), "cmake and a C++ compiler"


def test_a_night_on_a_cmake_project_benched_with_google_benchmark(tmp_path):
    repo = project(tmp_path, "summer", FILES)

    # The executable's own listing, once the night's build made it.
    listed = run_cli("init", "--list-metrics", cwd=repo, timeout=600)
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line.split()[1] for line in listed.stdout.splitlines()[1:]}
    assert rows == {"bm_sumto_10000_ns": "BM_SumTo/10000", "bm_sumtosmall_ns": "BM_SumToSmall"}
    assert not (repo / "build").exists()  # built elsewhere: nothing of it left in the checkout
    init = run_cli("init", "--metric", "bm_sumto_10000_ns", cwd=repo)
    assert init.returncode == 0, init.stderr
    assert "found a CMake project with a Google Benchmark executable (summer_bench)" in init.stdout
    assert "the bench runs BM_SumTo/10000 alone" in init.stdout
    assert "--benchmark_filter='^BM_SumTo/10000$'" in (repo / "autoresearch.sh").read_text()
    text = (repo / "autoresearch.toml").read_text()
    assert 'format = "google-benchmark"' in text and 'keep = ["build/"]' in text
    assert "./build/bench/summer_bench --benchmark_out=" in (repo / "autoresearch.sh").read_text()
    assert "-DWITH_BENCHMARKS=ON" in text
    assert "ctest --test-dir build" in (repo / "autoresearch.checks.sh").read_text()
    # Google Benchmark's flags read their environment: shorter runs than a night's.
    edit_file(
        repo / "autoresearch.toml",
        {"[bench]\n": '[bench]\nenv = { BENCHMARK_MIN_TIME = "0.05" }\n'},
    )
    queue_win_and_null(
        repo,
        "src/summer.cpp",
        SLOW,
        ("Sum in closed form", "n(n+1)/2: no vector, no loop", FAST),
        ("Say what it sums", "none: a comment", NULL),
    )

    check = run_cli("check", cwd=repo)
    assert check.returncode == 0, check.stdout + check.stderr
    assert any(line.split()[:1] == ["bm_sumto_10000_ns"] for line in check.stdout.splitlines())

    journal = night(repo, "bm_sumto_10000_ns", "Sum in closed form", "Say what it sums")
    # The base's profile (init's perf command) names the function the win rewrites.
    assert base_profile_share(repo, journal, "sum_to") > 20
    # Each arm built in its own build/, kept across the reverts: never one shared.
    paths = SessionPaths(repo / ".git" / "autoresearch" / "main")
    assert (paths.worktree / "build" / "bench" / "summer_bench").is_file()
    assert (paths.baseline / "build" / "bench" / "summer_bench").is_file()
    assert "cc (" in measured_with(repo, "bm_sumto_10000_ns")
