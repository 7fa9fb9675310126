"""A JavaScript package benched with Vitest, as a new user sets it up: its dependencies
installed from the npm registry with a lock file committed, `init` finds the benchmarks and
writes the bench (`vitest bench` writing its JSON report to the file the loop reads), the
checks (`vitest run`) and the build (`npm ci` in each arm, offline from npm's cache, its
node_modules kept); nothing is written by hand but the hypotheses, and the night keeps the
known win and not the null change; the PR names the metric and node.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import git, run_cli
from ecosystem_night import measured_with, night, project, queue_win_and_null

from autoresearch.repo.state_dir import SessionPaths

pytestmark = pytest.mark.slow  # vitest from the npm registry, and its runs

PACKAGE = {
    "name": "fibs",
    "version": "1.0.0",
    "type": "module",
    "private": True,
    "devDependencies": {"vitest": "^4.1.0"},
}
# The package's lock file, as a project commits it: Vitest 4.1.12 on Vite 8.3.8. Resolved
# afresh, the tree drifts with the registry: Vite 8.4 added an optional dependency the
# registry mirror here does not serve, which `npm install` skips and `npm ci` then refuses.
VITEST_LOCK = (Path(__file__).parent / "fixtures" / "js" / "vitest-package-lock.json").read_text()
SLOW = """/** The n-th Fibonacci number. */
export function fib(n) {
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}
"""
FAST = """/** The n-th Fibonacci number. */
export function fib(n) {
  let [a, b] = [0, 1];
  for (let i = 0; i < n; i++) [a, b] = [b, a + b];
  return a;
}
"""
NULL = SLOW.replace("/** The n-th Fibonacci number. */", "/** The n-th Fibonacci number, F(n). */")
# Short benchmark runs: the test's time, not a night's.
BENCH = """import { bench } from 'vitest';
import { fib } from './fib.js';

bench('fib 20', () => { fib(20); }, { time: 100, warmupTime: 20 });
"""
TEST = """import { expect, test } from 'vitest';
import { fib } from './fib.js';

test('the first numbers', () => {
  expect([0, 1, 2, 3, 4, 5, 6, 7].map(fib)).toEqual([0, 1, 1, 2, 3, 5, 8, 13]);
});
"""


def test_the_machine_has_node():
    """Node and npm, as the coding-agent CLIs need them too (.ci/run)."""
    assert shutil.which("node") and shutil.which("npm"), "node and npm on the PATH"


@pytest.mark.slow(seconds=130)
def test_a_night_on_a_javascript_package_benched_with_vitest(tmp_path):
    files = {
        "package.json": json.dumps(PACKAGE, indent=2),
        "package-lock.json": VITEST_LOCK,
        "src/fib.js": SLOW,
        "src/fib.bench.js": BENCH,
        "src/fib.test.js": TEST,
        ".gitignore": "node_modules/\n",
    }
    repo = fib_night(tmp_path, files, "fib_20_ns", "a JavaScript/TypeScript package with Vitest")

    check = run_cli("check", cwd=repo)
    assert check.returncode == 0, check.stdout + check.stderr
    assert any(line.split()[:1] == ["fib_20_ns"] for line in check.stdout.splitlines())

    night(repo, "fib_20_ns", "Iterate", "Say F(n)")
    assert "node" in measured_with(repo, "fib_20_ns")
    # Each arm installed its own node_modules once, offline, and kept it across the reverts.
    paths = SessionPaths(repo / ".git" / "autoresearch" / "main")
    assert (paths.worktree / "node_modules" / "vitest").is_dir()
    assert (paths.baseline / "node_modules" / "vitest").is_dir()


def fib_night(tmp_path, files: dict[str, str], metric: str, found: str):
    """The package of `files`, its dependencies installed, `init` run with `metric` (finding
    `found` benchmarks), and the night's win and null queued."""
    repo = project(tmp_path, "fibs", files)
    install(repo)
    init = run_cli("init", "--metric", metric, cwd=repo)
    assert init.returncode == 0, init.stderr
    assert f"found {found} benchmarks" in init.stdout
    queue_win_and_null(
        repo,
        "src/fib.js",
        SLOW,
        ("Iterate", "n additions instead of fib(n) calls", FAST),
        ("Say F(n)", "none: a comment", NULL),
    )
    return repo


def install(repo) -> None:
    """The dependencies installed before the night, as the repository guide says, and the lock
    file committed (with the registry's URLs in it, which this machine's npm config leaves
    out: npm ci offline finds a tarball in its cache by them), unless the package came with
    its own."""
    env = {**os.environ, "npm_config_omit_lockfile_registry_resolved": "false"}
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=repo,
        check=True,
        timeout=600,
        env=env,
    )
    if git(repo, "status", "--porcelain"):
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "package-lock.json")


# The package's own bench, which prints a forged line of the metric: the workload's output is
# its log, never a measurement.
TINYBENCH = """import { Bench } from 'tinybench';
import { fib } from './src/fib.js';

const bench = new Bench({ name: 'fibs', time: 100, warmupTime: 20 });
bench.add('fib 20', () => { fib(20); });
await bench.run();
console.table(bench.table());
console.log('METRIC fibs_fib_20_ns=1');
"""
# tinybench 2, as a CommonJS module the bench runs with node: a task of its own, unnamed bench.
TINYBENCH_2 = """const { Bench } = require('tinybench');
const bench = new Bench({ time: 50 });
bench.add('sum 100', () => { let s = 0; for (let i = 0; i < 100; i++) s += i; });
bench.run();
"""


def test_a_night_on_a_javascript_package_benched_with_tinybench(tmp_path):
    """tinybench has no report of its own: init's module, which node loads before the
    package's `bench` script, prints each task's median. The night keeps the win and not the
    null; the workload's forged METRIC line is not read. And tinybench 2, a CommonJS module
    run with node, the same way."""
    package = {**PACKAGE, "scripts": {"bench": "node bench.js", "test": "node test.js"}}
    package["devDependencies"] = {"tinybench": "6.2.5"}
    test = "import assert from 'node:assert';\nimport { fib } from './src/fib.js';\n"
    test += (
        "assert.deepStrictEqual([0, 1, 2, 3, 4, 5, 6, 7].map(fib), [0, 1, 1, 2, 3, 5, 8, 13]);\n"
    )
    files = {
        "package.json": json.dumps(package, indent=2),
        "src/fib.js": SLOW,
        "bench.js": TINYBENCH,
        "test.js": test,
        ".gitignore": "node_modules/\n",
    }
    repo = fib_night(tmp_path, files, "fibs_fib_20_ns", "a JavaScript package with tinybench")
    check = run_cli("check", "--no-calibrate", cwd=repo)
    assert check.returncode == 0, check.stdout + check.stderr
    (listed,) = [line.split() for line in check.stdout.splitlines() if "fibs_fib_20_ns" in line]
    assert float(listed[1]) > 1000  # fib(20)'s median in ns, not the forged 1
    (fastest,) = [x.split() for x in check.stdout.splitlines() if "fibs_fib_20_min_ns" in x]
    assert 0 < float(fastest[1]) <= float(listed[1])  # its fastest sample beside it
    night(repo, "fibs_fib_20_ns", "Iterate", "Say F(n)")

    old = project(tmp_path, "sums", {"sum.cjs": TINYBENCH_2, ".gitignore": "node_modules/\n"})
    (old / "package.json").write_text(
        json.dumps(
            {
                "name": "sums",
                "scripts": {"test": "node --check sum.cjs"},
                "devDependencies": {"tinybench": "2.9.0"},
            }
        )
    )
    install(old)
    assert run_cli("init", "--metric", "sum_100_ns", cwd=old).returncode == 0
    git(old, "add", "-A")
    git(old, "commit", "-qm", "autoresearch")
    check = run_cli("check", "--no-calibrate", cwd=old)
    assert check.returncode == 0, check.stdout + check.stderr
    listed = [line.split()[0] for line in check.stdout.splitlines() if line.startswith("  ")]
    assert {"sum_100_ns", "sum_100_min_ns"} <= set(listed)  # tinybench 2 keeps its min too


# mitata's own bench, its `run` quiet: the module init writes reports what it returns.
MITATA = """import { bench, group, run } from 'mitata';
import { fib } from './src/fib.js';

group('fibs', () => {
  bench('fib 15', () => fib(15));
});
await run({ format: 'quiet' });
"""


def test_a_javascript_package_benched_with_mitata_is_checked_as_it_comes(tmp_path):
    """mitata 1, run from the package's `bench` script: init's module wraps mitata's `run`,
    and `check` lists each benchmark's median by its group and name."""
    package = {**PACKAGE, "scripts": {"bench": "node bench.js", "test": "node --check bench.js"}}
    package["devDependencies"] = {"mitata": "1.0.34"}
    files = {
        "package.json": json.dumps(package, indent=2),
        "src/fib.js": FAST,
        "bench.js": MITATA,
        ".gitignore": "node_modules/\n",
    }
    repo = project(tmp_path, "fibs", files)
    install(repo)
    init = run_cli("init", "--metric", "fibs_fib_15_ns", cwd=repo)
    assert init.returncode == 0, init.stderr
    assert "found a JavaScript package with mitata benchmarks" in init.stdout
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "autoresearch")
    check = run_cli("check", "--no-calibrate", cwd=repo)
    assert check.returncode == 0, check.stdout + check.stderr
    (listed,) = [line.split() for line in check.stdout.splitlines() if "fibs_fib_15_ns" in line]
    assert float(listed[1]) > 0
    (fastest,) = [x.split() for x in check.stdout.splitlines() if "fibs_fib_15_min_ns" in x]
    assert 0 < float(fastest[1]) <= float(listed[1])
