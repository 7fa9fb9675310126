"""Interleaved arms, builds once per arm, calibration's warnings, and the confirmation."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path

import pytest
from conftest import experiments, git, run, run_cli

from autoresearch.bench.measure import Harness, measure_pair
from autoresearch.config import load_config
from autoresearch.decide.calibration import run_seconds
from autoresearch.journal.store import read_journal
from autoresearch.repo.state_dir import session_paths
from autoresearch.statuses import Aggregate


def test_arms_alternate_after_calibration_on_the_baseline_tree(target, tmp_path):
    trace = tmp_path / "trace"
    target.add_hypothesis("01-loss", {"src/value.txt": "130\n"})

    run(target, env={"BENCH_TRACE": str(trace)})

    trees = trace.read_text().split()
    # Calibration alternates too, the same code in both arms (the A/A check).
    assert trees[:4] == ["baseline", "worktree", "worktree", "baseline"]
    pairs = trees[4:]
    assert len(pairs) == 10  # 5 pairs: the first look decides a clear loss
    expected = []
    for i in range(1, 6):
        expected += ["baseline", "worktree"] if i % 2 else ["worktree", "baseline"]
    assert pairs == expected
    (record,) = experiments(target)
    assert record.decision.design.n_baseline == record.decision.design.n_candidate == 5
    assert len(record.bench_logs) == len(record.bench_durations_s) == 10


def test_each_arm_is_built_once_and_the_baseline_rebuilt_when_it_moves(target, tmp_path):
    target.configure(build="./build.py")
    git(target.root, "commit", "-qam", "build step")
    builds = tmp_path / "builds"
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    target.add_hypothesis("02-loss", {"src/sentinel.txt": "70\n"})

    run(target, env={"BUILD_LOG": str(builds)})

    assert [r.status for r in experiments(target)] == ["keep", "discard"]
    # Calibration builds both arms at the best; each candidate is built once after its patch.
    assert builds.read_text().split() == [
        "baseline",
        "worktree",  # calibration of the base commit
        "worktree",  # candidate 01
        "baseline",
        "worktree",  # calibration of the kept commit
        "worktree",  # candidate 02
    ]


def test_a_build_failure_is_a_crash(target, tmp_path):
    target.configure(build="./build.py")
    git(target.root, "commit", "-qam", "build step")
    target.add_hypothesis("01-broken", {"src/mode.txt": "nobuild\n"})

    run(target)

    (record,) = experiments(target)
    assert record.status == "crash"
    assert record.error.startswith("build exit code 2")


def test_aa_check_flags_a_harness_that_favours_an_arm(target, tmp_path):
    target.configure(calibration_runs=10)
    # Runs go B C C B B C ...: these factors make every candidate-arm run 20% slower.
    factors = {"BENCH_FACTORS": "1.0,1.2,1.2,1.0", "BENCH_COUNTER": str(tmp_path / "n")}
    run(target, env=factors, accept_noise=True)

    (calibration,) = read_journal(target.journal).calibrations
    assert calibration.aa.ok is False
    assert calibration.aa.shift_pct == pytest.approx(20)
    assert calibration.aa.n_per_arm == 5
    assert any("A/A check failed" in w for w in calibration.warnings)


def _night_with_noise(target, tmp_path, factors: str):
    """A night on one winning hypothesis, six calibration runs, each run's noise factor from
    `factors` in turn; (the run, the --env counting the runs)."""
    target.configure(calibration_runs=6)
    git(target.root, "commit", "-qam", "six calibration runs")
    target.add_hypothesis("01-win", {"src/value.txt": "65\n"})
    counter = f"BENCH_COUNTER={tmp_path / 'n'}"
    done = run_cli("run", "--env", f"BENCH_FACTORS={factors}", "--env", counter, cwd=target.root)
    return done, counter


def test_too_noisy_a_bench_stops_before_the_night_unless_accepted(target, tmp_path):
    """Blind to three times the effect asked for (5%): refused, saying what it detects and what
    would let it see 5%."""
    done, counter = _night_with_noise(target, tmp_path, "0.8,1.2,1.0,0.85,1.15,1.05")

    assert done.returncode == 1
    # Measured once more before the refusal: the second calibration says it too.
    first, calibration = read_journal(target.journal).calibrations
    assert first.detectable_effect_pct > 3 * 5.0
    assert calibration.detectable_effect_pct > 3 * 5.0
    assert calibration.runs_needed_for_target > 8
    (warning,) = [w for w in calibration.warnings if "target_effect_pct = 5%" in w]
    assert f"raise decision.max_runs to {calibration.runs_needed_for_target}" in warning
    assert f"warning: {warning}" in done.stderr
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith("error: the bench is too noisy") and "--accept-noise" in error
    assert f"detect {calibration.detectable_effect_pct:.1f}% with 90% power" in error
    assert "over 3 times it" in error
    assert experiments(target) == []
    assert git(target.root, "status", "--porcelain", "--untracked-files=no") == ""

    # Run again, told to go on: the night's baseline is this run's measurement of the base, not
    # the refused one's.
    quieter = "BENCH_FACTORS=0.9,1.1,1.0,0.95,1.05,1.0"
    done = run_cli("run", "--accept-noise", "--env", quieter, "--env", counter, cwd=target.root)
    assert done.returncode == 0, done.stderr
    assert [r.title for r in experiments(target)] == ["01-win"]
    refused, accepted = read_journal(target.journal).calibrations[1:3]
    assert refused.medians["time_ms"] != accepted.medians["time_ms"]
    status = json.loads(run_cli("status", "--json", cwd=target.root).stdout)
    assert status["baseline"] == pytest.approx(accepted.medians["time_ms"])


def test_a_drift_both_runs_of_a_pair_share_is_not_noise_to_the_paired_rule(target, tmp_path):
    """A machine whose speed wanders from pair to pair (a shared VM's neighbours) but not
    within one: the runs spread by a quarter, their pairs' ratios by well under 1%. The rule
    judges the ratios, so the night is not refused on the runs' spread, and what it can see is
    said with both noises. (The floor a `noise_multiplier` sets stays the runs' spread.)"""
    done, _ = _night_with_noise(target, tmp_path, "0.8,0.81,1.2,1.19,1.0,1.01")

    assert done.returncode == 0, done.stderr
    (calibration, *_) = read_journal(target.journal).calibrations
    assert calibration.noise_pct["time_ms"] > 15  # the runs' own spread
    assert calibration.detectable_effect_pct < 5.0  # as the pairs see it
    assert not calibration.warnings
    said = done.stdout + done.stderr
    seen = r"noise 2\d.\d\d% a run, 0.\d\d% within a pair: 8 runs per arm detect"
    assert re.search(seen, said), said
    assert [r.title for r in experiments(target)] == ["01-win"]  # the night ran


def test_a_bench_that_misses_only_the_smaller_wins_runs_the_night_and_says_so(target, tmp_path):
    """Noisier than the 5% asked for, but not blind to three times it: the night runs (the
    large wins it is for are still kept), and the warning says what it can detect."""
    done, _ = _night_with_noise(target, tmp_path, "0.96,1.04,1.0,0.97,1.03,1.01")

    assert done.returncode == 0, done.stderr
    (calibration, *_) = read_journal(target.journal).calibrations
    assert 5.0 < calibration.detectable_effect_pct < 3 * 5.0
    (warning,) = [w for w in calibration.warnings if "target_effect_pct = 5%" in w]
    assert f"wins under {calibration.detectable_effect_pct:.1f}% will often end inconclusive" in (
        warning
    )
    assert f"warning: {warning}" in done.stderr
    assert [(r.title, r.status) for r in experiments(target)] == [("01-win", "keep")]


def test_session_ends_with_a_confirmation_and_confirm_repeats_it(target):
    target.configure(confirm="true")
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})

    outcome = run(target)

    assert outcome.confirmed_change_pct == pytest.approx(-20)
    (confirmation,) = read_journal(target.journal).confirmations
    assert confirmation.base_commit == git(target.root, "rev-parse", "main").strip()
    assert confirmation.tip_commit == experiments(target)[0].kept_commit
    assert confirmation.runs_per_arm == 4
    assert confirmation.metrics["time_ms"].baseline_samples == [100.0] * 4
    assert confirmation.ci_low_pct == pytest.approx(-20) == confirmation.ci_high_pct

    done = run_cli("confirm", "--runs", "5", "--quiet", cwd=target.root)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("confirmed: time_ms -20.00% (95% CI")
    assert len(read_journal(target.journal).confirmations) == 2
    status = run_cli("status", cwd=target.root)
    assert "confirmed: -20.00%" in status.stdout


def test_no_confirmation_without_keeps_and_confirm_says_why(target):
    target.configure(confirm="true")
    target.add_hypothesis("01-loss", {"src/value.txt": "130\n"})
    run(target)
    assert read_journal(target.journal).confirmations == []
    done = run_cli("confirm", cwd=target.root)
    assert done.returncode == 1
    assert "has kept nothing yet" in done.stderr


QUIET_BENCH = """
import os
from pathlib import Path
# Counted beside the arm (unconfined here): a file in its tree would be gone after each run.
counter = Path("..", "count-" + Path.cwd().name)
n = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(n + 1))
print(f"METRIC t_ms={100 + n}")
print(f"METRIC ops={1000 - n}")
print(f"METRIC cpus={len(os.sched_getaffinity(0))}")
"""


@pytest.mark.e2e
def test_warmup_runs_are_dropped_repeats_make_one_sample_and_cpus_pin(tmp_path):
    (tmp_path / "bench.py").write_text(QUIET_BENCH)
    (tmp_path / "autoresearch.toml").write_text(
        f'[metric]\nname = "t_ms"\n[[secondary]]\nname = "ops"\ndirection = "higher"\n'
        f'[bench]\ncommand = "{sys.executable} {tmp_path / "bench.py"}"\ncpus = "0"\n'
        'warmup_runs = 1\nrepeat = 3\naggregate = "best"\n'
        # The bench script lives beside the arms, not in them: out of a confined run's sight.
        '[sandbox]\nmode = "off"\n'
    )
    config = load_config(tmp_path / "autoresearch.toml")
    arms = [tmp_path / "b", tmp_path / "c"]
    for arm in arms:
        arm.mkdir()

    logs = lambda name: tmp_path / "logs" / f"{name}.log"  # noqa: E731
    pair = measure_pair(Harness(config, env={}, stop=None), arms, logs, pairs=2)

    assert pair.failure is None, pair.detail
    # Run 0 of each arm was the warm-up; then three runs a sample, the best of them: the
    # lowest time, the highest throughput.
    assert pair.baseline.samples["t_ms"] == [101, 104]
    assert pair.candidate.samples["ops"] == [999, 996]
    assert pair.baseline.samples["cpus"] == [1, 1]  # pinned by taskset to one CPU
    assert len(pair.warmup.runs) == 2 and len(pair.baseline.runs) == 6
    median = dataclasses.replace(config.bench, aggregate=Aggregate.MEDIAN, warmup_runs=0)
    config = dataclasses.replace(config, bench=median)
    again = measure_pair(Harness(config, env={}, stop=None), arms, logs, pairs=1)
    assert again.baseline.samples["t_ms"] == [108]  # runs 7, 8, 9: the median


@pytest.mark.e2e
def test_a_win_waiting_for_its_sentinel_runs_only_the_sentinel_command(
    target, monkeypatch, tmp_path
):
    """The whole bench disturbs the sentinel (a spread of 30%) and takes 0.5 s a run; the
    sentinel command measures it alone in a fraction of that: the win's extra pairs run it.
    (The pairs the extension may add are the bench's seconds over the sentinel command's, as
    calibrated: the sleep is long beside a process's start on a busy machine.)"""
    target.configure()
    text = target.config_path.read_text()
    target.config_path.write_text(
        text.replace("[bench]\n", '[bench]\nsentinel_command = "./bench.py --sentinels"\n', 1)
    )
    git(target.root, "commit", "-qam", "sentinel command")
    monkeypatch.setenv("BENCH_SLEEP_S", "0.5")
    monkeypatch.setenv("BENCH_SENTINEL_SPREAD", "0.3")
    monkeypatch.setenv("BENCH_SENTINEL_COUNTER", str(tmp_path / "sentinel-count"))
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})

    run(target, max_experiments=1)

    journal = read_journal(target.journal)
    calibration = journal.calibrations[0]
    # Timed once per arm, without the whole bench's sleep: cheaper than a bench run.
    assert 0 < calibration.sentinel_run_s < run_seconds(calibration)
    (record,) = experiments(target)
    assert (record.status, record.decision.rule) == ("keep", "significant_win")
    extension = record.decision.sentinel_extension
    assert extension.ran == "sentinel command"
    assert extension.outcome == "shown within budget"
    decided_at = extension.primary_decided_at
    primary = record.decision.metrics["time_ms"]
    sentinel = record.sentinels["sentinel_ms"]
    # The primary metric stopped at its decision; the sentinel ran on, past the two caps a
    # whole-bench extension would have had, in the seconds those would have cost.
    assert primary.n_baseline == decided_at
    assert (
        sentinel.n_baseline
        == sentinel.n_candidate
        == decided_at + extension.pairs_added
        > 2 * decided_at
    )
    late = [log for log in record.bench_logs if log.endswith(f"-{decided_at + 1}.log")]
    assert late and all("METRIC time_ms" not in Path(log).read_text() for log in late)


def test_a_sentinel_command_that_prints_no_sentinel_stops_before_the_night(target):
    target.configure()
    text = target.config_path.read_text()
    target.config_path.write_text(
        text.replace("[bench]\n", '[bench]\nsentinel_command = "echo METRIC other_ms=1"\n', 1)
    )
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    done = run_cli("run", cwd=target.root)
    assert done.returncode == 1
    assert "bench.sentinel_command" in done.stderr
    assert "printed no 'METRIC sentinel_ms=...' line" in done.stderr
    assert experiments(target) == []
    # A clean stop: no in-flight marker left for `status` to take for a run that died.
    assert not session_paths(target.load()).inflight.exists()
    status = run_cli("status", cwd=target.root)
    assert "in flight" not in status.stdout and "died" not in status.stdout, status.stdout
