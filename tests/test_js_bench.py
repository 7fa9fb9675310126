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


def test_a_night_on_a_javascript_package_benched_with_vitest(tmp_path):
    files = {
        "package.json": json.dumps(PACKAGE, indent=2),
        "src/fib.js": SLOW,
        "src/fib.bench.js": BENCH,
        "src/fib.test.js": TEST,
        ".gitignore": "node_modules/\n",
    }
    repo = project(tmp_path, "fibs", files)
    # The dependencies installed before the night, as the repository guide says, and the lock
    # file committed (with the registry's URLs in it, which this machine's npm config leaves
    # out: npm ci offline finds a tarball in its cache by them).
    env = {**os.environ, "npm_config_omit_lockfile_registry_resolved": "false"}
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=repo,
        check=True,
        timeout=600,
        env=env,
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "package-lock.json")

    init = run_cli("init", "--metric", "fib_20_ns", cwd=repo)
    assert init.returncode == 0, init.stderr
    assert "found a JavaScript/TypeScript package with Vitest benchmarks" in init.stdout
    queue_win_and_null(
        repo,
        "src/fib.js",
        SLOW,
        ("Iterate", "n additions instead of fib(n) calls", FAST),
        ("Say F(n)", "none: a comment", NULL),
    )

    check = run_cli("check", cwd=repo)
    assert check.returncode == 0, check.stdout + check.stderr
    assert any(line.split()[:1] == ["fib_20_ns"] for line in check.stdout.splitlines())

    night(repo, "fib_20_ns", "Iterate", "Say F(n)")
    assert "node" in measured_with(repo, "fib_20_ns")
    # Each arm installed its own node_modules once, offline, and kept it across the reverts.
    paths = SessionPaths(repo / ".git" / "autoresearch" / "main")
    assert (paths.worktree / "node_modules" / "vitest").is_dir()
    assert (paths.baseline / "node_modules" / "vitest").is_dir()
