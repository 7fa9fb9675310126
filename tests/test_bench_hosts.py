"""A night on bench hosts, driven through the fake hosts (fake_executor.py: the hosts' own
measuring code in this process, no Dask): what the driver does for hosts as for one machine,
in the fast tier. What needs real Dask processes (a worker killed, a scheduler's address, the
workers' resources) is tests/test_cluster.py's, in the e2e tier."""

from __future__ import annotations

import io
import json
import re

import pytest
from conftest import experiments, git, loud_losses_past_a_small_log_budget, run_cli
from fake_executor import FakeHosts
from inprocess import InProcess

from autoresearch.bench.runners import LocalRunner
from autoresearch.errors import PreflightError
from autoresearch.journal.store import read_journal
from autoresearch.loop.driver import run_session
from autoresearch.loop.session import RunOptions
from autoresearch.progress import Progress
from autoresearch.repo.state_dir import session_paths


def hosts(target, tmp_path, env, said=None, count=2, **options):
    """`run --cluster` with `count` fake hosts, the synthetic scripts in-process."""
    options.setdefault("confirm", False)
    config = target.load()
    opts = RunOptions(env=env, runner=InProcess(LocalRunner.of(config)), **options)
    progress = Progress(said, quiet=said is None)
    return run_session(
        config, opts, progress, lambda session: FakeHosts(session, tmp_path / "hosts", count)
    )


def test_on_bench_hosts_a_night_too_noisy_on_its_medians_decides_on_the_fallback(target, tmp_path):
    """As serially (tests/test_preflight.py): the host's calibration finds the medians too
    noisy and `[metric] fallback` not, and the night decides on the fallback, on the host that
    measures and in the driver that replays its runs alike."""
    target.configure(fallback="time_min_ms", min_runs=2, looks=3)
    git(target.root, "commit", "-qam", "the fastest round when the medians are too noisy")
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    counter = str(tmp_path / "n")
    loud = {"BENCH_FACTORS": "0.5,1.5", "BENCH_COUNTER": counter, "BENCH_FASTEST": "1"}
    heard = io.StringIO()
    hosts(target, tmp_path, loud, heard, count=1)
    (calibration, *_) = read_journal(target.journal).calibrations
    assert calibration.host and calibration.decides_on == "time_min_ms"
    assert "the night decides on time_min_ms ([metric] fallback)" in heard.getvalue()
    (win,) = experiments(target)
    assert win.status == "keep" and win.decision.primary == "time_min_ms", win.reason
    assert win.cluster is not None and "time_ms" in win.decision.metrics
    # The experiment's job carries the session's switch: its host stops at the first look (2
    # pairs between the base's calibration and the new best's, 4 runs each), where on the
    # medians it would run on to the cap.
    assert (tmp_path / "n").read_text().strip() == "12"
    assert [c.commit for c in read_journal(target.journal).calibrations][1:] == [win.kept_commit]


def test_a_bench_too_noisy_is_refused_before_any_experiment_is_sent(target, tmp_path):
    """On bench hosts as here (loop/stages.py): the best is calibrated on a host before the
    first experiment, a bench far too noisy for the effect asked for (5%) is measured once more
    and then refused, saying what it detects; told to go on, the night runs."""
    target.configure(calibration_runs=6)
    git(target.root, "commit", "-qam", "six calibration runs")
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    counter = str(tmp_path / "n")
    noisy = {"BENCH_FACTORS": "0.8,1.2,1.0,0.85,1.15,1.05", "BENCH_COUNTER": counter}

    heard = io.StringIO()
    with pytest.raises(PreflightError) as refused:
        hosts(target, tmp_path, noisy, heard, count=1)
    first, again = read_journal(target.journal).calibrations
    assert first.host and again.host
    # Both measured on the host, the second afresh (six runs each), and no experiment's.
    assert (tmp_path / "n").read_text().strip() == "12"
    assert first.detectable_effect_pct > 3 * 5.0 and again.detectable_effect_pct > 3 * 5.0
    said = str(refused.value)
    assert said.startswith("the bench is too noisy") and "--accept-noise" in said
    assert f"detect {again.detectable_effect_pct:.1f}% with 90% power" in said
    assert experiments(target) == []
    assert git(target.root, "status", "--porcelain", "--untracked-files=no") == ""

    quieter = {**noisy, "BENCH_FACTORS": "0.99,1.01,1.0,0.995,1.005,1.0"}
    resumed = io.StringIO()
    hosts(target, tmp_path, quieter, resumed, count=1, accept_noise=True)
    assert [r.title for r in experiments(target)] == ["01-win"]
    # Resumed, the night takes up the calibration the host holds, and says the best it stands for.
    assert re.search(
        rf"^autoresearch: best time_ms = .+, threshold {again.threshold_pct:.2f}% \(the "
        r"calibration .+ holds, taken up again\)$",
        resumed.getvalue(),
        re.M,
    ), resumed.getvalue()
    # The host's calibration is said as a serial night says its own: the best, its noise and
    # threshold, and the host that measured it.
    host = read_journal(target.journal).calibrations[0].host
    said_lines = heard.getvalue().splitlines()
    assert any(
        re.search(r"^autoresearch: baseline time_ms = .+, noise [\d.]+%, threshold [\d.]+%", line)
        and line.endswith(f"(calibrated on {host})")
        for line in said_lines
    ), said_lines


def test_checks_failing_on_the_unmodified_code_refuse_the_night_before_a_host_measures(
    target, tmp_path
):
    """The pre-flight runs on the driver, where the checks run, as it does before a serial
    night: checks that fail on the base would make every keep `checks_failed`."""
    (target.root / "src" / "broken.txt").write_text("the base is broken\n")
    text = target.config_path.read_text().replace("preflight = false", "preflight = true")
    target.config_path.write_text(text)
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "broken base, pre-flight on")
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    counter = {"BENCH_FACTORS": "1", "BENCH_COUNTER": str(tmp_path / "n")}

    with pytest.raises(PreflightError) as refused:
        hosts(target, tmp_path, counter, count=1)
    said = str(refused.value)
    assert said.startswith("pre-flight: the checks fail on the unmodified code (exit code 1")
    assert "every keep would end as checks_failed" in said
    assert (tmp_path / "n").read_text().strip() == "1"  # its one bench run; no host measured
    assert experiments(target) == [] and read_journal(target.journal).calibrations == []
    assert git(target.root, "status", "--porcelain", "--untracked-files=no") == ""


def test_logs_past_their_budget_are_pruned_on_the_driver_and_on_the_host(target, tmp_path):
    """`session.max_logs_mb` holds on bench hosts too: the driver prunes the session's logs
    between landings as a serial night does between experiments, and a host keeps its own log
    directories within the budget (the driver holds the tails that count)."""
    loud_losses_past_a_small_log_budget(target, 6)
    said = io.StringIO()

    hosts(target, tmp_path, {"BENCH_LOUD_MB": "1"}, said, count=1)

    assert [r.status for r in experiments(target)] == ["discard"] * 6
    assert "the session's logs passed session.max_logs_mb = 1" in said.getvalue()
    logs = session_paths(target.load()).logs
    assert not (logs / "t-0001").exists() and (logs / "t-0006").exists()
    host_logs = tmp_path / "hosts" / "host-0" / "logs"
    kept = sum(p.stat().st_size for p in host_logs.rglob("*") if p.is_file())
    assert kept <= 1e6 + 0.25e6 * 8, kept  # within the budget, but for the last job's own
    assert (host_logs / "t-0006").exists() and not (host_logs / "t-0001").exists()


def test_the_best_s_profile_is_taken_on_a_night_on_bench_hosts_too(target, tmp_path):
    """With a `[profile]`, the base and each keep are profiled (by the driver, in a worktree of
    its own) as a serial night profiles them: `state`, the agent's prompt and the review say
    where the time went."""
    config = target.config_path
    profile = '[profile]\ncommand = "cp src/profile.txt \\"$AUTORESEARCH_PROFILE_OUT\\""\n'
    config.write_text(config.read_text() + profile)
    (target.root / "src" / "profile.txt").write_text("main;put;get 40\nmain;put;write 60\n")
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "a profile")
    changes = {"src/value.txt": "60\n", "src/profile.txt": "main;put;write 100\n"}
    target.add_hypothesis("01-skip-the-read", changes)

    hosts(target, tmp_path, {}, count=1)

    (record,) = experiments(target)
    assert record.status == "keep" and record.cluster
    state = json.loads(run_cli("state", cwd=target.root).stdout)
    assert state["profile"]["commit"] == record.kept_commit
    report = run_cli("report", cwd=target.root).stdout
    assert "where the time moved: `get` 40.0% → 0.0%" in report
