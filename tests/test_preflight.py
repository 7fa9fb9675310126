"""The pre-flight: the base commit's metrics listed, a missing name or failing checks refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import experiments, git, run_cli, seen

from autoresearch.journal.store import read_journal


def _preflight_on(target) -> None:
    text = target.config_path.read_text().replace("preflight = false", "preflight = true")
    target.config_path.write_text(text)
    git(target.root, "commit", "-qam", "pre-flight on")


def _untouched(target) -> None:
    assert git(target.root, "status", "--porcelain", "--untracked-files=no") == ""
    assert len(git(target.root, "worktree", "list").splitlines()) <= 3  # main + session's two


def test_a_new_session_lists_the_metrics_then_runs(target):
    _preflight_on(target)
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})

    done = run_cli("run", cwd=target.root)

    assert done.returncode == 0, done.stderr
    assert "pre-flight on " in done.stderr and "the bench printed 2 metrics" in done.stderr
    lines = done.stderr.splitlines()
    assert any("  time_ms " in line and "primary" in line for line in lines)
    assert any("  sentinel_ms " in line and "sentinel" in line for line in lines)
    assert "checks on the unmodified code: pass" in done.stderr
    assert [r.status for r in experiments(target)] == ["keep"]
    # A resumed session does not fly the pre-flight again.
    again = run_cli("run", cwd=target.root)
    assert again.returncode == 0 and "pre-flight" not in again.stderr


def test_a_missing_metric_is_refused_with_the_nearest_name(target):
    text = target.config_path.read_text().replace('name = "sentinel_ms"', 'name = "sentinal_ms"')
    target.config_path.write_text(text)
    _preflight_on(target)
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})

    done = run_cli("run", cwd=target.root)

    assert done.returncode == 1
    error = done.stderr.strip().splitlines()[-1]
    assert error == (
        "error: pre-flight: [[sentinel]] name 'sentinal_ms': the bench printed no such metric; "
        "did you mean 'sentinel_ms'?"
    )
    assert experiments(target) == []
    _untouched(target)


def test_checks_failing_on_the_unmodified_code_refuse_the_night(target):
    (target.root / "src" / "broken.txt").write_text("the base is broken\n")
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "broken base")
    _preflight_on(target)
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})

    done = run_cli("run", cwd=target.root)

    assert done.returncode == 1
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith(
        "error: pre-flight: the checks fail on the unmodified code (exit code 1"
    )
    assert "every keep would end as checks_failed" in error and "checks.log" in error
    assert experiments(target) == []
    _untouched(target)


def test_after_a_failed_pre_flight_the_fix_is_the_session_s_base(target):
    """The base's checks fail, the night is refused; the fix committed, the next run starts
    the session on it (not on the base that failed) and measures against it."""
    (target.root / "src" / "broken.txt").write_text("the base is broken\n")
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "broken base")
    _preflight_on(target)
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    assert run_cli("run", cwd=target.root).returncode == 1

    git(target.root, "rm", "-q", "src/broken.txt")
    git(target.root, "commit", "-qm", "the fix")
    fixed = git(target.root, "rev-parse", "HEAD").strip()
    done = run_cli("run", cwd=target.root)

    assert done.returncode == 0, done.stderr
    assert "measured nothing on its base" in done.stderr
    (record,) = experiments(target)
    assert record.status == "keep" and record.parent_commit == fixed
    log = git(target.root, "log", "--format=%H", "-2", "autoresearch/t").split()
    assert log[1] == fixed


def test_check_command_on_demand(target):
    done = run_cli("check", cwd=target.root)

    assert done.returncode == 0, done.stderr
    assert "the bench printed 2 metrics" in done.stdout
    assert done.stdout.strip().splitlines()[-1].startswith("ready:")
    # Its scratch worktree is gone; the user's checkout is as it was.
    assert git(target.root, "status", "--porcelain") == ""
    assert len(git(target.root, "worktree", "list").splitlines()) == 1

    (target.root / "src" / "broken.txt").write_text("broken\n")
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "broken")
    done = run_cli("check", cwd=target.root)
    assert done.returncode == 1
    assert "problem: the checks fail on the unmodified code" in done.stdout
    assert len(git(target.root, "worktree", "list").splitlines()) == 1
    # The log it names is still there to read.
    log = re.search(r"log: (\S+checks\.log)", done.stdout).group(1)
    assert Path(log).is_file() and Path(log).read_text()


def test_check_says_how_long_a_run_takes_and_what_a_failed_bench_misses(target):
    done = run_cli("check", "--no-calibrate", cwd=target.root)
    assert re.search(r"one bench run took \d+\.\ds: a decision of 8 pairs at most", done.stdout)

    bench = target.root / "bench.py"
    bench.write_text(
        "#!/bin/sh\necho 'pytest: error: unrecognized arguments: --benchmark-only' >&2\nexit 4\n"
    )
    git(target.root, "commit", "-qam", "a bench whose pytest lacks pytest-benchmark")
    done = run_cli("check", "--no-calibrate", cwd=target.root)

    assert done.returncode == 1
    problem = next(x for x in done.stdout.splitlines() if x.startswith("problem:"))
    assert "(exit code 4): pytest-benchmark is not installed in the interpreter" in problem
    assert Path(problem.rsplit("log: ", 1)[1]).is_file()


def test_check_and_run_give_one_noise_verdict(target, tmp_path):
    """`check` calibrates as `run` does: a bench far too noisy for the effect asked for is
    refused by both, in the same words; a quiet one is ready, saying what it can detect."""
    done = run_cli("check", cwd=target.root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "calibrating on " in done.stderr
    assert "  calibration: noise " in done.stdout and "within 5% asked for" in done.stdout
    assert "% detectable" in done.stdout.strip().splitlines()[-1]
    assert len(git(target.root, "worktree", "list").splitlines()) == 1

    # Runs alternately half and one and a half times the value: every calibration sees a
    # noise of over 50%, whichever runs it takes (random noise of 60% can calibrate low).
    loud = {"BENCH_FACTORS": "0.5,1.5", "BENCH_COUNTER": str(tmp_path / "runs")}
    check = run_cli("check", cwd=target.root, env=loud)
    assert check.returncode == 1
    (problem,) = [x for x in check.stdout.splitlines() if x.startswith("problem: ")]
    assert "too noisy for the effect asked for" in problem and "`run` would stop" in problem
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    night = run_cli("run", cwd=target.root, env=loud)
    assert night.returncode == 1
    refusal = night.stderr.strip().splitlines()[-1]
    assert refusal.startswith("error: the bench is too noisy for the effect asked for: noise ")
    # Each measured the noise twice before it said so.
    assert "calibrating once more before refusing it" in check.stderr
    assert "calibrating once more before refusing it" in night.stderr
    assert len(read_journal(target.journal).calibrations) == 2
    assert "more than decision.target_effect_pct = 5%: over 3 times it" in refusal
    assert "more than decision.target_effect_pct = 5%: over 3 times it" in problem
    assert experiments(target) == []


def test_a_refusal_points_at_the_quieter_fastest_round_as_the_fallback(target, tmp_path):
    """A bench whose medians swing run to run but whose fastest round does not (a VM whose
    speed comes and goes): `check` refuses on the medians and names the fastest round, with
    what it detects, as the `[metric] fallback` to set."""
    loud = {
        "BENCH_FACTORS": "0.5,1.5",
        "BENCH_COUNTER": str(tmp_path / "runs"),
        "BENCH_FASTEST": "1",
    }
    check = run_cli("check", cwd=target.root, env=loud)
    assert check.returncode == 1
    (problem,) = [x for x in check.stdout.splitlines() if x.startswith("problem: ")]
    assert "decide on time_min_ms, the fastest round of the same benchmark" in problem
    assert '([metric] fallback = "time_min_ms": the night decides on it when' in problem


def test_a_night_too_noisy_on_the_median_decides_on_its_fallback_and_says_so(target, tmp_path):
    """With `[metric] fallback` (what `init` writes for a harness that reports a fastest
    round), the night the medians would refuse decides on the fallback instead, with no hand
    edit: `check` is ready and says so, `run` keeps the win on it, every record names it, a
    resumed night goes on deciding on it when the medians have calmed down, and the report
    and the PR say why."""
    target.configure(fallback="time_min_ms")
    git(target.root, "commit", "-qam", "the fastest round when the medians are too noisy")
    loud = {
        "BENCH_FACTORS": "0.5,1.5",
        "BENCH_COUNTER": str(tmp_path / "runs"),
        "BENCH_FASTEST": "1",
    }
    ready = run_cli("check", cwd=target.root, env=loud)
    assert ready.returncode == 0, ready.stdout + ready.stderr
    said = "the night decides on time_min_ms ([metric] fallback): time_ms is too noisy"
    assert said in ready.stdout
    assert "calibrating once more" not in ready.stderr  # the first calibration said enough

    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    night = run_cli("run", cwd=target.root, env=loud)
    assert night.returncode == 0, night.stderr
    assert said in night.stderr
    (calibration, *_) = read_journal(target.journal).calibrations
    assert calibration.decides_on == "time_min_ms"
    (win,) = experiments(target)
    assert win.status == "keep" and win.decision.primary == "time_min_ms"
    assert win.evidence().threshold_pct is not None  # the floor went on the fallback
    assert "time_ms" in win.decision.metrics  # the median is still measured and kept

    # Resumed on a quiet machine, with the config as it was: the session's metric does not
    # change under its records.
    target.add_hypothesis("02-win", {"src/speedup-a.txt": "0.8\n"})
    quiet = {"BENCH_FASTEST": "1"}
    again = run_cli("run", cwd=target.root, env=quiet)
    assert again.returncode == 0, again.stderr
    assert [r.decision.primary for r in experiments(target)] == ["time_min_ms"] * 2

    status = json.loads(run_cli("status", "--json", cwd=target.root).stdout)
    assert status["metric"] == "time_min_ms"
    why = "the night decided on it ([metric] fallback) because time_ms was too noisy"
    pr = seen(run_cli("pr", cwd=target.root).stdout)
    report = run_cli("report", cwd=target.root).stdout
    assert "time_min_ms is each run's fastest round" in pr and why in pr
    assert "time_min_ms is each run's fastest round" in report and why in report


def test_a_noisy_minute_at_the_start_does_not_cost_the_night(target, tmp_path):
    """The first calibration falls in a busy minute (its runs half and one and a half times
    the value, as in the test above), the rest of the night is quiet: `check` and `run`
    measure once more, and the second calibration stands; the night runs and keeps its win."""
    # The first four runs loud: the first calibration's (after the one run of check's own
    # pre-flight), then quiet.
    factors = ",".join(["0.5", "1.5"] * 2 + ["1"] * 200)
    for command in ("check", "run"):
        counter = tmp_path / f"{command}-runs"
        env = {"BENCH_FACTORS": factors, "BENCH_COUNTER": str(counter)}
        if command == "run":
            target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
        done = run_cli(command, cwd=target.root, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "calibrating once more before refusing it" in done.stderr, done.stderr
    first, second, *_ = read_journal(target.journal).calibrations
    assert first.noise_pct["time_ms"] > 30 and second.noise_pct["time_ms"] < 1
    assert [r.status for r in experiments(target)] == ["keep"]


def test_a_fallback_the_bench_does_not_print_is_a_warning_not_a_refusal(target):
    """The fallback is a net: a bench that no longer prints it (its script edited after
    `init`) is still ready, and `check` says the night cannot fall back."""
    target.configure(fallback="time_min_ms")
    git(target.root, "commit", "-qam", "a fallback the bench does not print")
    done = run_cli("check", cwd=target.root)
    assert done.returncode == 0, done.stdout + done.stderr
    warning = "  warning: [metric] fallback 'time_min_ms': the bench printed no such metric"
    assert warning in done.stdout


def test_a_failing_fetch_refuses_the_night_and_names_its_log(target):
    """`[bench] fetch` failing (the network down, a dependency gone) stops the pre-flight before
    any build, with the log it wrote; a build reading sources that were never fetched names
    the fetch."""
    _preflight_on(target)
    text = target.config_path.read_text()
    fetched = 'build = "test -e \\"$AUTORESEARCH_FETCHED/dep-src\\" || echo Manually specified '
    fetched += 'source directory is missing >&2 && test -e \\"$AUTORESEARCH_FETCHED/dep-src\\""'
    text = text.replace('build = ""', fetched)
    fetch = 'fetch = "echo no route to the registry >&2; exit 3"\n'
    target.config_path.write_text(text.replace("[bench]\n", "[bench]\n" + fetch, 1))
    git(target.root, "commit", "-qam", "a fetch that fails")

    done = run_cli("run", cwd=target.root)
    assert done.returncode != 0
    found = re.search(r"\[bench\] fetch fails in (\S+) \(exit code 3\); log: (\S+)", done.stderr)
    assert found and found.group(1) == str(target.root), done.stderr
    assert "no route to the registry" in Path(found.group(2)).read_text()
    assert experiments(target) == []

    target.config_path.write_text(target.config_path.read_text().replace(fetch, 'fetch = "true"\n'))
    git(target.root, "commit", "-qam", "a fetch that fetches nothing")
    unfetched = run_cli("check", cwd=target.root)
    said = unfetched.stdout + unfetched.stderr
    assert unfetched.returncode != 0 and "the build fails on the unmodified code" in said, said
    assert "what [bench] fetch fetched into $AUTORESEARCH_FETCHED" in said
