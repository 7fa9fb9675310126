"""The bundled target for real: its Go tests, its bench's METRIC lines, and a loop on it."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest

from autoresearch.config import load_config
from autoresearch.journal import read_journal
from autoresearch.loop import run_session
from autoresearch.metrics import parse_metrics
from autoresearch.progress import Progress
from autoresearch.session import RunOptions

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def test_checks_pass_on_the_baseline():
    done = subprocess.run(
        ["./autoresearch.checks.sh"], cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "checks: ok" in done.stdout


def test_quick_bench_prints_every_configured_metric():
    done = subprocess.run(
        ["./autoresearch.sh"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "AUTORESEARCH_PROFILE": "quick", "GRANTBENCH_MAX_ITERS": "1"},
    )
    assert done.returncode == 0, done.stderr
    metrics = parse_metrics(done.stdout)
    config = load_config(ROOT / "autoresearch.toml")
    for spec in config.all_metrics():
        assert metrics.get(spec.name, 0) > 0, spec.name
    assert "BenchmarkWritePack/pebble/100k" in done.stdout


def test_bench_fails_loudly_on_a_bad_profile():
    done = subprocess.run(
        ["./autoresearch.sh"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "AUTORESEARCH_PROFILE": "nope"},
    )
    assert done.returncode == 2
    assert "unknown AUTORESEARCH_PROFILE 'nope'" in done.stderr


def test_loop_on_the_bundled_target(tmp_path):
    """A short real session: the big win is kept after passing the checks, a loser reverted."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", "--shared", str(ROOT), str(repo)], check=True)
    queue = repo / "targets/pebble/hypotheses"
    for patch in queue.glob("*.patch"):
        if not patch.name.startswith(("01-", "09-")):
            patch.unlink()
    config = load_config(repo / "autoresearch.toml")
    config = dataclasses.replace(
        config,
        bench=dataclasses.replace(config.bench, calibration_runs=4),
        decision=dataclasses.replace(
            config.decision, min_runs=6, max_runs=6, looks=1, confirm_runs=3
        ),
        session=dataclasses.replace(config.session, name="e2e"),
        # Patches here never touch the SQLite engine: a wide budget keeps this test about the
        # loop, not about SQLite's run-to-run noise on a shared machine.
        sentinel=[dataclasses.replace(s, budget_pct=50.0) for s in config.sentinel],
        # Only the 100k scale runs here: the pre-flight would rightly refuse the 10k metric.
        secondary=[s for s in config.secondary if "_10k_" not in s.name],
        proposer=[p for p in config.proposer if p.get("kind", "queue") == "queue"],  # no sweeps
    )
    # Six runs per arm cannot see 5% (the night would be refused): this test wants the big win.
    options = RunOptions(env={"GRANTBENCH_SCALES": "100k"}, accept_noise=True)

    outcome = run_session(config, options, Progress(quiet=True))

    records = read_journal(repo / "experiments.jsonl").experiments
    by_title = {r.source.rsplit("/", 1)[-1]: r for r in records}
    skip_get = by_title["01-skip-get-fresh-sync.patch"]
    presort = by_title["09-presort-index-keys.patch"]
    assert skip_get.status == "keep", skip_get.decision
    assert skip_get.checks["exit_code"] == 0
    assert skip_get.decision["metrics"]["pebble_writepack_100k_ms"]["change_pct"] < -20
    assert presort.status in ("discard", "inconclusive"), presort.decision
    assert outcome.kept == 1
    assert outcome.confirmed_change_pct < -20
    log = subprocess.run(
        ["git", "log", "--format=%s", "-1", "autoresearch/e2e"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    assert log.stdout.strip() == skip_get.title
