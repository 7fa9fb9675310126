"""The holdout's runs: a workload the candidate was not tuned to, measured before a keep.

`[holdout] command` runs, paired and alternating like the bench (B C, C B, ...), in the same
two arms and from the same state, once the bench decided a keep; its files are hidden from
every other confined run (sandbox.py, `secret`) and from the agent. Its verdict
(decide/holdout_verdict.py) may turn the keep into a discard. A holdout still undecided after
`pairs`
(no win shown, and neither a loss nor a gain short of the floor) runs `pairs` more, up to
`max_pairs`: a real win smaller on the holdout than on the bench (a tuning knob at another
size) needs more pairs to be shown, and a change fast only on the bench's inputs more to be
shown to gain nothing there; each look's interval is widened for the looks allowed, so that
more looks do not make a spurious verdict likelier.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..decide.holdout_verdict import holdout_decision, holdout_evidence
from .samples import BASELINE, CANDIDATE, Measurement, PairMeasurement

if TYPE_CHECKING:
    from ..config import Config
    from ..journal.decision import Decision
    from .measure import Harness

__all__ = ["holdout_verdict", "measure_holdout", "run_holdout"]


def run_holdout(
    harness: Harness,
    arms: tuple[Path, Path],
    logs: Callable[[str], Path],
    pairs: int,
    into: tuple[Measurement, Measurement] | None = None,
) -> tuple[Measurement, Measurement, tuple[str, str] | None]:
    """`pairs` pairs of holdout runs of the arms (best, candidate), added to `into`'s: each
    arm's samples, and (its arm, why) when a run failed."""
    best, candidate = into or (Measurement(), Measurement())
    arm_of = {BASELINE: (arms[0], best), CANDIDATE: (arms[1], candidate)}
    name = harness.config.holdout_metric.name
    done = len(best.samples.get(name, []))
    for i in range(done + 1, done + pairs + 1):
        for arm in (BASELINE, CANDIDATE) if i % 2 else (CANDIDATE, BASELINE):
            cwd, measured = arm_of[arm]
            values = harness.holdout_values(cwd, logs(f"holdout-{arm}-{i}"), measured, arm)
            if values is None:
                return best, candidate, (arm, measured.detail)
            measured.samples.setdefault(name, []).append(values[name])
    return best, candidate, None


def bench_gain(decision: Decision | None) -> float:
    """What the bench showed the primary metric gain, in percent (positive: better)."""
    gain = decision.evidence.improvement_pct if decision is not None else None
    return gain or 0.0


def measure_holdout(
    harness: Harness,
    pair: PairMeasurement,
    arms: tuple[Path, Path],
    logs: Callable[[str], Path],
    pairs: int = 0,
) -> PairMeasurement:
    """The holdout after the bench decided a keep (the decision then carries its verdict), or
    `pairs` of it with no decision to judge (the confirmation's); a run that failed is the
    measurement's failure (the candidate's: crash, timeout)."""
    held = harness.config.holdout
    name = harness.config.holdout_metric.name
    looks = held.looks if pair.decision is not None and not pairs else 1
    gain = bench_gain(pair.decision)
    best, candidate, failed = run_holdout(harness, arms, logs, pairs or held.pairs)
    evidence = None
    for look in range(1, looks + 1):
        if failed is not None or pair.decision is None:
            break
        evidence = holdout_evidence(
            harness.config, best.samples[name], candidate.samples[name], looks, gain
        )
        done = len(candidate.samples[name])
        if evidence.verdict != "no_win" or look == looks or done >= held.most_pairs:
            break
        more = min(held.pairs, held.most_pairs - done)
        best, candidate, failed = run_holdout(harness, arms, logs, more, (best, candidate))
    pair.holdout = (best, candidate)
    if failed is not None:
        arm, why = failed
        pair.failure = (best if arm == BASELINE else candidate).failure
        pair.failed_arm, pair.detail, pair.decision = arm, f"{arm} arm, holdout: {why}", None
        return pair
    if pair.decision is not None and evidence is not None:
        spent = round(best.duration_s + candidate.duration_s, 3)
        held_runs = (best.samples[name], candidate.samples[name])
        pair.decision = holdout_verdict(harness.config, pair.decision, *held_runs, spent)
    return pair


def holdout_verdict(
    config: Config, decision: Decision, best: list[float], candidate: list[float], spent: float
) -> Decision:
    """The bench's keep judged by the holdout's runs of the arms: the verdict of the last look,
    on every pair run. One function for the runs measured here and for a bench host's, whose
    runs the driver replays as it replays the rule on its bench samples: the verdict is the
    driver's."""
    evidence = holdout_evidence(config, best, candidate, config.holdout.looks, bench_gain(decision))
    return holdout_decision(decision, replace(evidence, duration_s=spent))
