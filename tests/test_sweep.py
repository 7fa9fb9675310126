"""Knob sweeps find the optimum: bracketing, following a gain, bisecting, re-checking."""

from __future__ import annotations

import sys
import textwrap
from types import SimpleNamespace

import pandas as pd
import pytest
from conftest import experiment_record, experiments, git, run, run_cli

from autoresearch.config import load_config
from autoresearch.errors import ConfigError
from autoresearch.plugins import BUILT_IN, available, proposer_class
from autoresearch.proposers.knobs import knob_from_table
from autoresearch.proposers.queue import QueueProposer
from autoresearch.proposers.sweep import _step
from autoresearch.report.sweeps import sweep_summaries

SWEEP_ONE = """
[[proposer]]
kind = "sweep"

[[proposer.knob]]
name = "l0"
file = "src/knobs.txt"
pattern = 'l0 = (\\d+)'
min = 1
max = 64
scale = "log2"
"""

SWEEP_TWO = (
    SWEEP_ONE
    + """
[[proposer.knob]]
name = "batch"
file = "src/knobs.txt"
pattern = 'batch = (\\d+)'
values = [1, 2, 4, 8, 16]
"""
)


def _sweep_target(target, sweep: str, knobs: str):
    text = target.config_path.read_text().replace('[proposer]\ndir = "hypotheses"\n', sweep)
    target.config_path.write_text(text)
    (target.root / "src" / "knobs.txt").write_text(knobs)
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "knobs")


def _kept_value(target, knob: str) -> int:
    text = git(target.root, "show", "autoresearch/t:src/knobs.txt")
    line = next(line for line in text.splitlines() if line.startswith(knob))
    return int(line.split("=")[1])


def test_one_knob_ends_within_a_step_of_the_optimum(target, monkeypatch):
    monkeypatch.setenv("BENCH_COST", "50 + 2 * (l0 - 7) ** 2")
    monkeypatch.setenv("BENCH_NOISE_PCT", "3")
    monkeypatch.setenv("BENCH_SENTINEL_NOISE_PCT", "0")
    _sweep_target(target, SWEEP_ONE, "l0 = 32\n")

    outcome = run(target)

    records = experiments(target)
    assert all(r.proposer == "sweep" for r in records)
    assert abs(_kept_value(target, "l0") - 7) <= 1
    # Keeps only real improvements: every keep moved toward 7.
    for r in records:
        if r.status == "keep":
            assert abs(r.proposal["value"] - 7) < abs(r.proposal["from"] - 7)
    # Bracketing + following + bisection: 64, 16, 8, 4, then bisections on both sides.
    assert len(records) <= 10, [(r.title, r.status) for r in records]
    values = [(r.parent_commit, r.proposal["value"]) for r in records]
    assert len(values) == len(set(values)), "a value measured twice at the same best"
    assert "none undecided" in outcome.stop_reason
    first = records[0]
    assert first.title == "l0: 32 -> 64" and "bracketing" in first.asi.hypothesis
    following = next(r for r in records if "following" in (r.asi.hypothesis or ""))
    kept_before = [r.proposal["value"] for r in records if r.status == "keep" and r.n < following.n]
    assert following.proposal["from"] == kept_before[-1]


def test_two_interacting_knobs(target, monkeypatch):
    monkeypatch.setenv(
        "BENCH_COST", "40 + 2 * (l0 - 7) ** 2 + 6 * (batch - 4) ** 2 + (l0 - 7) * (batch - 4)"
    )
    monkeypatch.setenv("BENCH_NOISE_PCT", "2")
    monkeypatch.setenv("BENCH_SENTINEL_NOISE_PCT", "0")
    _sweep_target(target, SWEEP_TWO, "l0 = 32\nbatch = 16\n")

    run(target)

    records = experiments(target)
    assert abs(_kept_value(target, "l0") - 7) <= 1
    assert abs(_kept_value(target, "batch") - 4) <= 1
    # After batch's keeps changed the code around it, l0's neighbours were measured again.
    assert any("re-checking" in (r.asi.hypothesis or "") for r in records)
    assert len(records) <= 30


COST_TWO = "40 + 2 * (l0 - 7) ** 2 + 6 * (batch - 4) ** 2 + (l0 - 7) * (batch - 4)"


def _cost(knobs: dict) -> float:
    return eval(COST_TWO, {}, knobs)


def test_joint_search_finds_the_optimum_region_and_keeps_only_real_wins(target, monkeypatch):
    monkeypatch.setenv("BENCH_COST", COST_TWO)
    monkeypatch.setenv("BENCH_NOISE_PCT", "2")
    monkeypatch.setenv("BENCH_SENTINEL_NOISE_PCT", "0")
    joint = SWEEP_TWO.replace('kind = "sweep"', 'kind = "sweep"\nsearch = "joint"\ntrials = 14')
    _sweep_target(target, joint, "l0 = 32\nbatch = 16\n")

    # Stopped part-way and resumed: the study is rebuilt from the journal, not kept in memory.
    run(target, max_experiments=6)
    run(target)

    records = experiments(target)
    assert len(records) == 14 and all(r.proposal["search"] == "joint" for r in records)
    assert [r.proposal["trial"] for r in records] == list(range(1, 15))
    points = [tuple(v["value"] for v in r.proposal["knobs"].values()) for r in records]
    assert len(set(points)) == len(points), "a point measured twice"
    start = {"l0": 32, "batch": 16}
    final = {k: _kept_value(target, k) for k in start}
    assert _cost(final) < 0.1 * _cost(start), final
    # The decision rule decided every keep: each kept point is truly cheaper than its parent.
    for r in records:
        moved = {k: v["value"] for k, v in r.proposal["knobs"].items()}
        before = {k: v["from"] for k, v in r.proposal["knobs"].items()}
        if r.status == "keep":
            assert _cost(moved) < _cost(before), r.title
    assert any(r.status == "keep" for r in records)
    assert "joint TPE search" in records[-1].asi.hypothesis
    assert "points measured since the search started" in records[-1].asi.hypothesis
    shown = f"l0 {final['l0']}, batch {final['batch']} is best at"
    assert f"joint TPE search: {shown}" in run_cli("report", cwd=target.root).stdout
    pr = run_cli("pr", cwd=target.root).stdout
    assert "| trial | moved | change | status |" in pr and "| 1 | l0 32 → " in pr
    run_cli("ideas", cwd=target.root)
    assert f"- joint TPE search: {shown}" in (target.root / "ideas.md").read_text()


def test_joint_search_restarts_its_model_after_another_keep(target, monkeypatch):
    monkeypatch.setenv("BENCH_COST", "value * (1 + ((l0 - 7) ** 2) / 100)")
    queue_then_joint = SWEEP_ONE.replace(
        'kind = "sweep"',
        'kind = "queue"\ndir = "hypotheses"\n\n[[proposer]]\nkind = "sweep"\nsearch = "joint"\n'
        "trials = 3",
        1,
    )
    _sweep_target(target, queue_then_joint, "l0 = 32\n")
    run(target, max_experiments=2)
    records = experiments(target)
    assert [r.proposer for r in records] == ["sweep", "sweep"]
    # A queue patch kept now changes the code under the knob: the model starts over.
    target.add_hypothesis("01-faster", {"src/value.txt": "20\n"})
    run(target)

    records = experiments(target)
    queue = next(r for r in records if r.proposer == "queue")
    after = [r for r in records if r.n > queue.n]
    assert queue.status == "keep"
    assert [r.proposal["trial"] for r in after] == [1, 2, 3]


def test_a_knob_whose_pattern_stops_matching_is_a_warning(target, monkeypatch):
    monkeypatch.setenv("BENCH_COST", "50 + 2 * (l0 - 7) ** 2")
    sweep = SWEEP_ONE.replace(
        'kind = "sweep"', 'kind = "queue"\ndir = "hypotheses"\n\n[[proposer]]\nkind = "sweep"', 1
    )
    _sweep_target(target, sweep, "l0 = 32\n")
    # The queue renames the knob first: the sweep's pattern no longer matches.
    monkeypatch.delenv("BENCH_COST")
    target.add_hypothesis("01-rename", {"src/knobs.txt": "zero = 32\n", "src/value.txt": "50\n"})

    done = run_cli("run", cwd=target.root)

    assert done.returncode == 0, done.stderr
    assert "knob l0: pattern" in done.stderr and "no longer matches" in done.stderr
    assert [r.title for r in experiments(target)] == ["01-rename"]


@pytest.mark.parametrize(
    ("knob", "message"),
    [
        (
            'name = "k"\nfile = "src/knobs.txt"\npattern = "k = \\\\d+"\nvalues = [1, 2]',
            "exactly one capture group",
        ),
        (
            'name = "k"\nfile = "README"\npattern = "k = (\\\\d+)"\nvalues = [1, 2]',
            "outside [scope]",
        ),
        ('name = "k"\nfile = "src/knobs.txt"\npattern = "k = (\\\\d+)"', "give 'values', or 'min'"),
        (
            'name = "k"\nfile = "src/knobs.txt"\npattern = "k = (\\\\d+)"\nmin = 0\nmax = 8',
            "log2 scale needs",
        ),
        ('name = "k"\nfile = "src/knobs.txt"\npattern = "(\\\\d+)"\nvalues = [1]', "at least two"),
        (
            'name = "k"\nfile = "src/knobs.txt"\npattern = "(\\\\d+)"\nvalues = [1, 2]\ncolour = 1',
            "unknown key 'colour'",
        ),
    ],
)
def test_bad_knobs_are_config_errors(target, knob, message):
    text = target.config_path.read_text().replace(
        '[proposer]\ndir = "hypotheses"\n',
        f'[[proposer]]\nkind = "sweep"\n\n[[proposer.knob]]\n{knob}\n',
    )
    target.config_path.write_text(text)
    with pytest.raises(ConfigError, match="proposer\\[0\\]: knob\\[0\\]") as raised:
        load_config(target.config_path)
    assert message in str(raised.value)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ('search = "annealing"', "'search' must be one of coordinate, joint"),
        ('sampler = "tpe"', 'only apply to search = "joint"'),
        ('search = "joint"\nsampler = "bayes"', "'sampler' must be one of tpe, gp, random"),
        ('search = "joint"\ntrials = -1', "'trials' must be a whole number"),
        ("colour = 1", "no option 'colour'"),
    ],
)
def test_bad_search_options_are_config_errors(target, options, message):
    sweep = SWEEP_ONE.replace('kind = "sweep"', f'kind = "sweep"\n{options}')
    text = target.config_path.read_text().replace('[proposer]\ndir = "hypotheses"\n', sweep)
    target.config_path.write_text(text)
    with pytest.raises(ConfigError, match="proposer\\[0\\]") as raised:
        load_config(target.config_path)
    assert message in str(raised.value)


def test_unknown_proposer_kind_lists_the_installed_ones(target):
    text = target.config_path.read_text().replace(
        '[proposer]\ndir = "hypotheses"\n', '[[proposer]]\nkind = "oracle"\n'
    )
    target.config_path.write_text(text)
    with pytest.raises(
        ConfigError, match="no proposer kind 'oracle' \\(installed: agent, queue, sweep"
    ):
        load_config(target.config_path)


THIRD_PARTY = '''
    """A proposer from another package: one fixed hypothesis, then nothing."""

    from autoresearch.proposers import Hypothesis


    class FixedProposer:
        name = "fixed"

        @classmethod
        def check_options(cls, options, config, where):
            if set(options) - {"value"}:
                from autoresearch.errors import ConfigError
                raise ConfigError(f"{where}: fixed takes only 'value'")

        @classmethod
        def from_options(cls, options, config):
            return cls(options.get("value", "80"))

        def __init__(self, value):
            self.value = value

        def next(self, context):
            if any(r.proposer == "fixed" for r in context.records):
                return None
            old = context.read("src/value.txt")
            patch = (
                "diff --git a/src/value.txt b/src/value.txt\\n--- a/src/value.txt\\n"
                f"+++ b/src/value.txt\\n@@ -1 +1 @@\\n-{old.strip()}\\n+{self.value}\\n"
            )
            return Hypothesis(title=f"fixed value {self.value}", patch=patch.encode())

        def pending(self, context):
            return 0 if any(r.proposer == "fixed" for r in context.records) else 1
'''


@pytest.mark.e2e
def test_a_third_party_proposer_registered_by_entry_point_runs(target, tmp_path):
    site = tmp_path / "site"
    (site / "fixed_proposer-1.0.dist-info").mkdir(parents=True)
    (site / "fixed_proposer.py").write_text(textwrap.dedent(THIRD_PARTY))
    info = site / "fixed_proposer-1.0.dist-info"
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fixed-proposer\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[autoresearch.proposers]\nfixed = fixed_proposer:FixedProposer\n"
    )
    text = target.config_path.read_text().replace(
        '[proposer]\ndir = "hypotheses"\n', '[[proposer]]\nkind = "fixed"\nvalue = "70"\n'
    )
    target.config_path.write_text(text)
    git(target.root, "commit", "-qam", "a plug-in proposer")

    # A new interpreter: the entry point is found on its path at start-up.
    done = run_cli("run", cwd=target.root, env={"PYTHONPATH": str(site)}, real=True)

    assert done.returncode == 0, done.stderr
    (record,) = experiments(target)
    assert (record.proposer, record.title, record.status) == ("fixed", "fixed value 70", "keep")
    # Without the package the kind is unknown, said in one line.
    done = run_cli("status", cwd=target.root)
    assert done.returncode == 1 and "no proposer kind 'fixed'" in done.stderr


def test_a_plug_in_cannot_stand_in_for_a_built_in_kind(tmp_path, monkeypatch):
    """A package in the environment that declares `queue` too: the config's queue is still
    this package's, and the plug-in's own kinds are still found."""
    site = tmp_path / "site"
    info = site / "fixed_proposer-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "fixed_proposer.py").write_text(textwrap.dedent(THIRD_PARTY))
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fixed-proposer\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[autoresearch.proposers]\nqueue = fixed_proposer:FixedProposer\n"
        "fixed = fixed_proposer:FixedProposer\n"
    )
    # Last on the path: where an entry point read later would win a name both declare.
    monkeypatch.setattr(sys, "path", [*sys.path, str(site)])
    assert proposer_class("queue", "here") is QueueProposer
    assert proposer_class("fixed", "here").__name__ == "FixedProposer"
    assert available()["queue"] == BUILT_IN["queue"]


def test_review_shows_each_sweep(target, monkeypatch, tmp_path):
    monkeypatch.setenv("BENCH_COST", "50 + 2 * (l0 - 7) ** 2")
    monkeypatch.setenv("BENCH_SENTINEL_NOISE_PCT", "0")
    _sweep_target(target, SWEEP_ONE, "l0 = 32\n")
    run(target)
    best = _kept_value(target, "l0")

    report = run_cli("report", cwd=target.root)
    assert f"sweep l0: {best} is best at" in report.stdout
    pr = run_cli("pr", cwd=target.root).stdout
    assert "## Knob sweeps" in pr and "| 32 → 64 |" in pr
    run_cli("ideas", cwd=target.root)
    ideas = (target.root / "ideas.md").read_text()
    assert "### Swept knobs (1)" in ideas and f"- l0: {best} is best at" in ideas
    done = run_cli("plot", "--out", str(tmp_path), cwd=target.root)
    assert "sweeps.png" in done.stdout
    assert (tmp_path / "sweeps.png").stat().st_size > 10_000


def test_a_sweep_whose_gains_lead_to_the_edge_of_its_range_says_so(target, monkeypatch):
    """Faster all the way up to max = 64: the optimum may lie beyond the range searched."""
    monkeypatch.setenv("BENCH_COST", "50 + 3200 / l0")
    monkeypatch.setenv("BENCH_SENTINEL_NOISE_PCT", "0")
    _sweep_target(target, SWEEP_ONE, "l0 = 8\n")
    run(target)
    assert _kept_value(target, "l0") == 64

    report = run_cli("report", cwd=target.root).stdout
    assert "sweep l0: 64 is best at" in report
    assert "the gains led to the top of the range searched: a larger max may find more" in report

    # A knob that starts at an edge and stays there is not flagged: that edge is its own
    # (zstd's fastest level, no filter at all).
    rows = pd.DataFrame(
        [
            {
                "n": 1,
                "proposal": {"knob": "level", "from": 1, "value": 2, "range": [1, 4]},
                "change_pct": 7.6,
                "status": "discard",
                "parent": "a" * 40,
                "commit": None,
            }
        ]
    )
    (summary,) = sweep_summaries(rows)
    assert summary["line"] == f"level: 1 is best at {'a' * 10}; 2 (+7.6%) slower"


def test_the_sweep_looks_one_step_past_a_plateau(target, monkeypatch):
    """16 is no faster than 8, 32 is 30% faster: a search that only follows wins stops at 8."""
    monkeypatch.setenv("BENCH_COST", "100 - 30 * (l0 >= 32)")
    monkeypatch.setenv("BENCH_NOISE_PCT", "0.3")
    monkeypatch.setenv("BENCH_SENTINEL_NOISE_PCT", "0")
    _sweep_target(target, SWEEP_ONE, "l0 = 8\n")

    run(target)

    records = experiments(target)
    seen = [(r.proposal["value"], r.status, r.rule, r.evidence().change_pct) for r in records]
    assert _kept_value(target, "l0") == 32, seen
    past = next(r for r in records if r.proposal["value"] == 32)
    assert past.status == "keep"
    assert past.proposal["why"].startswith("looking past a plateau: 16 measured")
    assert [r.proposal["value"] for r in records[:3]] == [16, 4, 32]
    # One step past a plateau, then the usual search around the new best: 64 (flat, no
    # bisection towards it) and 16 (slower: bisection 23, 27, 29, 30, 31), 10 experiments.
    values = [r.proposal["value"] for r in records]
    assert len(values) <= 11 and not any(32 < v < 64 for v in values), seen
    assert records[4].proposal["why"].startswith("bracketing")


def _measured(value, change, rule):
    """What the search reads of an experiment at a value: its status, rule and change."""
    metrics = {"t_ms": {"change_pct": change, "threshold_pct": 3.0}}
    return experiment_record(
        value,
        status="keep" if rule == "significant_win" else "discard",
        decision={"rule": rule, "threshold_pct": 3.0, "metrics": metrics},
        proposal={"value": value},
    )


def test_a_loss_within_the_floor_is_looked_past(target):
    """Flat runs show a significant loss by chance (one experiment in twenty): 16 measured
    +0.3% worse with p < alpha is still a plateau, and 32 behind it is tried; a sentinel over
    its budget is not."""
    _sweep_target(target, SWEEP_ONE, "l0 = 8\n")
    table = {"name": "l0", "file": "src/knobs.txt", "pattern": r"l0 = (\d+)", "min": 1, "max": 64}
    knob = knob_from_table(table, target.load(), "test")
    here = {
        16: _measured(16, 0.3, "significant_loss"),
        4: _measured(4, -0.2, "below_threshold"),
    }
    value, why = _step(knob, 8, here, None)
    assert value == 32 and why.startswith("looking past a plateau: 16 measured +0.3%")
    here[16] = _measured(16, 0.3, "sentinel_budget")
    value, why = _step(knob, 8, here, None)
    assert value == 2 and why.startswith("looking past a plateau: 4 measured -0.2%")


def test_no_bisection_into_a_plateau(target):
    """16 was kept over 4; at 16, 8 and 32 measured within the floor and 64 too: a plateau
    on both sides, nothing to bisect (the search once went through 5 to 15 here)."""
    _sweep_target(target, SWEEP_ONE, "l0 = 16\n")
    table = {"name": "l0", "file": "src/knobs.txt", "pattern": r"l0 = (\d+)", "min": 1, "max": 64}
    knob = knob_from_table(table, target.load(), "test")
    made_here = SimpleNamespace(proposal={"from": 4, "value": 16})
    here = {
        32: _measured(32, -0.4, "below_threshold"),
        8: _measured(8, 0.5, "not_promising"),
        64: _measured(64, 0.6, "below_threshold"),
    }
    assert _step(knob, 16, here, made_here) is None
    # A loss the t-test shows with flat runs, smaller than the floor: still a plateau.
    here[8] = _measured(8, 0.4, "significant_loss")
    assert _step(knob, 16, here, made_here) is None
    # Where the nearest neighbour is slower, the search bisects towards it.
    here[8] = _measured(8, 6.0, "significant_loss")
    value, why = _step(knob, 16, here, made_here)
    assert value == 11 and why.startswith("bisecting between 16 (the best) and 8")


def test_a_search_counts_against_its_budget_from_the_first_experiment(target, monkeypatch):
    """A sweep cannot say how long it will take: the counter's N is the budget, marked as a
    bound, from the first experiment to the last (it was n/n all night)."""
    monkeypatch.setenv("BENCH_COST", "50 + 2 * (l0 - 7) ** 2")
    _sweep_target(target, SWEEP_ONE, "l0 = 32\n")

    done = run_cli("run", "--max-experiments", "4", "--no-confirm", cwd=target.root)

    assert done.returncode == 0, done.stderr
    labels = [line.split("]")[0] + "]" for line in done.stderr.splitlines() if line[:1] == "["]
    assert sorted(set(labels)) == ["[1/<=4]", "[2/<=4]", "[3/<=4]", "[4/<=4]"], done.stderr
