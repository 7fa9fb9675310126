"""The bundled target for real: its Go tests, its bench's METRIC lines, and a loop on it."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autoresearch.bench.metrics import parse_metrics
from autoresearch.config import load_config
from autoresearch.journal.store import read_journal
from autoresearch.loop.driver import run_session
from autoresearch.loop.session import RunOptions
from autoresearch.profiles import load_profile, top_frames
from autoresearch.progress import Progress

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def make_holdout(target: Path) -> Path:
    """loop.py's own: the hidden holdout's settings in the bundled target."""
    spec = importlib.util.spec_from_file_location("bundled_loop", ROOT / "loop.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_holdout(target)


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


def _stand_in_agent(io: Path) -> dict:
    """The agent proposer for a stand-in agent whose one "idea" is the queue's patch 01 (the
    big win), replayed. The agent runs confined like the target (its own tree, a private /tmp):
    what it reads (the stand-in, its script, the patch it replays) sits in `io`, shared with it."""
    io.mkdir()
    shutil.copy(ROOT / "tests" / "standin_agent.py", io)
    patch = next((ROOT / "targets/pebble/hypotheses").glob("01-*.patch"))
    steps = [{"do": "replay", "patch": str(shutil.copy(patch, io))}]
    (io / "script.json").write_text(json.dumps(steps))
    return {
        "kind": "agent",
        "preset": "command",
        "command": f"{sys.executable} {io / 'standin_agent.py'}",
        "timeout_s": 120,
        "max_proposals": 1,
        "env": {"STANDIN_SCRIPT": str(io / "script.json")},
    }


def _short_night(tmp_path: Path):
    """A short real session of two proposers: the stand-in agent proposing patch 01 (the big
    win), then the queue holding patch 09 alone (a negative control). One night serves both:
    an agent's night on the real target, confined, ends as the queue's own would."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", "--shared", str(ROOT), str(repo)], check=True)
    queue = repo / "targets/pebble/hypotheses"
    for patch in queue.glob("*.patch"):
        if not patch.name.startswith("09-"):
            patch.unlink()
    io = tmp_path / "agent-io"
    agent = _stand_in_agent(io)
    make_holdout(repo / "targets/pebble")  # what loop.py makes before the night
    config = load_config(repo / "autoresearch.toml")
    # One look at the holdout: its further looks are test_holdout.py's; here, CI's minutes.
    config = dataclasses.replace(
        config, holdout=dataclasses.replace(config.holdout, max_pairs=config.holdout.pairs)
    )
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
        # The agent, then the queue (no sweeps).
        proposer=[agent, *(p for p in config.proposer if p.get("kind", "queue") == "queue")],
        sandbox=dataclasses.replace(config.sandbox, writable=[*config.sandbox.writable, str(io)]),
    )
    # Six runs per arm cannot see 5% (the night would be refused): this test wants the big win.
    options = RunOptions(env={"GRANTBENCH_SCALES": "100k"}, accept_noise=True)
    outcome = run_session(config, options, Progress(quiet=True))
    return repo, outcome, read_journal(repo / "experiments.jsonl").experiments


@pytest.mark.slow(seconds=500)
def test_loop_on_the_bundled_target(tmp_path):
    """A short real session: the big win, proposed by an agent, is kept after passing the
    checks; the queue's loser is reverted."""
    repo, outcome, records = _short_night(tmp_path)

    final = {r.title: r for r in records}  # each hypothesis by its last outcome
    assert len(final) == 2, [(r.title, r.status) for r in records]
    # The agent's one proposal; on a busy machine an undecided one is measured again once.
    (skip_get,) = (r for r in final.values() if r.proposer == "agent")
    (presort,) = (r for r in final.values() if r.proposer == "queue")
    assert skip_get.title.startswith("Skip the read-before-write Get"), skip_get.title
    assert presort.source.endswith("09-presort-index-keys.patch"), presort.source
    first = next(r for r in records if r.proposer == "agent")  # the agent's own run
    assert first.agent.preset == "command" and first.agent.usage.cost_usd is None
    assert skip_get.status == "keep", skip_get.decision
    assert skip_get.checks.exit_code == 0
    assert skip_get.decision.metrics["pebble_writepack_100k_ms"].change_pct < -20
    assert presort.status in ("discard", "inconclusive"), presort.decision
    assert outcome.kept == 1
    # The hidden holdout (another key distribution and size) bore the win out, and the
    # confirmation measured it there too; the equivalence digest ran before each bench.
    assert skip_get.decision.holdout.verdict != "worse", skip_get.decision.holdout
    (confirmation,) = read_journal(repo / "experiments.jsonl").confirmations
    # Three pairs each: what they measure on a busy machine is not asserted (one burst makes
    # +22% of a -44% win), only that both were measured, pair by pair, and that neither
    # interval shows the kept change a loss.
    assert confirmation.change_pct == outcome.confirmed_change_pct
    assert len(confirmation.metrics["pebble_writepack_100k_ms"].tip_samples) == 3
    assert len(confirmation.holdout.tip_samples) == 3, confirmation.holdout
    assert confirmation.ci_low_pct < 0 and confirmation.holdout.ci_low_pct < 0
    logs = Path(skip_get.bench_logs[0]).parent
    assert (logs / "equivalence-candidate.log.stdout").read_text().count("sha256=") == 2
    # The base's profile names the read before each write among its top frames; the keep's
    # differential profile shows that read's share fall.
    profiles = repo / ".git" / "autoresearch" / "e2e" / "profiles"
    base = load_profile(profiles / f"{skip_get.parent_commit}.folded")
    kept = load_profile(profiles / f"{skip_get.kept_commit}.folded")
    assert base and kept, sorted(p.name for p in profiles.iterdir())
    # pprof names each function's file in the tree (and its costliest line).
    previous = "grantstore/grantstore.(*grantWriter).previous (targets/pebble/grantstore/grant_"
    previous += "writer.go)"
    shares = [{t["frame"]: t["total_pct"] for t in top_frames(p, 10_000)} for p in (base, kept)]
    # Among the top frames, with a third of the samples or so: Pebble's background compaction
    # is a chain of a dozen frames of about the same share, which can rank above it.
    top = {t["frame"]: t for t in top_frames(base, 40)}
    assert previous in top and top[previous]["total_pct"] > 10, sorted(top)
    assert top[previous]["line"].startswith("targets/pebble/grantstore/grant_writer.go:"), top
    assert shares[1].get(previous, 0.0) < shares[0][previous] / 2, (
        shares[0][previous],
        shares[1].get(previous),
    )
    log = subprocess.run(
        ["git", "log", "--format=%s", "-1", "autoresearch/e2e"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    assert log.stdout.strip() == skip_get.title
