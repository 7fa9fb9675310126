"""One figure behind every headline: status, report and pr agree with the confirmation."""

from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path

import pandas as pd
import pytest
from conftest import run, run_cli

from autoresearch.decide.design import DESIGN_BETA, TARGET_BETA
from autoresearch.decide.headline import headline
from autoresearch.journal.store import read_journal
from autoresearch.report.summary import _futility_designs


def test_title_table_raw_output_and_status_come_from_the_confirmation(target, monkeypatch):
    monkeypatch.setenv("BENCH_NOISE_PCT", "1")
    target.configure(confirm="true")
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    run(target)
    (confirmation,) = read_journal(target.journal).confirmations
    primary = confirmation.metrics["time_ms"]
    base, tip = primary.baseline_median, primary.tip_median
    assert "sentinel_ms" in confirmation.metrics

    pr = run_cli("pr", cwd=target.root).stdout
    title = pr.splitlines()[0]
    # The change is the paired estimate the decisions use (the geometric mean of the pairs'
    # ratios), the medians beside it as values: one estimator behind every figure.
    pairs = zip(primary.baseline_samples, primary.tip_samples, strict=True)
    change = 100 * (math.exp(statistics.fmean(math.log(t / b) for b, t in pairs)) - 1)
    assert confirmation.change_pct == pytest.approx(change)
    assert f"{change:+.1f}%" in title, title
    assert f"**{change:+.1f}%**" in pr and "| time_ms | " in pr
    # What the night could detect, from its calibrations, in the methodology and the report.
    calibrations = read_journal(target.journal).calibrations
    detectable = f"{calibrations[-1].detectable_effect_pct:.1f}%"
    assert "detectable with 90% power at the cap: " in pr and detectable in pr
    # The rule as the night ran it: its own looks (5 and 8 pairs here), not today's defaults.
    assert "at looks after 5, 8 runs per arm (a group-sequential design" in pr
    # And the futility stops the decision had, as it recorded them: the target's design or,
    # when its calibration found the bench too noisy for 5%, the smallest win's.
    (record,) = read_journal(target.journal).experiments
    power, effect = record.decision.design.designed_power, record.decision.design.designed_for_pct
    assert power in (pytest.approx(1 - TARGET_BETA), pytest.approx(1 - DESIGN_BETA))
    given_up = f"at most {1 - power:.0%} of {round(effect, 1):g}% wins"
    assert f"futility stops giving up {given_up}" in pr and "(1 decision)" in pr
    text = run_cli("report", cwd=target.root).stdout
    assert f"{detectable} detectable with 90% power" in text
    numbers = [float(x) for x in re.findall(r"([\d.]+) ms", title)]
    assert numbers == [pytest.approx(base, rel=0.005), pytest.approx(tip, rel=0.005)]
    log_base = Path(confirmation.bench_logs[0]).read_text().splitlines()[1]
    log_tip = Path(confirmation.bench_logs[confirmation.runs_per_arm]).read_text().splitlines()[1]
    assert log_base in pr and log_tip in pr

    report = json.loads(run_cli("report", "--format", "json", cwd=target.root).stdout)
    assert report["baseline"]["value"] == pytest.approx(base)
    assert report["final"]["value"] == pytest.approx(tip)
    assert report["final"]["label"].startswith("tip ")
    assert report["headline_change_pct"] == pytest.approx(change)
    status = json.loads(run_cli("status", "--json", cwd=target.root).stdout)
    assert status["baseline"] == pytest.approx(base)
    assert status["best"]["value"] == pytest.approx(tip)
    assert status["change_pct"] == pytest.approx(report["headline_change_pct"])


def test_without_a_confirmation_the_figure_says_what_it_is(target):
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    run(target)
    status = run_cli("status", cwd=target.root).stdout
    assert "not confirmed" in status
    report = json.loads(run_cli("report", "--format", "json", cwd=target.root).stdout)
    assert report["headline_note"].startswith("not confirmed")


def test_the_methodology_names_each_futility_design_the_night_had():
    rows = pd.DataFrame(
        {"designed_for_pct": [5.0, 5.0, 12.34, None], "designed_power": [0.9, 0.9, 0.95, None]}
    )
    assert _futility_designs(rows, 5.0) == (
        "at most 10% of 5% wins (2 decisions); "
        "at most 5% of 12.3% wins, the smallest the noise let them see (1 decision)"
    )
    # Decisions that did not record their design: the designs this code builds, said as such.
    assert _futility_designs(rows.iloc[3:], 5.0).endswith("smallest win a noisy bench can see")
    assert "smallest win a noisy bench" in _futility_designs(pd.DataFrame({"n": [1]}), 5.0)


def test_a_best_not_calibrated_yet_is_not_given_the_base_s_figure():
    """Between a keep and the calibration of the new best (a night in between, or stopped
    there), the last calibration is the base's: shown as the best it would say the kept
    commit measured +0.00%. The best is the tip's own calibration, or not measured yet."""
    base = {"commit": "b" * 40, "medians": {"time_ms": 100.0}, "samples": {"time_ms": [100.0]}}
    figure = headline([base], [], "t" * 40, "time_ms", "b" * 40)
    assert figure["baseline"] == 100.0
    assert figure["best"] is None and figure["change_pct"] is None
    assert figure["best_label"].startswith("not measured yet")
    tip = {**base, "commit": "t" * 40, "medians": {"time_ms": 80.0}}
    figure = headline([base, tip], [], "t" * 40, "time_ms", "b" * 40)
    assert (figure["best"], figure["change_pct"]) == (80.0, pytest.approx(-20.0))
    # A session that kept nothing: its tip is its base, calibrated.
    assert headline([base], [], "b" * 40, "time_ms", "b" * 40)["best"] == 100.0


def test_status_and_report_of_a_night_stopped_right_after_a_keep(target):
    """A night stopped on a keep, before the new best is calibrated (its journal as it was
    then): status and report name the kept commit as not measured yet, not as the base's
    figure."""
    target.configure(max_experiments=1)
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    run(target)
    (kept,) = read_journal(target.journal).experiments
    assert kept.status == "keep"
    lines = target.journal.read_text().splitlines(keepends=True)
    at_tip = [
        i
        for i, line in enumerate(lines)
        if '"calibration"' in line and json.loads(line).get("commit") == kept.kept_commit
    ]
    assert at_tip, "the night calibrated its best"
    target.journal.write_text("".join(line for i, line in enumerate(lines) if i not in at_tip))

    status = run_cli("status", cwd=target.root)
    assert status.returncode == 0, status.stderr
    assert "best:     not measured yet at" in status.stdout, status.stdout
    assert "is not measured yet: no calibration or confirmation of it" in status.stdout
    report = json.loads(run_cli("report", "--format", "json", cwd=target.root).stdout)
    assert report["final"]["value"] is None
    for command in (["report"], ["report", "--html"], ["pr"]):
        shown = run_cli(*command, cwd=target.root)
        assert shown.returncode == 0, (command, shown.stderr)
    assert "not measured yet" in run_cli("report", cwd=target.root).stdout
