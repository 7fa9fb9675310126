"""The sequential rule, on samples made to order."""

import dataclasses
import random

import pytest

from autoresearch.config import DecisionConfig, load_config
from autoresearch.decide import Judge, detectable_effect_pct, runs_needed

CONFIG = """
[metric]
name = "t_ms"
[[secondary]]
name = "t10_ms"
[[sentinel]]
name = "s_ms"
budget_pct = 5.0
[decision]
min_effect_pct = 1.0
min_runs = 6
max_runs = 20
looks = 4
"""


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "autoresearch.toml"
    path.write_text(CONFIG)
    return load_config(path)


def arms(n, cand_factor, noise=0.02, sentinel_factor=1.0, t10_factor=None, seed=0):
    rng = random.Random(seed)

    def draw(center):
        return [center * (1 + rng.gauss(0, noise)) for _ in range(n)]

    base = {"t_ms": draw(100), "t10_ms": draw(10), "s_ms": draw(50)}
    cand = {
        "t_ms": draw(100 * cand_factor),
        "t10_ms": draw(10 * (t10_factor or cand_factor)),
        "s_ms": draw(50 * sentinel_factor),
    }
    return base, cand


def test_schedule_and_alpha(config):
    judge = Judge(config, threshold=2.0)
    assert judge.schedule == [6, 11, 15, 20]
    assert judge.alpha_keep == pytest.approx(0.01 / 4)
    assert DecisionConfig(looks=1, max_runs=9).schedule() == [9]


def test_clear_win_is_kept_at_the_first_look(config):
    decision = Judge(config, 2.0).look(*arms(6, 0.85), final=False)
    assert (decision.status, decision.rule, decision.look) == ("keep", "significant_win", 1)
    primary = decision.metrics["t_ms"]
    assert primary["ci_low_pct"] < primary["change_pct"] < primary["ci_high_pct"] < 0
    assert primary["p_better"] < 0.0025
    assert decision.extra["n_candidate"] == 6
    assert decision.sentinels["s_ms"]["verdict"] == "within"


def test_clear_loss_is_discarded(config):
    decision = Judge(config, 2.0).look(*arms(6, 1.2), final=False)
    assert (decision.status, decision.rule) == ("discard", "significant_loss")


def test_ambiguous_result_asks_for_more_runs_then_ends_inconclusive(config):
    base, cand = arms(6, 0.97, noise=0.05, seed=3)
    judge = Judge(config, 2.0)
    assert judge.look(base, cand, final=False) is None
    decision = judge.look(base, cand, final=True)
    assert (decision.status, decision.rule) == ("inconclusive", "max_runs")


def test_gain_below_threshold_is_not_worth_claiming(config):
    floor = config.decision.min_effect_pct
    decision = Judge(config, floor).look(*arms(20, 0.995, noise=0.002), final=False)
    assert (decision.status, decision.rule) == ("discard", "below_threshold")
    assert "(decision.min_effect_pct)" in decision.reason
    # The same small gain against a threshold the noise raised closes nothing.
    decision = Judge(config, 5.0).look(*arms(20, 0.99, noise=0.005), final=False)
    assert (decision.status, decision.rule) == ("discard", "below_noise_threshold")


def test_sentinel_over_budget_vetoes_a_win(config):
    decision = Judge(config, 2.0).look(*arms(6, 0.85, sentinel_factor=1.3), final=False)
    assert (decision.status, decision.rule) == ("discard", "sentinel_budget")
    assert decision.sentinels["s_ms"]["verdict"] == "over"


def test_unresolved_sentinel_needs_more_runs(config):
    base, cand = arms(6, 0.85, sentinel_factor=1.05, noise=0.03, seed=5)
    judge = Judge(config, 2.0)
    assert judge.look(base, cand, final=False) is None
    decision = judge.look(base, cand, final=True)
    assert (decision.status, decision.rule) == ("inconclusive", "sentinel_unresolved")


def test_missing_sentinel_is_never_assumed_fine(config):
    base, cand = arms(6, 0.85)
    del cand["s_ms"]
    decision = Judge(config, 2.0).look(base, cand, final=True)
    assert decision.status == "inconclusive"
    assert decision.sentinels["s_ms"]["verdict"] == "unresolved"


def test_unknown_comparison_is_never_significant(config):
    base, cand = arms(6, 0.5)
    del cand["t_ms"]
    judge = Judge(config, 2.0)
    assert judge.look(base, cand, final=False) is None
    decision = judge.look(base, cand, final=True)
    assert (decision.status, decision.rule) == ("inconclusive", "unknown_comparison")


def test_small_win_must_agree_across_scales(config):
    config = dataclasses.replace(
        config, decision=dataclasses.replace(config.decision, agree_with=["t10_ms"])
    )
    small, other_way = arms(20, 0.97, noise=0.003, t10_factor=1.02)
    decision = Judge(config, 2.0).look(small, other_way, final=True)
    assert (decision.status, decision.rule) == ("inconclusive", "cross_scale_disagreement")
    agree = arms(20, 0.97, noise=0.003, t10_factor=0.99)
    assert Judge(config, 2.0).look(*agree, final=True).status == "keep"
    big = arms(20, 0.80, noise=0.003, t10_factor=1.02)  # large wins need no agreement
    assert Judge(config, 2.0).look(*big, final=True).status == "keep"


def test_power_arithmetic(config):
    mde = detectable_effect_pct(config, 2.0)
    assert 1.5 < mde < 3.5
    assert runs_needed(config, 2.0, mde) == pytest.approx(config.decision.max_runs, abs=1)
    assert runs_needed(config, 4.0, mde) > 3 * config.decision.max_runs
