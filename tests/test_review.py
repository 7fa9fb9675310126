"""The morning review on a real pi-autoresearch log and on a journal the loop wrote."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import experiments, git, run, run_cli
from matplotlib.image import imread

from autoresearch.report import load_history, render_pr, summarize
from autoresearch.report.ideas import BEGIN, END, update_ideas
from autoresearch.report.outcomes import not_kept
from autoresearch.report.plots import FIGSIZE, progress_data, scales_data

ROOT = Path(__file__).resolve().parent.parent
PI_LOG = Path(__file__).parent / "fixtures/pi-autoresearch/baton-pebble-writepack.jsonl"
GOLDEN = Path(__file__).parent / "golden" / "pi-baton-pr.md"


@pytest.fixture(scope="module")
def pi():
    history = load_history(PI_LOG)
    return history, summarize(history, "sqlite", "SQLite")


def test_pi_log_right_numbers(pi):
    history, s = pi
    assert history.format == "pi-autoresearch"
    assert s["by_status"] == {"keep": 15, "discard": 24, "checks_failed": 4}
    assert s["baseline"]["value"] == 4245.856
    assert s["baseline"]["label"] == "run 2 (f5b94e1)"
    assert "first kept run" in s["baseline"]["why"] and "run 1" in s["baseline"]["why"]
    assert s["final"]["value"] == 1317.685 and s["final"]["label"] == "run 42 (d4b7e29)"
    assert s["cumulative_change_pct"] == pytest.approx(100 * (1317.685 / 4245.856 - 1))
    # Each kept win's change is against the best kept value before it.
    wins = {w["n"]: w["change_pct"] for w in s["wins"]}
    assert len(wins) == 14  # the baseline run itself is not a win
    runs = {r["run"]: r for r in map(json.loads, PI_LOG.read_text().splitlines()[1:])}
    assert wins[5] == pytest.approx(100 * (runs[5]["metric"] / runs[2]["metric"] - 1))
    assert wins[11] == pytest.approx(100 * (runs[11]["metric"] / runs[5]["metric"] - 1))
    assert wins[42] == pytest.approx(-2.56, abs=0.01)
    assert [w["n"] for w in s["major_wins"]] == [5, 11, 13, 14, 19, 22, 24, 29, 30, 33]


def test_literal_unicode_escapes_are_shown_as_characters(pi):
    history, _ = pi
    titles = " ".join(history.experiments["title"])
    assert "\\u2192" not in titles and "2→8" in titles


def test_pi_pr_matches_the_golden_file(pi):
    _, s = pi
    assert render_pr(s) == GOLDEN.read_text()


def test_pr_sections_and_user_templates(pi, tmp_path):
    _, s = pi
    text = render_pr(s)
    for heading in (
        "## Headline",
        "## Allocations",
        "## Major wins",
        "## Minor wins",
        "## Methodology",
        "## Safety",
        "## What did not work",
        "## Raw bench output",
    ):
        assert heading in text
    assert "| 1k | 10.81 ms | 9.771 ms | -9.6% | 1.11x | 27.59 ms | 2.82x |" in text
    (tmp_path / "pr.md.j2").write_text("{{ title }} / {{ s.kept }} kept\n")
    assert (
        render_pr(s, tmp_path)
        == "perf: pebble_writepack_1m_ms -69.0% (4246 ms → 1318 ms) / 15 kept\n"
    )
    # A template is compiled once a process (`serve` renders again and again), and an edit to
    # it is rendered the next time all the same.
    template = tmp_path / "pr.md.j2"
    template.write_text("{{ s.kept }} kept, edited\n")
    os.utime(template, ns=(template.stat().st_atime_ns, template.stat().st_mtime_ns + 10**9))
    assert render_pr(s, tmp_path) == "15 kept, edited\n"


def test_report_formats_through_the_cli(tmp_path):
    text = run_cli("report", "--journal", str(PI_LOG), cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "experiments: 43 (keep 15, discard 24, checks_failed 4)" in text.stdout
    every = run_cli("report", "--journal", str(PI_LOG), "--all", cwd=tmp_path)
    assert every.stdout == text.stdout  # no group over the report's cap: the same lines
    data = json.loads(
        run_cli("report", "--journal", str(PI_LOG), "--format", "json", cwd=tmp_path).stdout
    )
    assert data["kept"] == 15 and data["final"]["value"] == 1317.685
    md = run_cli("report", "--journal", str(PI_LOG), "--format", "markdown", cwd=tmp_path)
    assert md.stdout.startswith("# Pebble engine perf")
    missing = run_cli("report", "--journal", str(tmp_path / "nope.jsonl"), cwd=tmp_path)
    assert missing.returncode == 1 and "journal not found" in missing.stderr


def test_plots_exist_have_the_size_and_are_not_blank(pi, tmp_path):
    done = run_cli("plot", "--journal", str(PI_LOG), "--out", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for name in ("progress.png", "scales.png"):
        image = imread(tmp_path / name)
        assert image.shape[:2] == (FIGSIZE[1] * 100, FIGSIZE[0] * 100)
        assert np.std(image[..., :3]) > 0.05, f"{name} looks blank"
    history, _ = pi
    data = progress_data(history)
    assert list(data["kind"].value_counts().sort_index().items()) == [
        ("discard", 24),
        ("failed", 4),
        ("keep", 15),
    ]
    assert data["best"].iloc[-1] == 1317.685 and data["best"].is_monotonic_decreasing
    scales = scales_data(history)
    assert set(scales["scale"]) == {"100", "1k", "10k", "100k", "1m"}
    last_1m = scales[scales["scale"] == "1m"]["ratio"].iloc[-1]
    assert last_1m == pytest.approx(1317.685 / 4245.856)


def test_ideas_keeps_what_a_person_wrote(pi, tmp_path):
    _, s = pi
    path = tmp_path / "ideas.md"
    path.write_text("# Ideas\n\n## Mine\n\n- try io_uring\n")
    update_ideas(path, s)
    first = path.read_text()
    assert first.startswith("# Ideas\n\n## Mine\n\n- try io_uring\n")
    assert BEGIN in first and END in first
    assert "### Kept (14)" in first
    assert "- #8 P1.4: bloom.FilterPolicy(10) on all levels (+2.9%) [discarded]" in first
    path.write_text(first + "\n## Later notes\n\n- keep me\n")
    update_ideas(path, s)
    second = path.read_text()
    assert second.count(BEGIN) == 1 and second.endswith("## Later notes\n\n- keep me\n")


def test_review_of_a_loop_journal(target, tmp_path):
    target.configure(confirm="true")
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"}, title="win", mechanism="less work")
    target.add_hypothesis("02-nothing", {"src/sentinel.txt": "50.1\n"}, title="nothing")
    run(target)

    history = load_history(target.journal)
    s = summarize(history)
    assert s["by_status"] == {"keep": 1, "discard": 1}
    assert s["baseline"]["value"] == 100 and s["final"]["value"] == 80
    assert s["headline_change_pct"] == pytest.approx(-20)  # the confirmation
    assert s["wins"][0]["mechanism"] == "less work"
    assert s["safety"]["checks_on_every_keep"] and s["safety"]["sentinels_held"]
    assert s["safety"]["protected_touched"] == [] and s["safety"]["manifests_touched"] == []
    assert s["not_kept"][0]["reason"] == "No gain worth claiming"
    text = render_pr(s, raw={"baseline": history.baseline_log, "final": history.final_log})
    assert "METRIC time_ms=100" in text and "METRIC time_ms=80" in text
    # One figure, one estimator: the title, the body, the table and the methodology quote the
    # confirmation's paired change, said once; the raw output is labelled one run of its N.
    assert text.startswith("# perf: time_ms -20.0% (100 ms → 80 ms)\n")
    assert "80 ms: **-20.0%** (95% CI -20.0% to -20.0%), the final tip measured against" in text
    assert "| time_ms | 100 ms | 80 ms | -20.0% |" in text
    assert "the estimator every decision used: -20.0%" in text
    assert "confirmed directly" not in text and text.count("**-20.0%**") == 1
    runs = history.confirmations[-1]["runs_per_arm"]
    assert f"Baseline: one of the {runs} runs of base " in text
    assert f"Final: one of the {runs} runs of tip " in text
    assert history.confirmations[-1]["metrics"]["time_ms"]["estimator"] == "paired"
    # Every bench run counted: the experiments', the calibrations' and the confirmation's.
    r = s["runs"]
    assert r["confirmation_runs"] == 2 * runs and r["calibration_runs"] > 0
    assert r["bench_runs"] == r["experiment_runs"] + r["calibration_runs"] + 2 * runs
    # What measured: the toolchains the bench runs (a Python script: Python alone, whatever
    # else this machine has on its PATH), each calibration's, named in the PR.
    tools = history.calibrations[-1]["toolchains"]
    assert list(tools) == ["python"] and tools["python"].startswith("Python 3")
    measured = next(line for line in text.splitlines() if line.startswith("- Measured with: "))
    assert tools["python"] in measured

    done = run_cli("pr", "--out", str(tmp_path / "pr.md"), cwd=target.root)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "pr.md").read_text().startswith("# perf: time_ms -20.0% (100 ms → 80 ms)")


def test_pi_segments_measure_changes_within_their_segment(tmp_path):
    log = tmp_path / "pi.jsonl"
    lines = [{"type": "config", "metricName": "t_ms", "metricUnit": "ms", "bestDirection": "lower"}]
    for number, (segment, value, status) in enumerate(
        [(0, 100, "keep"), (0, 90, "keep"), (0, 95, "discard"), (1, 200, "keep"), (1, 150, "keep")],
        start=1,
    ):
        lines.append(
            {
                "run": number,
                "commit": f"c{number}",
                "metric": value,
                "metrics": {},
                "status": status,
                "description": f"step {number}",
                "segment": segment,
                "timestamp": 1_700_000_000_000 + number,
                "asi": {},
            }
        )
    log.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    frame = load_history(log).experiments.set_index("n")
    assert frame.loc[2, "change_pct"] == pytest.approx(-10)
    assert frame.loc[3, "change_pct"] == pytest.approx(100 * (95 / 90 - 1))
    assert math.isnan(frame.loc[4, "change_pct"])  # a new segment has no best yet
    assert frame.loc[5, "change_pct"] == pytest.approx(-25)


def test_a_long_night_lists_each_group_in_the_pr_and_the_report_up_to_its_cap(target, monkeypatch):
    """GitHub takes a description up to 65,536 characters: each "what did not work" group names
    its latest experiments and counts the earlier ones, as the report and ideas.md do (each at
    its own cap); `--all` and the JSON list every one."""
    from dataclasses import replace

    from conftest import experiment_record

    from autoresearch.journal.records import Asi
    from autoresearch.journal.store import Journal
    from autoresearch.report import ideas, render_markdown, render_text
    from autoresearch.report.render import NOT_KEPT_LISTED, NOT_KEPT_SHOWN

    target.add_hypothesis("01-nothing", {"src/sentinel.txt": "50.1\n"}, title="nothing")
    run(target)
    journal = Journal(target.journal, "t")
    (first,) = journal.read().experiments
    extra = max(NOT_KEPT_SHOWN, NOT_KEPT_LISTED) + 7
    for n in range(2, 2 + extra):
        decision = {"rule": first.decision.rule, "reason": "flat"}
        made = experiment_record(n, first.status, decision=decision)
        # No rollback reason: the record's reason is what the PR says, never "nan".
        journal.append(replace(made, session="t", id=f"t-{n:04d}", asi=Asi(hypothesis="h")))

    history = load_history(target.journal)
    (group,) = summarize(history)["not_kept"]  # the JSON's: every one
    assert group["count"] == extra + 1 == len(group["experiments"]) and group["left"] == 0

    def numbers(report: str) -> list[int]:
        return [
            int(w[1:].rstrip(":"))
            for w in report.split()
            if w[:2] in {f"#{d}" for d in "0123456789"}
        ]

    def latest(count: int) -> list[int]:
        return list(range(extra + 2 - count, extra + 2))

    text = render_pr(summarize(history, listed=NOT_KEPT_SHOWN))
    listed = [line for line in text.splitlines() if line.startswith("- #")]
    assert numbers("\n".join(listed)) == latest(NOT_KEPT_SHOWN)
    earlier = extra + 1 - NOT_KEPT_SHOWN
    assert f"- … {earlier} earlier: `autoresearch report --all` lists every one." in text
    assert listed[-1].endswith(": flat") and "nan" not in text

    left = extra + 1 - NOT_KEPT_LISTED
    capped = summarize(history, listed=NOT_KEPT_LISTED)
    report = render_text(capped)
    assert numbers(report) == latest(NOT_KEPT_LISTED)
    assert f"… {left} earlier (`report --all` lists every one)" in report
    assert numbers(render_text(summarize(history))) == latest(extra + 1)
    markdown = render_markdown(capped)
    assert numbers(markdown) == latest(NOT_KEPT_LISTED) and f"… {left} earlier" in markdown
    monkeypatch.setattr(ideas, "IDEAS_LISTED", 10)  # its cap, 100, for a night this size
    section = ideas.render_ideas(summarize(history))
    assert numbers(section) == latest(10)
    assert f"- … {extra + 1 - 10} earlier: `autoresearch report --all` lists every one" in section


def test_a_slowdown_stopped_for_want_of_gain_is_filed_as_slower():
    """`below_threshold` can stop a change whose whole interval is slower before the loss rule
    shows it: the review files it under Slower, not under No gain worth claiming."""
    rows = pd.DataFrame(
        {
            "n": [1, 2],
            "title": ["slower", "flat"],
            "status": ["discard", "discard"],
            "rule": ["below_threshold", "below_threshold"],
            "change_pct": [6.5, 0.4],
            "ci_low_pct": [2.5, -3.0],
            "ci_high_pct": [10.7, 3.9],
            "rollback_reason": [None, None],
            "reason": ["the gain is below the floor", "the gain is below the floor"],
            "earlier": [None, None],
        }
    )
    groups = {g["reason"]: [e["n"] for e in g["experiments"]] for g in not_kept(rows)}
    assert groups == {"Slower": [1], "No gain worth claiming": [2]}
    why = {e["n"]: e["why"] for g in not_kept(rows) for e in g["experiments"]}
    assert why[1].startswith("slower (its whole interval): the gain is below")  # its group's
    assert why[2] == "the gain is below the floor"
    # Higher is better: the same interval is a gain, not a slowdown.
    groups = {g["reason"]: [e["n"] for e in g["experiments"]] for g in not_kept(rows, False)}
    assert groups == {"No gain worth claiming": [1, 2]}


def test_each_session_of_a_shared_journal_is_reviewed_with_its_own_rows(target):
    """Two sessions append to one journal: each review holds its own experiments alone (the
    review picks a session's rows before it builds its table)."""
    win = target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    run(target)
    win.unlink()  # a new session would take the queue from its start
    target.config_path.write_text(
        target.config_path.read_text().replace('name = "t"', 'name = "u"', 1)
    )
    target.add_hypothesis("02-loss", {"src/value.txt": "130\n"})
    run(target)
    first, second = load_history(target.journal, "t"), load_history(target.journal, "u")
    assert first.experiments["title"].tolist() == ["01-win"]
    assert second.experiments["title"].tolist() == ["02-loss"]
    assert summarize(first)["kept"] == 1 and summarize(second)["kept"] == 0
    assert load_history(target.journal).name == "u"  # the latest session, unless one is named


def test_no_pull_request_when_nothing_was_kept(target):
    target.add_hypothesis("01-loss", {"src/value.txt": "130\n"})
    run(target)
    done = run_cli("pr", cwd=target.root)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == (
        "error: session 't' kept nothing in 1 experiment: there is no change to describe "
        "(`autoresearch report` says what was tried and why it was not kept)"
    )


def test_the_progress_plot_draws_what_was_decided(target, tmp_path):
    """Each experiment at the change the rule judged against the best of its time: a discard
    that measured a little better is drawn better only as such (hollow, said in the legend),
    a crash in the failed band, the best compounded from the kept changes; no scales image
    for a metric without scales."""
    from autoresearch.report.plots import plot_progress, plot_scales

    target.add_hypothesis("01-win", {"src/speedup-a.txt": "0.8\n"})
    target.add_hypothesis("02-a-hair", {"src/speedup-b.txt": "0.995\n"})
    target.add_hypothesis("03-crash", {"src/mode.txt": "crash\n"})
    target.add_hypothesis("04-worse", {"src/speedup-c.txt": "1.1\n"})
    run(target)
    records = {r.n: r for r in experiments(target)}
    assert [records[n].status for n in (1, 2, 3, 4)] == ["keep", "discard", "crash", "discard"]

    data = progress_data(load_history(target.journal)).set_index("n")

    for n in (1, 2, 4):
        judged = records[n].decision.metrics["time_ms"]
        assert data.loc[n, "change_pct"] == pytest.approx(judged.change_pct)
        assert data.loc[n, "ci_low_pct"] == pytest.approx(judged.ci_low_pct)
    assert data.loc[2, "change_pct"] < 0 and bool(data.loc[2, "better_unshown"])
    assert data.loc[4, "change_pct"] > 0 and not bool(data.loc[4, "better_unshown"])
    assert data.loc[3, "kind"] == "failed"
    drawn_better = data[(data["kind"] == "discard") & (data["change_pct"] < 0)]
    assert drawn_better["better_unshown"].all()
    assert data["best_pct"].iloc[-1] == pytest.approx(
        records[1].decision.metrics["time_ms"].change_pct
    )
    image = imread(plot_progress(load_history(target.journal), tmp_path / "progress.png"))
    assert np.std(image[..., :3]) > 0.05
    assert plot_scales(load_history(target.journal), tmp_path / "scales.png") is None
    assert not (tmp_path / "scales.png").exists()
    # The PR names the crash's log relative to the repository, never by this machine's path.
    pr = run_cli("pr", cwd=target.root)
    assert pr.returncode == 0, pr.stderr
    assert str(target.root) not in pr.stdout
    assert "log: .git/autoresearch/t/logs/t-0003/" in pr.stdout, pr.stdout


def test_a_drifting_bimodal_night_is_drawn_counted_and_advised_consistently(target, tmp_path):
    """A bench that drifts upward run by run and jumps by a third one run in three (bimodal):
    every surface agrees with the decisions. No discard is drawn better than its best unless
    it measured better (and then hollow); the counts add up in `report`, the page and `pr`; an
    experiment's advice (its record's hint, ideas.md, the report's group) never contradicts."""
    from autoresearch.report.ideas import update_ideas
    from autoresearch.report.page import render_page

    target.configure(min_runs=4, max_runs=8, looks=2)
    git(target.root, "commit", "-qam", "a longer decision", "--allow-empty")
    factors = ",".join(f"{(1 + 0.004 * i) * (1.33 if i % 3 == 2 else 1):.4f}" for i in range(60))
    for name, files in (
        ("01-win", {"src/speedup-a.txt": "0.7\n"}),
        ("02-null", {"src/notes.txt": "nothing\n"}),
        ("03-hair", {"src/speedup-b.txt": "0.99\n"}),
        ("04-loss", {"src/speedup-c.txt": "1.2\n"}),
        ("05-crash", {"src/mode.txt": "crash\n"}),
        ("06-win", {"src/speedup-d.txt": "0.8\n"}),
    ):
        target.add_hypothesis(name, files)
    run(target, env={"BENCH_FACTORS": factors, "BENCH_COUNTER": str(tmp_path / "count")})
    records = {r.n: r for r in experiments(target)}
    history = load_history(target.journal)
    summary = summarize(history)

    data = progress_data(history).set_index("n")
    for n, record in records.items():
        judged = record.decision.metrics.get("time_ms") if record.decision else None
        if judged and record.status != "keep":
            assert data.loc[n, "change_pct"] == pytest.approx(judged.change_pct)
            if judged.change_pct < 0:
                assert bool(data.loc[n, "better_unshown"]), n
    # Counts that add up: report, the page, the PR.
    total = summary["experiments"]
    assert sum(summary["by_status"].values()) + summary["retried"] == total
    page = render_page(history, summary)
    shown = [int(x) for x in re.findall(r'data-status="[a-z_]+">[a-z_ ]+?(\d+)', page)]
    assert sum(shown) == total
    pr = run_cli("pr", cwd=target.root).stdout
    said = re.search(r"- Experiments: (\d+) run, (\d+) kept((?:, \d+ [^,.]+)*)", pr)
    assert int(said.group(1)) == total
    others = [int(x) for x in re.findall(r", (\d+) ", said.group(3) or "")]
    assert int(said.group(2)) + sum(others) + summary["retried"] == total
    # One piece of advice per experiment.
    ideas = tmp_path / "ideas.md"
    ideas.write_text("# Ideas\n")
    update_ideas(ideas, summary)
    closed = ideas.read_text().split("### Closed axes", 1)[1].split("###", 1)[0]
    for n, record in records.items():
        if record.status in ("discard", "inconclusive"):
            hint_closed = (record.asi.next_action_hint or "").startswith("closed axis")
            assert hint_closed == (f"- #{n} " in closed), (n, record.rule, record.asi)


def test_the_served_page_is_made_again_only_when_what_it_shows_changed(target):
    """A browser left open on a night asks every few seconds; the page (a second of CPU beside
    the bench) is made again when the journal, the config, the experiment in flight, a profile,
    the branches or the night's running changed, and only then."""
    from autoresearch.cli import build_parser
    from autoresearch.cli.review import page_inputs
    from autoresearch.repo.state_dir import SessionLock, session_paths
    from autoresearch.report.serve import made_when_changed

    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    run(target)
    args = build_parser().parse_args(["serve", "--config", str(target.config_path)])
    made: list[str] = []

    def make(inputs: tuple) -> str:
        made.append(f"page {len(made) + 1}")
        return made[-1]

    render = made_when_changed(make, lambda: page_inputs(args))
    assert [render(), render(), render()] == ["page 1"] * 3
    paths = session_paths(target.load())

    def append(path: Path, text: str) -> None:
        path.parent.mkdir(exist_ok=True)
        with open(path, "a") as handle:
            handle.write(text)

    changes = {
        "a record lands": lambda: append(target.journal, "\n"),
        "an experiment starts": lambda: append(paths.inflight, '{"phase": "bench"}'),
        "a profile is taken": lambda: append(paths.profile("c" * 40), "main 1\n"),
        "the config is edited": lambda: append(target.config_path, "\n"),
        "finalize cuts a branch": lambda: git(target.root, "branch", "autoresearch/t-cut"),
    }
    for n, (what, change) in enumerate(changes.items(), start=2):
        change()
        assert [render(), render()] == [f"page {n}"] * 2, what
    with SessionLock(paths.lock):  # a night starts: the page says it runs
        assert render() == render() == f"page {len(changes) + 2}"
    assert render() == f"page {len(changes) + 3}"  # and it ended
    assert len(made) == len(changes) + 3
