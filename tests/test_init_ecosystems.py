"""`init` in a repository whose benchmarks it recognises: the bench it writes runs them, the
config reads their output in their tool's format, the checks run the project's tests."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, run_cli
from synthetic import PYTEST_INI

from autoresearch.bench.metrics import read_run_metrics
from autoresearch.config import load_config
from autoresearch.init.ecosystems import detect_ecosystem
from autoresearch.init.listing import cargo_benchmarks
from autoresearch.profiles import fold, top_frames
from autoresearch.repo.globs import matches_any

CRATE = '[package]\nname = "fibs"\nversion = "0.1.0"\n\n[dev-dependencies]\ncriterion = "0.5"\n'
LIBTEST = "#![feature(test)]\nextern crate test;\n#[bench]\nfn fib(b: &mut test::Bencher) {}\n"
GO_TEST = 'package fibs\n\nimport "testing"\n\nfunc BenchmarkFib(b *testing.B) {}\n'
PY_TEST = "def test_fib(benchmark):\n    benchmark(sum, [1, 2])\n"

PROJECTS = {
    "cargo-criterion": {"Cargo.toml": CRATE, "src/lib.rs": "", "benches/fib.rs": ""},
    "cargo-libtest": {
        "Cargo.toml": CRATE.replace('criterion = "0.5"\n', ""),
        "src/lib.rs": "",
        "benches/fib.rs": LIBTEST,
    },
    "go": {
        "go.mod": "module example.com/fibs\n",
        "fib.go": "package fibs\n",
        "fib_test.go": GO_TEST,
    },
    "pytest-benchmark": {
        "fibs.py": "",
        "tests/test_fib_bench.py": PY_TEST,
        "pytest.ini": PYTEST_INI,
    },
}


def project(tmp_path, files: dict[str, str]):
    repo = tmp_path / "repo"
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    return repo


@pytest.mark.parametrize("name", list(PROJECTS))
def test_init_recognises_the_project_and_writes_its_bench(tmp_path, name):
    repo = project(tmp_path, PROJECTS[name])
    done = run_cli("init", "--metric", "fib_ns", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("found ") == 1

    config = load_config(repo / "autoresearch.toml")
    bench = (repo / "autoresearch.sh").read_text()
    checks = (repo / "autoresearch.checks.sh").read_text()
    expected = {
        "cargo-criterion": ("criterion", "", False, "cargo bench", "cargo test", "src/**"),
        "cargo-libtest": ("libtest", "", False, "cargo bench", "cargo test", "src/**"),
        # The one benchmark --metric names, found by `go test -list`: run alone.
        "go": ("auto", "", True, "go test -run '^$' -bench '^BenchmarkFib$'", "go test", "**/*.go"),
        "pytest-benchmark": (
            "pytest-benchmark",
            ".autoresearch-bench.json",
            False,
            "--benchmark-json=.autoresearch-bench.json",
            "--benchmark-skip",
            "**/*.py",
        ),
    }[name]
    fmt, output, go_bench, bench_runs, checks_run, scope = expected
    assert (config.bench.format, config.bench.output, config.bench.go_bench) == (
        fmt,
        output,
        go_bench,
    )
    assert bench_runs in bench and "METRIC" not in bench
    assert checks_run in checks and "\ntrue\n" not in checks
    assert config.scope.include == [scope]
    assert config.metric.unit == "ns"
    # A harness that reports each benchmark's fastest round: the night's fallback when the
    # medians are too noisy (decide/calibration.fallback_switch).
    assert config.metric.fallback == ("fib_min_ns" if name in ("pytest-benchmark", "go") else "")
    # A profile after each calibration: perf around the bench for native code; py-spy's
    # folded stacks for Python (installed with the tests: on); Go's own of the one benchmark.
    if name == "pytest-benchmark":
        assert shutil.which("py-spy"), "py-spy is in the test extra"
        assert config.profile.format == "folded"
        assert config.profile.command.startswith("py-spy record --full-filenames --format raw")
    elif name == "go":
        assert config.profile.format == "pprof"
        profiled = ' -cpuprofile "$AUTORESEARCH_PROFILE_OUT" -o /dev/null'
        assert config.profile.command.endswith(profiled)
    else:
        assert config.profile.format == "perf"
        assert config.profile.command.startswith("perf record -q -e cpu-clock -g -o ")
    assert config.bench.build == {
        "go": "go test -run '^$' -bench '^$' -count 1 ./... > /dev/null",
        "pytest-benchmark": "",
    }.get(name, "cargo bench --no-run --quiet")
    assert config.bench.keep == (["target/"] if "cargo" in name else [])
    # What the confined, offline builds read from your home's caches, fetched before the night.
    assert config.bench.fetch == {"go": "go mod download", "pytest-benchmark": ""}.get(
        name, "cargo fetch --quiet"
    )


# How real manifests name criterion: crates.io's normalised form (what a crate downloaded
# from the registry has), an inline table, a workspace's inheritance, a target-specific
# table, a renamed compatible fork, and a workspace whose benches are in a member crate.
CRITERION_MANIFESTS = {
    "registry": '[package]\nname = "hex"\n\n[dev-dependencies.criterion]\nversion = "0.3"\n',
    "inline": '[package]\nname = "a"\n\n[dev-dependencies]\ncriterion = { version = "0.5" }\n',
    "workspace": '[package]\nname = "a"\n\n[dev-dependencies]\ncriterion.workspace = true\n',
    "target": '[package]\nname = "a"\n\n[target."cfg(unix)".dev-dependencies]\ncriterion = "0.5"\n',
    "renamed": '[package]\nname = "a"\n\n[dev-dependencies]\n'
    'criterion = { package = "codspeed-criterion-compat", version = "2" }\n',
}


@pytest.mark.parametrize("form", list(CRITERION_MANIFESTS))
def test_criterion_is_recognised_however_the_manifest_names_it(tmp_path, form):
    repo = project(tmp_path, {"Cargo.toml": CRITERION_MANIFESTS[form], "benches/b.rs": ""})
    found = detect_ecosystem(repo)
    assert found is not None and found.name == "cargo-criterion"


def test_criterion_in_a_workspace_member_is_recognised_and_a_dependency_of_another_name_is_not(
    tmp_path,
):
    member = '[package]\nname = "core"\n\n[dev-dependencies]\ncriterion = "0.5"\n'
    root = '[workspace]\nmembers = ["crates/*"]\n'
    files = {"Cargo.toml": root, "crates/core/Cargo.toml": member}
    found = detect_ecosystem(project(tmp_path / "ws", files))
    assert found is not None and found.name == "cargo-criterion"
    # A crate named like it, and a comment, are not criterion.
    other = '[package]\nname = "a"\n# criterion = "0.5" once\n'
    other += '[dependencies]\ncriterion-plot = "0.5"\n'
    assert detect_ecosystem(project(tmp_path / "other", {"Cargo.toml": other})) is None
    broken = '[package\ncriterion = "0.5"\n'  # not TOML: not read as criterion's either
    assert detect_ecosystem(project(tmp_path / "broken", {"Cargo.toml": broken})) is None
    odd = '[package]\nname = "a"\ntarget = 3\ndev-dependencies = "criterion"\n'  # cargo refuses it
    assert detect_ecosystem(project(tmp_path / "odd", {"Cargo.toml": odd})) is None


def test_a_repository_without_benchmarks_gets_the_metric_line_template(tmp_path):
    repo = project(tmp_path, {"main.c": "int main(void) { return 0; }\n"})
    done = run_cli("init", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "found " not in done.stdout
    assert "METRIC bench_ms=" in (repo / "autoresearch.sh").read_text()
    config = load_config(repo / "autoresearch.toml")
    assert (config.bench.format, config.bench.output, config.bench.build) == ("auto", "", "")


def test_the_ecosystem_can_be_named_or_refused(tmp_path):
    repo = project(tmp_path, PROJECTS["go"])
    plain = run_cli("init", "--ecosystem", "none", cwd=repo)
    assert plain.returncode == 0, plain.stderr
    assert "METRIC" in (repo / "autoresearch.sh").read_text()
    named = run_cli(
        "init", "--force", "--ecosystem", "pytest-benchmark", "--python", "/opt/py/bin/python3",
        cwd=repo,
    )  # fmt: skip
    assert named.returncode == 0, named.stderr
    assert "/opt/py/bin/python3 -m pytest" in (repo / "autoresearch.sh").read_text()


def test_a_cmake_project_s_benchmark_executable_is_found_where_it_is_built(tmp_path):
    """The executable linked with Google Benchmark, in a subdirectory's CMakeLists.txt: built
    under build/ at the same place; no ctest tests, so the build is the check."""
    repo = project(
        tmp_path,
        {
            "CMakeLists.txt": "project(p CXX)\nadd_subdirectory(perf)\n",
            "perf/CMakeLists.txt": (
                "find_package(benchmark REQUIRED)\nadd_executable(speed speed.cc)\n"
                "target_link_libraries(\n  speed\n  PRIVATE benchmark::benchmark_main)\n"
            ),
            "perf/speed.cc": "",
        },
    )
    done = run_cli("init", "--metric", "bm_x_ns", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "a CMake project with a Google Benchmark executable (speed)" in done.stdout
    config = load_config(repo / "autoresearch.toml")
    assert (config.bench.format, config.bench.output) == (
        "google-benchmark",
        ".autoresearch-bench.json",
    )
    assert config.bench.keep == ["build/"] and "cmake --build build" in config.bench.build
    assert "./build/perf/speed --benchmark_out=" in (repo / "autoresearch.sh").read_text()
    assert "cmake --build build" in (repo / "autoresearch.checks.sh").read_text()
    # Five repetitions: the metric their median, its fallback their fastest.
    assert "--benchmark_repetitions=5" in (repo / "autoresearch.sh").read_text()
    assert config.bench.rows == 5
    assert config.metric.fallback == "bm_x_min_ns"
    assert "**/*.cc" in config.scope.include


def test_a_cmake_project_without_google_benchmark_is_named_when_asked_for(tmp_path):
    repo = project(tmp_path, {"CMakeLists.txt": "project(p C)\nadd_executable(p main.c)\n"})
    assert "found " not in run_cli("init", cwd=repo).stdout
    asked = run_cli("init", "--force", "--ecosystem", "cmake-google-benchmark", cwd=repo)
    assert asked.returncode == 1
    assert asked.stderr.strip() == (
        f"error: {repo / 'CMakeLists.txt'}: no executable linked with benchmark::benchmark "
        "(target_link_libraries(NAME ... benchmark::benchmark))"
    )


def test_a_python_project_s_interpreter_is_its_virtualenv_s(tmp_path):
    """No --python: the active virtualenv's interpreter, else the project's own .venv's, by
    absolute path (a worktree has no .venv); python3 only when there is neither."""
    repo = project(tmp_path, PROJECTS["pytest-benchmark"])
    active = tmp_path / "active-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", active], check=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", repo / ".venv"], check=True)
    env = {"VIRTUAL_ENV": str(active)}

    done = run_cli("init", cwd=repo, env=env)
    assert done.returncode == 0, done.stderr
    assert f"the bench's interpreter: {active}/bin/python (the active virtualenv)" in done.stdout
    assert f"{active}/bin/python -m pytest" in (repo / "autoresearch.sh").read_text()

    env["VIRTUAL_ENV"] = ""
    done = run_cli("init", "--force", cwd=repo, env=env)
    assert f"{repo}/.venv/bin/python (the project's .venv)" in done.stdout, done.stdout
    assert f"{repo}/.venv/bin/python -m pytest" in (repo / "autoresearch.checks.sh").read_text()

    shutil.rmtree(repo / ".venv")
    done = run_cli("init", "--force", "--python", "/opt/py/bin/python3", cwd=repo, env=env)
    assert "the bench's interpreter: /opt/py/bin/python3 (--python)" in done.stdout


def test_a_src_layout_s_bench_and_checks_import_the_tree_s_package_first(tmp_path):
    """A package under src/ is imported by the tests from wherever the interpreter finds it:
    with the project installed in its virtualenv (`pip install -e .`, what `uv sync` does),
    that is your checkout, not the arm's tree, and every arm would measure and test the same
    code. init puts the tree's src/ first on PYTHONPATH (before site-packages and an
    editable install's path or finder), in the bench, the checks and the profile."""
    files = {
        "src/fibby/__init__.py": "",
        "tests/test_fib_bench.py": PY_TEST,
        "pytest.ini": PYTEST_INI,
    }
    repo = project(tmp_path, files)
    done = run_cli("init", "--python", "/opt/py/bin/python3", cwd=repo)
    assert done.returncode == 0, done.stderr
    first = 'env PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" /opt/py/bin/python3 -m pytest'
    assert first in (repo / "autoresearch.sh").read_text()
    assert first in (repo / "autoresearch.checks.sh").read_text()
    profile = load_config(repo / "autoresearch.toml").profile.command
    assert first in profile, profile
    assert "the tests import src/ from the tree" in done.stdout, done.stdout
    # Listed as the bench runs them: the package imports from src/ without being installed.
    (repo / "src" / "fibby" / "__init__.py").write_text("def fib(n):\n    return n\n")
    (repo / "tests" / "test_fib_bench.py").write_text(
        "from fibby import fib\n\n\ndef test_fib(benchmark):\n    benchmark(fib, 3)\n"
    )
    listed = run_cli("init", "--list-metrics", "--python", sys.executable, cwd=repo)
    assert listed.returncode == 0, listed.stderr
    assert "test_fib_ns" in listed.stdout, listed.stdout
    # A flat layout is imported from the tree already (`python -m pytest` puts it first).
    flat = project(tmp_path / "flat", PROJECTS["pytest-benchmark"])
    assert run_cli("init", cwd=flat).returncode == 0
    assert "PYTHONPATH" not in (flat / "autoresearch.sh").read_text()


def test_a_benchmark_folder_behind_the_project_s_option_is_built_with_it_on(tmp_path):
    """`if(WITH_BENCHMARKS) add_subdirectory(perf)` with the option off by default: the build
    init writes turns it on (the pre-flight otherwise finds no executable); an option on by
    default, a condition that is not an option and the branch an `else` takes are left."""
    repo = project(
        tmp_path,
        {
            "CMakeLists.txt": (
                "project(p CXX)\n"
                'option(WITH_BENCHMARKS "Build the benchmarks" OFF)\n'
                'option(WITH_SIMD "Use SIMD" ON)\n'
                'option(WITH_DOCS "Build the docs" OFF)\n'
                "if(WITH_DOCS)\n  add_subdirectory(docs)\nelse()\n  message(STATUS none)\nendif()\n"
                "if(WITH_SIMD)\n  if(WITH_BENCHMARKS)  # the benchmarks\n"
                "    add_subdirectory(perf)\n  endif()\nendif()\n"
            ),
            "perf/CMakeLists.txt": (
                "if(PROJECT_IS_TOP_LEVEL)\n  add_executable(speed speed.cc)\n"
                "  target_link_libraries(speed PRIVATE benchmark::benchmark)\nendif()\n"
            ),
        },
    )
    done = run_cli("init", cwd=repo)
    assert done.returncode == 0, done.stderr
    config = load_config(repo / "autoresearch.toml")
    configure = "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DWITH_BENCHMARKS=ON > /dev/null"
    assert config.bench.build == f"{configure} && cmake --build build --parallel"
    assert "./build/perf/speed --benchmark_out=" in (repo / "autoresearch.sh").read_text()
    assert "executable (speed), built under the project's option WITH_BENCHMARKS:" in done.stdout


def test_a_cmake_project_s_fetchcontent_dependencies_are_fetched_before_the_night(tmp_path):
    """FetchContent at configure time needs the network, which confined builds lack: init
    writes a `[bench] fetch` that configures once into $AUTORESEARCH_FETCHED, and each arm's
    configure reads every dependency declared (in a CMakeLists.txt or a *.cmake module, not in
    a comment) from there; a project that declares none gets no fetch."""
    bench = (
        "add_executable(speed speed.cc)\n"
        "target_link_libraries(speed PRIVATE benchmark::benchmark)\n"
    )
    repo = project(
        tmp_path,
        {
            "CMakeLists.txt": (
                "cmake_minimum_required(VERSION 3.16)\nproject(p CXX)\ninclude(FetchContent)\n"
                "# FetchContent_Declare(old URL https://example.invalid/old.tar.gz)\n"
                "FetchContent_Declare(\n  googletest\n  GIT_REPOSITORY https://github.com/x/y)\n"
                "include(cmake/deps.cmake)\n" + bench
            ),
            "cmake/deps.cmake": "FetchContent_Declare(fmt URL https://example.invalid/fmt.zip)\n",
        },
    )
    done = run_cli("init", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "its FetchContent dependencies (googletest, fmt) fetched before the night" in done.stdout
    config = load_config(repo / "autoresearch.toml")
    assert config.bench.fetch == (
        'cmake -S . -B "$AUTORESEARCH_FETCHED/build" -DCMAKE_BUILD_TYPE=Release '
        '-DFETCHCONTENT_BASE_DIR="$AUTORESEARCH_FETCHED/deps" > /dev/null'
    )
    assert config.bench.build == (
        "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release"
        ' -DFETCHCONTENT_SOURCE_DIR_GOOGLETEST="$AUTORESEARCH_FETCHED/deps/googletest-src"'
        ' -DFETCHCONTENT_SOURCE_DIR_FMT="$AUTORESEARCH_FETCHED/deps/fmt-src"'
        " > /dev/null && cmake --build build --parallel"
    )
    plain = project(tmp_path / "plain", {"CMakeLists.txt": "project(p CXX)\n" + bench})
    assert run_cli("init", cwd=plain).returncode == 0
    assert load_config(plain / "autoresearch.toml").bench.fetch == ""


def test_a_package_with_vitest_benchmarks_is_benched_with_vitest(tmp_path):
    """vitest among the dependencies and a *.bench.* file: `vitest bench` writing its JSON
    report where the loop reads it, the package's tests as checks, node_modules installed once
    per arm from the lock file and kept across reverts; the benchmarks protected like tests."""
    package = {"name": "fibs", "type": "module", "devDependencies": {"vitest": "^4.1.0"}}
    repo = project(
        tmp_path,
        {
            "package.json": json.dumps(package),
            "package-lock.json": "{}",
            "src/fib.js": "export const fib = (n) => n;\n",
            "src/fib.bench.js": "import { bench } from 'vitest';\n",
        },
    )
    done = run_cli("init", "--metric", "fib_20_ns", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "found a JavaScript/TypeScript package with Vitest benchmarks" in done.stdout
    config = load_config(repo / "autoresearch.toml")
    assert (config.bench.format, config.bench.output) == ("vitest", ".autoresearch-bench.json")
    assert config.metric.fallback == "fib_20_min_ns"
    assert config.bench.build.startswith("test -d node_modules || npm ci ")
    assert config.bench.keep == ["node_modules/"]
    assert (
        "npx vitest bench --run --outputJson .autoresearch-bench.json"
        in (repo / "autoresearch.sh").read_text()
    )
    assert "npx vitest run" in (repo / "autoresearch.checks.sh").read_text()
    assert "**/*.js" in config.scope.include
    assert matches_any("src/fib.bench.js", config.protected_globs())
    # Named when it is not one.
    (repo / "src" / "fib.bench.js").unlink()
    refused = run_cli("init", "--force", "--ecosystem", "vitest", cwd=repo)
    assert refused.returncode == 1 and "no Vitest benchmarks" in refused.stderr


def test_a_package_benched_with_tinybench_or_mitata_gets_its_results_as_metric_lines(tmp_path):
    """tinybench among the dependencies and a module that imports it: the bench runs the
    package's `bench` script, or each such module with node, with init's module loaded first
    (it prints each task's median); what the bench runs is protected; named when absent."""
    package = {"name": "fibs", "type": "module", "devDependencies": {"tinybench": "^6.2.0"}}
    bench = "import { Bench } from 'tinybench';\n"
    repo = project(
        tmp_path,
        {
            "package.json": json.dumps(package),
            "src/fib.js": "export const fib = (n) => n;\n",
            "bench/fib bench.mjs": bench,
            "bench/sort.cjs": "const { Bench } = require('tinybench');\n",
            "src/other.js": "import { bench } from 'vitest';\n",
        },
    )
    done = run_cli("init", "--metric", "fibs_fib_20_ns", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "found a JavaScript package with tinybench benchmarks" in done.stdout
    assert "runs `node 'bench/fib bench.mjs' && node bench/sort.cjs`" in done.stdout
    script = (repo / "autoresearch.sh").read_text()
    assert '--import=\\"$PWD/autoresearch.tinybench.mjs\\"' in script
    assert "( exec {metrics}>&-; node 'bench/fib bench.mjs' && node bench/sort.cjs )" in script
    assert "Bench.prototype.run" in (repo / "autoresearch.tinybench.mjs").read_text()
    config = load_config(repo / "autoresearch.toml")
    assert config.metric.name == "fibs_fib_20_ns" and config.bench.format in ("", "auto")
    assert config.metric.fallback == "fibs_fib_20_min_ns"
    assert (
        config.bench.build
        == "test -d node_modules || npm install --no-audit --no-fund --loglevel=error"
    )
    assert config.bench.keep == ["node_modules/"]
    for path in ("autoresearch.tinybench.mjs", "bench/fib bench.mjs", "bench/sort.cjs"):
        assert matches_any(path, config.protected_globs()), path
    assert not matches_any("src/fib.js", config.protected_globs())
    # A `bench` script is what runs, and the package.json that names it is the bench's.
    (repo / "package.json").write_text(json.dumps({**package, "scripts": {"bench": "node x"}}))
    run_cli("init", "--force", cwd=repo)
    assert "( exec {metrics}>&-; npm run bench --silent )" in (repo / "autoresearch.sh").read_text()
    assert matches_any("package.json", load_config(repo / "autoresearch.toml").protected_globs())
    # Named when it is not one.
    (repo / "package.json").write_text(json.dumps({"name": "fibs"}))
    refused = run_cli("init", "--force", "--ecosystem", "tinybench", cwd=repo)
    assert refused.returncode == 1 and "no tinybench benchmarks" in refused.stderr
    # mitata the same way, with a module of its own that wraps mitata's `run`.
    mitata = {"name": "fibs", "devDependencies": {"mitata": "^1.0.0"}}
    (repo / "package.json").write_text(json.dumps(mitata))
    (repo / "bench" / "m.js").write_text("import { bench, run } from 'mitata';\n")
    done = run_cli("init", "--force", cwd=repo)
    assert "found a JavaScript package with mitata benchmarks" in done.stdout
    assert "runs `node bench/m.js`" in done.stdout
    assert "$PWD/autoresearch.mitata.mjs" in (repo / "autoresearch.sh").read_text()
    assert "export async function run" in (repo / "autoresearch.mitata.mjs").read_text()
    assert matches_any("bench/m.js", load_config(repo / "autoresearch.toml").protected_globs())


@pytest.mark.e2e
def test_a_go_benchmark_named_runs_from_its_package_and_go_profiles_it(tmp_path):
    """`init --metric` on a Go module of two packages: the bench runs the one benchmark from
    its own package, and the profile is Go's own CPU profile of it (perf around `go test`
    names no frame of a test binary deleted when the run ends): taken as the config says, it
    names the function the benchmark spends its time in, by file, and leaves nothing in the
    tree."""
    fib = "package fibs\n\nfunc Fib(n int) int {\n\tif n < 2 {\n\t\treturn n\n\t}\n"
    fib += "\treturn Fib(n-1) + Fib(n-2)\n}\n"
    bench = 'package fibs\n\nimport "testing"\n\nvar sink int\n\n'
    bench += "func BenchmarkFib(b *testing.B) {\n\tfor i := 0; i < b.N; i++ {\n"
    bench += "\t\tsink = Fib(20)\n\t}\n}\n"
    other = 'package other\n\nimport "testing"\n\nvar sink int\n\nfunc spin(n int) int {\n'
    other += "\ts := 1\n\tfor i := 1; i < n; i++ {\n\t\ts = s * i % 1000003\n\t}\n\treturn s\n}\n\n"
    other += "func BenchmarkOther(b *testing.B) {\n\tfor i := 0; i < b.N; i++ {\n"
    other += "\t\tsink = spin(20000)\n\t}\n}\n"
    files = {"go.mod": "module example.com/fibs\n", "fib.go": fib, "fib_test.go": bench}
    go = project(tmp_path, {**files, "other/other_test.go": other})
    git(go, "add", "-A")
    git(go, "commit", "-qm", "fibs")
    done = run_cli("init", "--metric", "fib_ns_op", cwd=go)
    assert done.returncode == 0, done.stderr
    script = (go / "autoresearch.sh").read_text()
    assert "-bench '^BenchmarkFib$' -benchmem -count 5 -benchtime 200ms example.com/fibs" in script
    # Its rows, read as the night reads them: the time and the allocations per op.
    ran = subprocess.run(["bash", "autoresearch.sh"], cwd=go, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    config = load_config(go / "autoresearch.toml")
    rows = read_run_metrics(config.bench, ran.stdout, go, "autoresearch.sh")
    assert rows["fib_allocs_op"] == 0 and rows["fib_bytes_op"] == 0 and rows["fib_ns_op"] > 0
    # Five rows of it a run, declared: a sixth, printed by the code it times, is a crash.
    assert load_config(go / "autoresearch.toml").bench.rows == 5
    profile = load_config(go / "autoresearch.toml").profile
    assert profile.format == "pprof" and "-cpuprofile" in profile.command, profile

    top = _go_profile_top(profile.command, go, tmp_path / "cpu.pprof")
    assert "example.com/fibs.Fib (fib.go)" in top, sorted(top)
    assert "example.com/fibs/other.BenchmarkOther (other/other_test.go)" not in top, sorted(top)
    left = git(go, "status", "--porcelain", "--untracked-files=all").split("\n")
    assert not [line for line in left if line.endswith(".test")], left

    # Without --metric the bench runs every package: go test profiles one package at a time,
    # so each is profiled in turn and the profiles merged, the frames of both named; a module
    # whose benchmarks are all in one package gets Go's own profile of them all at once.
    assert run_cli("init", "--force", cwd=go).returncode == 0
    assert load_config(go / "autoresearch.toml").bench.rows == 0  # a name may be in both
    both = load_config(go / "autoresearch.toml").profile
    assert both.format == "pprof", both
    top = _go_profile_top(both.command, go, tmp_path / "both.pprof")
    assert {
        "example.com/fibs.Fib (fib.go)",
        "example.com/fibs/other.BenchmarkOther (other/other_test.go)",
    } <= set(top), sorted(top)
    left = git(go, "status", "--porcelain", "--untracked-files=all").split("\n")
    assert not [line for line in left if line.endswith((".test", ".pprof"))], left
    single = project(tmp_path / "single", files)
    assert run_cli("init", cwd=single).returncode == 0
    whole = load_config(single / "autoresearch.toml").profile
    assert whole.format == "pprof", whole
    assert whole.command.startswith(
        "go test -run '^$' -bench . -benchmem -count 5 -benchtime 200ms example.com/fibs -cpu"
    )


def _go_profile_top(command: str, go: Path, out: Path) -> dict[str, dict]:
    """The profile command run as the loop runs it (bash, in the tree, told where to write),
    and the top frames of what it wrote, as the review reads a pprof profile."""
    env = {**os.environ, "AUTORESEARCH_PROFILE_OUT": str(out)}
    ran = subprocess.run(["bash", "-c", command], cwd=go, env=env, capture_output=True)
    assert ran.returncode == 0, ran.stderr
    traces = subprocess.run(
        ["go", "tool", "pprof", "-traces", "-lines", str(out)],
        cwd=go, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return {t["frame"]: t for t in top_frames(fold(traces.stdout, "pprof", (str(go),)), 10)}


@pytest.mark.e2e
def test_the_metrics_are_listed_and_the_bench_runs_the_one_named(tmp_path):
    """`init --list-metrics`: the benchmarks the harness lists (`go test -list`, `pytest
    --collect-only`), each with the metric to name, and nothing written; `init --metric` then
    writes a bench that runs that benchmark alone, and says so."""
    go_test = (
        GO_TEST + 'func BenchmarkParse(b *testing.B) { b.Run("small", func(*testing.B) {}) }\n'
    )
    go = project(tmp_path / "go", {**PROJECTS["go"], "fib_test.go": go_test})
    listed = run_cli("init", "--list-metrics", cwd=go)
    assert listed.returncode == 0, listed.stderr
    assert "2 benchmarks (go test -list ^Benchmark ./...)" in listed.stdout
    assert re.search(r"^  parse_ns_op +BenchmarkParse$", listed.stdout, re.M), listed.stdout
    assert not (go / "autoresearch.toml").exists()
    done = run_cli("init", "--metric", "parse_small_ns_op", cwd=go)
    assert "the bench runs BenchmarkParse alone" in done.stdout
    bench = (go / "autoresearch.sh").read_text()
    assert "-bench '^BenchmarkParse$'" in bench and "# BenchmarkParse alone" in bench

    tests = PY_TEST + "\n\ndef test_sort(benchmark):\n    benchmark(sorted, [2, 1])\n"
    files = {"fibs.py": "", "tests/test_fib_bench.py": tests, "pytest.ini": PYTEST_INI}
    python = project(tmp_path / "py", files)
    listed = run_cli("init", "--list-metrics", cwd=python)
    assert re.search(r"^  test_sort_ns +tests/test_fib_bench.py::test_sort$", listed.stdout, re.M)
    done = run_cli("init", "--metric", "test_sort_ns", cwd=python)
    assert "tests/test_fib_bench.py::test_sort'" in (python / "autoresearch.sh").read_text()
    assert load_config(python / "autoresearch.toml").metric.fallback == "test_sort_min_ns"
    # Its fastest round comes from the same benchmark, run alone the same way.
    done = run_cli("init", "--force", "--metric", "test_sort_min_ns", cwd=python)
    assert done.returncode == 0, done.stderr
    assert "tests/test_fib_bench.py::test_sort'" in (python / "autoresearch.sh").read_text()
    assert 'name = "test_sort_min_ns"' in (python / "autoresearch.toml").read_text()
    assert load_config(python / "autoresearch.toml").metric.fallback == ""  # a minimum already
    # A reader who stops reading is not an error.
    cut = subprocess.run(
        f"{sys.executable} -m autoresearch.cli init --list-metrics | head -1",
        shell=True, cwd=python, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert cut.stdout.count("\n") == 1 and "Traceback" not in cut.stderr, cut.stderr


def test_each_criterion_and_libtest_listing_names_its_benchmarks_and_not_its_tests():
    # criterion 0.5's listing, then 0.3's (libtest's words, a blank line between), then libtest's.
    lines = ["fib/20: benchmark", "fib 20: benchmark"]
    lines += ["hex_encode: bench", "", "hex_decode: bench"]
    lines += ["tests::it_works: test", "parse: the input: bench", "3 benchmarks"]
    assert cargo_benchmarks(lines) == [
        "fib/20", "fib 20", "hex_encode", "hex_decode", "parse: the input"
    ]  # fmt: skip


def test_a_test_module_pytest_cannot_import_is_named_and_the_rest_listed(tmp_path):
    """A project's suite often needs more than its benchmarks do (a test dependency not
    installed): the module pytest cannot collect is named, and the benchmarks are listed."""
    files = {
        "fibs.py": "def fib(n):\n    return n\n",
        "tests/test_fib_bench.py": "from fibs import fib\n\n\n"
        + PY_TEST.replace("sum, [1, 2]", "fib, 3"),
        "tests/test_codecs.py": "import bson  # pymongo's\n\n\ndef test_it():\n    pass\n",
        "pytest.ini": PYTEST_INI,
    }
    repo = project(tmp_path, files)
    listed = run_cli("init", "--list-metrics", "--python", sys.executable, cwd=repo)
    assert listed.returncode == 0, listed.stderr
    assert "test_fib_ns" in listed.stdout, listed.stdout
    assert "pytest could not collect tests/test_codecs.py" in listed.stderr, listed.stderr


@pytest.mark.e2e
def test_a_metric_init_does_not_find_is_said_with_the_closest_names(tmp_path):
    """`--metric` naming no benchmark the harness lists: the bench runs them all, and init says
    so, naming the names nearest to the one given (a typo, a unit left off)."""
    files = {"go.mod": "module example.com/fibs\n", "fib_test.go": GO_TEST}
    go = project(tmp_path, files)
    git(go, "add", "-A")
    git(go, "commit", "-qm", "fibs")

    done = run_cli("init", "--metric", "fibb_ns_op", cwd=go)

    assert done.returncode == 0, done.stderr
    said = " ".join(done.stdout.split())
    assert "lists reads as fibb_ns_op; the closest: fib_ns_op (" in said
