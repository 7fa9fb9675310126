"""A Rust crate benched with criterion, as a new user sets it up: `init` finds the criterion
dependency and writes the build (`cargo bench --no-run`, its `target/` kept in each arm's tree
across reverts), the bench (criterion's text read as it prints it) and the checks (`cargo
test`); nothing is written by hand but the hypotheses, and the night keeps the known win and
not the null change, each arm building in its own `target/`; the PR names the metric and the
toolchain.
"""

from __future__ import annotations

import shutil

import pytest
from conftest import git, run_cli
from ecosystem_night import (
    base_profile_share,
    measured_with,
    night,
    project,
    queue_win_and_null,
)

from autoresearch.repo.state_dir import SessionPaths

pytestmark = pytest.mark.slow  # criterion fetched from crates.io and built, in release

CARGO = """[package]
name = "fibs"
version = "0.1.0"
edition = "2021"

[dev-dependencies]
criterion = { version = "0.5", default-features = false, features = ["cargo_bench_support"] }

[[bench]]
name = "fib"
harness = false
"""
SLOW = """/// The n-th Fibonacci number.
pub fn fib(n: u64) -> u64 {
    if n < 2 { n } else { fib(n - 1) + fib(n - 2) }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_first_numbers() {
        assert_eq!((0..8).map(super::fib).collect::<Vec<_>>(), [0, 1, 1, 2, 3, 5, 8, 13]);
    }
}
"""
FAST = SLOW.replace(
    "    if n < 2 { n } else { fib(n - 1) + fib(n - 2) }\n",
    "    let (mut a, mut b) = (0, 1);\n    for _ in 0..n {\n        (a, b) = (b, a + b);\n"
    "    }\n    a\n",
)
NULL = SLOW.replace("/// The n-th Fibonacci number.", "/// The n-th Fibonacci number, F(n).")
# The crate's own criterion settings: short runs (the test's time, not a night's).
BENCH = """use std::time::Duration;

use criterion::{black_box, criterion_group, criterion_main, Criterion};

fn bench(c: &mut Criterion) {
    c.bench_function("fib 20", |b| b.iter(|| fibs::fib(black_box(20))));
    c.bench_function("fib 25", |b| b.iter(|| fibs::fib(black_box(25))));
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_millis(300))
        .sample_size(10);
    targets = bench
}
criterion_main!(benches);
"""


def test_the_machine_has_cargo():
    """The machine's Rust toolchain; criterion comes from crates.io."""
    assert shutil.which("cargo"), "cargo on the PATH"


@pytest.mark.slow(seconds=300)
def test_a_night_on_a_rust_crate_benched_with_criterion(tmp_path):
    files = {"Cargo.toml": CARGO, "src/lib.rs": SLOW, "benches/fib.rs": BENCH}
    # A library crate that ignores its Cargo.lock (cargo's old default): each worktree resolves
    # its dependencies afresh, with no network when confined.
    repo = project(tmp_path, "fibs", {**files, ".gitignore": "target/\nCargo.lock\n"})
    # Nothing fetched by hand: init's listing fetches the crates, and the night's pre-flight
    # (`[bench] fetch`) before its confined builds, which are told to work offline
    # (CARGO_NET_OFFLINE) and resolve from what the fetch left.
    assert not git(repo, "status", "--porcelain"), "Cargo.lock ignored"

    # The benchmarks as criterion lists them, and the bench narrowed to the one named: its
    # filter and criterion's options given to that target alone (the library's test harness
    # refuses criterion's).
    listed = run_cli("init", "--list-metrics", cwd=repo, timeout=600)
    assert listed.returncode == 0, listed.stderr
    assert "  fib_20_ns  fib 20" in listed.stdout and "  fib_25_ns  fib 25" in listed.stdout
    init = run_cli("init", "--metric", "fib_20_ns", cwd=repo)
    assert init.returncode == 0, init.stderr
    assert "found a Cargo crate with criterion benches" in init.stdout
    assert (
        "cargo bench --quiet --bench 'fib' -- '^fib 20$' --noplot"
        in (repo / "autoresearch.sh").read_text()
    )
    text = (repo / "autoresearch.toml").read_text()
    assert 'keep = ["target/"]' in text and 'format = "criterion"' in text
    queue_win_and_null(
        repo,
        "src/lib.rs",
        SLOW,
        ("Iterate", "n additions instead of fib(n) calls", FAST),
        ("Say F(n)", "none: a doc comment", NULL),
    )

    journal = night(repo, "fib_20_ns", "Iterate", "Say F(n)", timeout=900)
    # The base's profile (init's perf command) names the function the win rewrites.
    assert base_profile_share(repo, journal, "fib") > 20
    assert journal.confirmations and journal.confirmations[-1].change_pct < -50
    # Each arm built in its own target/, kept across the reverts: never one shared.
    paths = SessionPaths(repo / ".git" / "autoresearch" / "main")
    for tree in (paths.worktree, paths.baseline):
        assert (tree / "target" / "release").is_dir(), tree
    measured = measured_with(repo, "fib_20_ns")
    assert "rustc " in measured and "cargo " in measured, measured


# A crate as crates.io serves it: its manifest normalised (`[dev-dependencies.criterion]`),
# criterion 0.3 (whose listing says `name: bench`, and which has no --exact).
REGISTRY_CARGO = """[package]
edition = "2021"
name = "fibs"
version = "0.1.0"

[[bench]]
name = "fib"
harness = false
[dev-dependencies.criterion]
version = "0.3"
default-features = false
features = ["cargo_bench_support"]
"""


@pytest.mark.slow(seconds=150)
def test_a_registry_crate_on_criterion_0_3_is_listed_narrowed_and_measured(tmp_path):
    files = {"Cargo.toml": REGISTRY_CARGO, "src/lib.rs": SLOW, "benches/fib.rs": BENCH}
    repo = project(tmp_path, "fibs", {**files, ".gitignore": "target/\nCargo.lock\n"})

    listed = run_cli("init", "--list-metrics", cwd=repo, timeout=600)
    assert listed.returncode == 0, listed.stderr
    assert "  fib_20_ns  fib 20" in listed.stdout and "  fib_25_ns  fib 25" in listed.stdout
    init = run_cli("init", "--metric", "fib_25_ns", cwd=repo)
    assert init.returncode == 0, init.stderr
    assert (
        "cargo bench --quiet --bench 'fib' -- '^fib 25$' --noplot"
        in (repo / "autoresearch.sh").read_text()
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "autoresearch session")

    checked = run_cli("check", "--no-calibrate", cwd=repo, timeout=900)
    said = checked.stdout + checked.stderr
    assert checked.returncode == 0, said
    # The one benchmark named, and not the other: the filter matched it alone.
    printed = [line.split()[0] for line in said.splitlines() if line.startswith("  fib_")]
    assert printed == ["fib_25_ns"], said
