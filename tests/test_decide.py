"""The sequential rule, on samples made to order."""

import dataclasses
import json
import math
import random
import re

import pytest

from autoresearch.config import DecisionConfig, load_config
from autoresearch.decide.calibration import Calibration
from autoresearch.decide.design import (
    DESIGN_BETA,
    REFUSE_FACTOR,
    TARGET_BETA,
    detectable_effect_pct,
    noise_verdict,
    runs_needed,
)
from autoresearch.decide.rule import Judge
from autoresearch.journal.evidence import Evidence, SentinelEvidence
from autoresearch.journal.records import CalibrationRecord

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


def test_schedule_alphas_and_the_cap(config):
    judge = Judge(config, threshold=2.0)  # no noise known: max_runs, no futility stops
    assert judge.cap == 20 and judge.schedule == [6, 9, 13, 20]
    assert judge.design.effect_pct is None and judge.design.bounds.futility[0] == -math.inf
    # The looks share their pairs, so their exact nominal p's add up to more than alpha: the
    # union bound (each look its share of alpha) gave the same false keeps a smaller p to beat.
    assert sum(judge.alphas) > config.decision.alpha
    assert max(judge.alphas) < config.decision.alpha
    assert judge.extension == [30, 40] and judge.limit == 40  # for unresolved sentinels
    assert DecisionConfig(looks=1, max_runs=9).schedule() == [9]
    # Futility stops built for a win of target_effect_pct, its size read at each look; a bench
    # too noisy for it: built for the smallest win max_runs can see.
    quiet, noisy = Judge(config, 2.0, noise_pct=0.5), Judge(config, 2.0, noise_pct=8.0)
    assert quiet.design.effect_pct == pytest.approx(config.decision.target_effect_pct)
    assert quiet.design.remeasured and not noisy.design.remeasured
    # The target's stops may give up more of its wins than the noisy bench's of its smallest.
    assert quiet.design.power == pytest.approx(1 - TARGET_BETA)
    assert noisy.design.power == pytest.approx(1 - DESIGN_BETA)
    assert noisy.cap == 20 and noisy.design.effect_pct > 2 * config.decision.target_effect_pct
    # The quieter a look measures the bench, the sooner a null is given up at that look.
    assert quiet.design.futility(0, 0.01) > quiet.design.futility(0, 0.03)
    budget = dataclasses.replace(config.decision, budget_s=60.0)
    timed = Judge(dataclasses.replace(config, decision=budget), 2.0, noise_pct=8.0, run_s=2.0)
    assert timed.cap == 15 and timed.schedule[-1] == 15


def test_the_calibrations_pairs_join_the_test_and_shorten_the_design(config):
    base, cand = arms(6, 0.96, noise=0.01, seed=4)
    alone = Judge(config, 2.0, noise_pct=1.0)
    # Seven degrees of freedom of A/A pairs with the same spread (a pair's sd 1.4%).
    prior = (7 * 0.014**2, 7)
    pooled = Judge(config, 2.0, noise_pct=1.0, prior=prior)
    ev_alone = alone.look(base, cand, final=False).metrics["t_ms"]
    ev_pooled = pooled.look(base, cand, final=False).metrics["t_ms"]
    assert (ev_alone.df, ev_pooled.df) == (5, 12)
    assert ev_pooled.pooled_with_calibration and not ev_alone.pooled_with_calibration
    assert ev_pooled.p_better < ev_alone.p_better
    # A candidate that adds noise is judged by its own spread.
    wild, calm = arms(6, 0.96, noise=0.08, seed=4)
    assert not pooled.look(wild, calm, final=True).metrics["t_ms"].pooled_with_calibration


def test_clear_win_is_kept_at_the_first_look(config):
    decision = Judge(config, 2.0).look(*arms(6, 0.85, noise=0.01), final=False)
    assert (decision.status, decision.rule, decision.look) == ("keep", "significant_win", 1)
    primary = decision.evidence
    assert decision.primary == "t_ms"
    assert primary.paired is True and primary.unpaired.change_pct < 0
    assert primary.ci_low_pct < primary.change_pct < primary.ci_high_pct < 0
    assert primary.p_better < decision.design.alpha_per_look
    assert decision.design.n_candidate == 6
    assert decision.sentinels["s_ms"].verdict == "within"


def test_pairing_cancels_load_that_moves_both_runs_of_a_pair(config):
    rng = random.Random(7)
    load = [1 + rng.uniform(-0.3, 0.3) for _ in range(6)]  # another job, pair by pair
    base = {"t_ms": [100 * f * (1 + rng.gauss(0, 0.005)) for f in load]}
    cand = {"t_ms": [95 * f * (1 + rng.gauss(0, 0.005)) for f in load]}
    base |= {"s_ms": base["t_ms"]}
    cand |= {"s_ms": base["t_ms"]}
    paired = Judge(config, 2.0).look(base, cand, final=False)
    assert paired.status == "keep" and -6 < paired.metrics["t_ms"].change_pct < -4
    unpaired_config = dataclasses.replace(
        config, decision=dataclasses.replace(config.decision, paired=False)
    )
    assert Judge(unpaired_config, 2.0).look(base, cand, final=False) is None


def test_clear_loss_is_discarded(config):
    decision = Judge(config, 2.0).look(*arms(6, 1.2), final=False)
    assert (decision.status, decision.rule) == ("discard", "significant_loss")


def test_ambiguous_result_asks_for_more_runs_then_ends_inconclusive(config):
    base, cand = arms(6, 0.97, noise=0.05, seed=3)
    judge = Judge(config, 2.0)
    assert judge.look(base, cand, final=False) is None
    decision = judge.look(base, cand, final=True)
    assert (decision.status, decision.rule) == ("inconclusive", "max_runs")


def test_gain_below_the_floor_is_not_worth_claiming(config):
    floor = config.decision.min_effect_pct
    decision = Judge(config, floor).look(*arms(20, 0.995, noise=0.002), final=False)
    assert (decision.status, decision.rule) == ("discard", "below_threshold")
    assert "below the floor" in decision.reason
    # The same small gain against a threshold the noise raised closes nothing.
    decision = Judge(config, 5.0).look(*arms(20, 0.99, noise=0.005), final=False)
    assert (decision.status, decision.rule) == ("discard", "below_noise_threshold")


def test_a_null_on_a_noisy_machine_is_not_worth_more_runs(config):
    wobble = [0.08, -0.08, 0.05, -0.05, 0.01, -0.01]
    base = {"t_ms": [100.0] * 6, "s_ms": [50.0] * 6}
    cand = {"t_ms": [100 * (1 + e) for e in wobble], "s_ms": [50.0] * 6}
    judge = Judge(config, 2.0, noise_pct=3.0)
    decision = judge.look(base, cand, final=False)
    assert (decision.status, decision.rule) == ("discard", "not_promising")
    assert f"by {judge.cap} runs per arm" in decision.reason
    design = judge.design
    assert f"keeps a {design.effect_pct:.1f}% win {design.power:.0%} of the time" in decision.reason
    # Without a calibrated noise there is no win to build the stops for: it runs on.
    assert Judge(config, 2.0).look(base, cand, final=False) is None
    # At the last look there is nothing left to spend: undecided is inconclusive.
    assert Judge(config, 2.0).look(base, cand, final=True).rule == "max_runs"


def test_a_sentinel_command_buys_the_extension_more_pairs_in_the_same_seconds(config):
    plain = dataclasses.replace(
        config, decision=dataclasses.replace(config.decision, budget_s=300.0)
    )
    bench = dataclasses.replace(config.bench, sentinel_command="./bench --sentinels")
    command = dataclasses.replace(plain, bench=bench)
    # The whole bench: 2.5 s a run; 300 s pay for 60 pairs, the extension stops at 2 caps.
    whole = Judge(plain, 2.0, run_s=2.5, sentinel_run_s=0.625)
    assert whole.cap == 20 and whole.extension == [30, 40]
    # The sentinel alone runs in 0.625 s: the same 20 extra pairs' seconds pay for 80.
    cheap = Judge(command, 2.0, run_s=2.5, sentinel_run_s=0.625)
    assert cheap.extension == [60, 100] and cheap.limit == 100
    assert len(cheap.sentinel_errors) == len(cheap.looks) == 6
    # Its duration unknown (an older calibration): no more pairs than the bench would get.
    assert Judge(command, 2.0, run_s=2.5).extension == [30, 40]


def test_sentinel_over_budget_vetoes_a_win(config):
    decision = Judge(config, 2.0).look(*arms(6, 0.85, sentinel_factor=1.3), final=False)
    assert (decision.status, decision.rule) == ("discard", "sentinel_budget")
    assert decision.sentinels["s_ms"].verdict == "over"


def test_a_win_waits_for_its_unresolved_sentinel_within_the_budget(config):
    base, cand = arms(40, 0.85, sentinel_factor=1.05, noise=0.03, seed=5)
    judge = Judge(config, 2.0)
    at = {
        n: ({k: v[:n] for k, v in base.items()}, {k: v[:n] for k, v in cand.items()})
        for n in (6, 20, 30, 40)
    }
    assert judge.look(*at[6], final=False) is None
    assert judge.look(*at[20], final=False) is None  # the cap: the win stands, runs go on
    assert judge.look(*at[30], final=False) is None
    decision = judge.look(*at[40], final=False)
    assert (decision.status, decision.rule) == ("inconclusive", "sentinel_unresolved")
    extension = decision.sentinel_extension
    assert extension.primary_decided_at == 20 and extension.pairs_added == 20
    assert extension.outcome == "still unresolved"


def test_more_runs_show_a_sentinel_within_budget(config):
    base, cand = arms(40, 0.85, sentinel_factor=1.0, noise=0.06, seed=11)
    # The sentinel is noisy in the first pairs (a busy machine), quiet afterwards.
    for i in range(20):
        cand["s_ms"][i] *= 1 + (0.2 if i % 2 else -0.2)
    judge = Judge(config, 2.0)
    decided = None
    for n in judge.looks:
        decided = judge.look(
            {k: v[:n] for k, v in base.items()}, {k: v[:n] for k, v in cand.items()}, final=False
        )
        if decided is not None:
            break
    assert (decided.status, decided.rule) == ("keep", "significant_win")
    extension = decided.sentinel_extension
    assert extension.outcome == "shown within budget" and extension.pairs_added > 0
    assert "sentinels shown within budget" in decided.reason


def test_sentinel_error_is_spent_in_proportion_to_the_runs_of_each_look(config):
    judge = Judge(config, 2.0)
    errors = judge.sentinel_errors
    assert len(errors) == len(judge.looks) == 6
    assert sum(errors) == pytest.approx(0.05)  # 1 - sentinel_confidence, over every look
    assert errors[-1] / errors[0] == pytest.approx(judge.looks[-1] / judge.looks[0])
    # A win with a quiet sentinel: its bound at the first look is taken at that look's share.
    base, cand = arms(6, 0.8, noise=0.005, seed=3)
    decision = judge.look(base, cand, final=False)
    assert decision.status == "keep"
    assert decision.sentinels["s_ms"].confidence == pytest.approx(1 - errors[0])


def test_missing_sentinel_is_never_assumed_fine(config):
    base, cand = arms(6, 0.85)
    del cand["s_ms"]
    decision = Judge(config, 2.0).look(base, cand, final=True)
    assert decision.status == "inconclusive"
    assert decision.sentinels["s_ms"].verdict == "unresolved"


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


def test_the_noise_verdict_refuses_only_a_bench_blind_to_several_times_the_target(config):
    """A night that can still keep the wins worth having runs, saying what it can detect;
    refused only past REFUSE_FACTOR times the effect asked for. The advice names what stands
    in the way, the time budget included."""
    d = config.decision  # target 5%, max_runs 20
    quiet = noise_verdict(config, 1.0, run_s=1.0)
    assert not quiet.refuse and quiet.warning is None
    assert quiet.detectable_pct == pytest.approx(detectable_effect_pct(config, 1.0))
    assert "20 runs per arm detect" in quiet.message

    noise = 5.0  # 20 runs per arm detect about 6.3%: over 5%, far under 15%
    middling = noise_verdict(config, noise, run_s=1.0)
    assert d.target_effect_pct < middling.detectable_pct < REFUSE_FACTOR * d.target_effect_pct
    assert not middling.refuse and middling.warning == middling.message
    needed = runs_needed(config, noise, d.target_effect_pct)
    assert f"raise decision.max_runs to {needed}" in middling.message
    assert "budget_s" not in middling.message
    # Or look only for the wins it can see: the target it names runs without a warning.
    larger = math.ceil(middling.detectable_pct)
    assert f"(target_effect_pct = {larger})" in middling.message
    wider = dataclasses.replace(config, decision=dataclasses.replace(d, target_effect_pct=larger))
    assert noise_verdict(wider, noise, run_s=1.0).warning is None

    # A time budget that pays for 10 pairs: fewer runs, a larger detectable change, and the
    # advice raises the budget too (raising max_runs alone would change nothing).
    budgeted = dataclasses.replace(config, decision=dataclasses.replace(d, budget_s=20.0))
    tight = noise_verdict(budgeted, noise, run_s=1.0)
    assert "10 runs per arm detect" in tight.message
    assert tight.detectable_pct > middling.detectable_pct
    assert f"decision.budget_s to {2 * needed}" in tight.message

    loud = noise_verdict(config, 15.0, run_s=1.0)
    assert loud.refuse and loud.detectable_pct > REFUSE_FACTOR * d.target_effect_pct


def test_a_calibration_gives_the_judge_its_aa_pairs_spread(config):
    """The record's samples are one arm's runs then the other's: run i of each is a pair."""
    first, second = [100.0, 102.0, 98.0, 101.0], [101.0, 101.0, 99.0, 103.0]
    record = CalibrationRecord(
        session="s",
        at="now",
        commit="0" * 40,
        samples={"t_ms": first + second},
        medians={},
        noise_pct={"t_ms": 1.5},
        threshold_pct=1.0,
        bench_logs=["a", "b"],
        duration_s=8.0,
    )
    calibration = Calibration.from_record(record, "t_ms")
    ratios = [math.log(c / b) for b, c in zip(first, second, strict=True)]
    mean = sum(ratios) / 4
    assert calibration.pair_df == 3
    assert calibration.pair_ss == pytest.approx(sum((r - mean) ** 2 for r in ratios))
    judge = calibration.judge(config)
    assert judge.prior == (calibration.pair_ss, 3) and judge.design.prior_df == 3
    # A keep's own runs stand for the new best; the spread stays the calibration's.
    kept = calibration.kept({"t_ms": [90.0, 91.0]})
    assert (kept.pair_ss, kept.pair_df) == (calibration.pair_ss, 3)


# pytest-benchmark's median and fastest round of fib(18), in microseconds, sixteen runs of a
# calibration on a shared VM whose speed came and went in phases of a second or two: each run's
# median fell in one phase or the other, its fastest round in the quick one nearly always.
PHASED_MEDIANS = [494, 623, 352, 571, 598, 542, 359, 366, 544, 575, 593, 349, 514, 537, 376, 518]
PHASED_FASTEST = [317, 347, 308, 333, 378, 317, 311, 314, 354, 315, 369, 311, 328, 314, 326, 307]


def test_a_bench_too_noisy_in_its_medians_is_pointed_at_its_fastest_round(config):
    """The night is refused on the medians' noise, and the advice names the same benchmark's
    fastest round, measured by the same runs, with what it would detect; that edit makes a
    night that runs. A metric with no quieter minimum beside it gets no such advice."""
    metric = dataclasses.replace(config.metric, name="test_fib_ns")
    named = dataclasses.replace(config, metric=metric)
    record = CalibrationRecord(
        session="s",
        at="now",
        commit="0" * 40,
        samples={"test_fib_ns": PHASED_MEDIANS, "test_fib_min_ns": PHASED_FASTEST},
        medians={},
        noise_pct={"test_fib_ns": 20.0, "test_fib_min_ns": 5.0},
        threshold_pct=1.0,
        bench_logs=["a"] * 16,
        duration_s=80.0,
    )
    verdict = Calibration.from_record(record, "test_fib_ns").verdict(named)
    assert verdict is not None and verdict.refuse
    said = re.search(
        r"decide on test_fib_min_ns, the fastest round of the same benchmark, whose noise here "
        r'lets 20 runs per arm detect ([\d.]+)% \(\[metric\] fallback = "test_fib_min_ns"',
        verdict.refusal,
    )
    assert said, verdict.refusal
    assert float(said.group(1)) < verdict.detectable_pct / 2

    fastest = dataclasses.replace(named, metric=dataclasses.replace(metric, name="test_fib_min_ns"))
    followed = Calibration.from_record(record, "test_fib_min_ns").verdict(fastest)
    assert followed is not None and not followed.refuse
    assert f"{followed.detectable_pct:.1f}" == said.group(1)
    assert "decide on" not in followed.message  # a minimum has no minimum of its own

    # Its fastest round as phased as its medians: nothing better to point at.
    alike = dataclasses.replace(
        record, samples={**record.samples, "test_fib_min_ns": PHASED_MEDIANS}
    )
    loud = Calibration.from_record(alike, "test_fib_ns").verdict(named)
    assert loud is not None and loud.refuse and "decide on" not in loud.message
    # A metric where higher is better: its least disturbed run is no minimum.
    higher = dataclasses.replace(named, metric=dataclasses.replace(metric, direction="higher"))
    rate = Calibration.from_record(record, "test_fib_ns").verdict(higher)
    assert rate is not None and rate.refuse and "decide on" not in rate.message


@pytest.mark.parametrize("factor", [0.9, 1.0, 1.06])
def test_a_decision_s_evidence_goes_through_the_journal_s_json_and_back_unchanged(config, factor):
    """One codec: what the rule read is the record's JSON, and reads back as the same values."""
    decision = Judge(config, 2.0, noise_pct=1.0).replay(*arms(20, factor, sentinel_factor=factor))
    assert decision is not None and decision.primary == "t_ms"
    journal = json.loads(json.dumps({"d": decision.to_dict(), "s": decision.sentinels_dict()}))
    for name, ev in decision.metrics.items():
        assert Evidence.from_dict(journal["d"]["metrics"][name]) == ev
    for name, ev in decision.sentinels.items():
        assert SentinelEvidence.from_dict(journal["s"][name]) == ev
    assert journal["d"]["status"] == decision.status and journal["d"]["rule"] == decision.rule


def test_an_older_record_s_missing_evidence_reads_as_unknown():
    ev = Evidence.from_dict({"change_pct": -3.0, "direction": "sideways"})
    assert ev.change_pct == -3.0 and ev.p_better is None and not ev.compared
    assert ev.n_baseline == 0 and ev.unpaired is None
    assert Evidence.from_dict(None) == Evidence()
