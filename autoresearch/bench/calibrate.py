"""Calibration: repeated runs of the current best give the noise, the threshold, and a warning
before the night starts when the bench is too noisy, or biased, for the effects asked for.

The runs alternate between the two arms an experiment uses (the baseline worktree and the
candidate worktree), both at the current best: an A/A test. Identical code must measure alike
in both; if it does not, the harness itself favours an arm and every decision would inherit it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from pathlib import Path

from ..config import Config
from ..decide.calibration import fallback_switch, noise_verdict_of
from ..decide.design import NoiseVerdict, runs_needed, threshold_pct
from ..decide.rule import CONFIDENCE
from ..decide.stats import compare, robust_cv_pct
from ..errors import UserError
from ..journal.draft import now_iso
from ..journal.evidence import AACheck
from ..journal.records import CalibrationRecord
from ..statuses import Status
from .fingerprint import toolchains
from .measure import Harness, Measurement, PairMeasurement, measure_pair

__all__ = ["AA_ALPHA", "CalibrationFailed", "calibrate"]

AA_ALPHA = 0.01  # two halves of identical runs differing at this level means the harness drifts


class CalibrationFailed(UserError):
    """A run of the best failed while it was calibrated: a baseline failure (the loop measures
    it again), not a mistake in the config."""


def calibrate(
    config: Config,
    harness: Harness,
    *,
    arms: tuple[Path, Path],
    commit: str,
    logs: Callable[[str], Path],
    build: bool = True,
    on_run: Callable[[str, int], None] | None = None,
) -> CalibrationRecord | None:
    """`calibration_runs` runs alternating between the two worktrees, both at `commit` (the
    baseline's built; the candidate's built here unless `build` is False); None when a signal
    stopped them. A failure raises: no experiment can be judged against a best that does not
    build or run."""
    pair = measure_pair(
        harness, arms, logs, build=build, pairs=config.bench.calibration_runs // 2, on_run=on_run
    )
    if pair.failure == Status.INTERRUPTED:
        return None
    if pair.failure:
        raise CalibrationFailed(
            f"the baseline bench on {commit[:10]} failed in calibration: {pair.detail}"
        )
    timed = _time_sentinel_command(harness, arms, commit, logs)
    if timed is not None and timed.failure == Status.INTERRUPTED:
        return None
    bench = config.bench
    commands = (bench.build, bench.command, bench.sentinel_command)
    return _record(config, commit, pair, timed, toolchains(arms[0], harness.env, commands))


def _record(
    config: Config,
    commit: str,
    pair: PairMeasurement,
    timed: Measurement | None,
    tools: dict[str, str],
) -> CalibrationRecord:
    """The calibration's record: the samples of both arms as one, the noise, the checks; of
    `[metric] fallback` when these runs find the primary too noisy and it not."""
    samples = {
        name: values + pair.candidate.samples.get(name, [])
        for name, values in pair.baseline.samples.items()
    }
    duration_s = pair.baseline.duration_s + pair.candidate.duration_s
    runs = len(pair.baseline.runs) + len(pair.candidate.runs)
    run_s = duration_s / runs if runs else None
    verdict = noise_verdict_of(config, samples, run_s)
    switch = fallback_switch(config, samples, run_s, verdict)
    if switch is not None:
        config = config.deciding_on_fallback()
        verdict = switch[1]
    primary = config.metric.name
    noise = {name: robust_cv_pct(values) for name, values in samples.items()}
    aa = _aa_check(pair.baseline.samples[primary], pair.candidate.samples[primary])
    if not noise[primary]:  # identical runs: nothing to warn of, nothing to detect
        verdict = None
    target = config.decision.target_effect_pct
    needed = runs_needed(config, verdict.noise_pct, target) if verdict is not None else None
    return CalibrationRecord(
        session=config.session.name,
        at=now_iso(),
        commit=commit,
        samples=samples,
        medians={name: statistics.median(v) for name, v in samples.items()},
        noise_pct=noise,
        threshold_pct=threshold_pct(config, noise[primary]),
        bench_logs=pair.logs,
        duration_s=round(duration_s, 3),
        aa=aa,
        detectable_effect_pct=verdict.detectable_pct if verdict else None,
        runs_needed_for_target=needed,
        warnings=[*([switch[0]] if switch else []), *_warnings(aa, verdict)],
        sentinel_run_s=round(timed.duration_s / len(timed.runs), 3) if timed else None,
        toolchains=tools,
        decides_on=primary if switch else None,
    )


def _warnings(aa: AACheck | None, verdict: NoiseVerdict | None) -> list[str]:
    """What the night should hear before it starts: a biased harness, a bench too noisy."""
    warnings = []
    if aa is not None and not aa.ok:
        shift = f"{aa.shift_pct:+.2f}%" if aa.shift_pct is not None else "an unknown amount"
        warnings.append(
            f"A/A check failed: the same code measures {shift} apart in the "
            f"two arms (p={aa.p_value:.2g}); the harness favours an arm (warm-up order, "
            "caches, a build difference, other load): fix the bench before trusting decisions"
        )
    if verdict is not None and verdict.warning:
        warnings.append(verdict.warning)
    return warnings


def _time_sentinel_command(
    harness: Harness, arms: tuple[Path, Path], commit: str, logs: Callable[[str], Path]
) -> Measurement | None:
    """One run of `bench.sentinel_command` per arm: it must print every sentinel, and its
    duration sets how many of its pairs a decision's sentinel extension may take. None
    without one."""
    if not harness.config.bench.sentinel_command:
        return None
    runs = Measurement()
    for arm, cwd in zip(("sentinels-baseline", "sentinels-candidate"), arms, strict=True):
        if not harness.bench_once(cwd, logs(f"{arm}-1"), runs, check=False, sentinels_only=True):
            if runs.failure == Status.INTERRUPTED:
                break
            raise UserError(
                f"bench.sentinel_command on {commit[:10]} failed: {runs.detail} (it runs only "
                "the sentinels, after a win is decided: fix it or remove it)"
            )
    return runs


def _aa_check(first: list[float], second: list[float]) -> AACheck | None:
    """The same code in both arms: the harness must not find a difference."""
    comparison = compare(first, second, CONFIDENCE)
    if comparison is None:
        return None
    p_value = min(1.0, 2 * min(comparison.p_lower, comparison.p_higher))
    # The smallest two-sided p a rank test can reach with these counts: all of one arm below
    # all of the other. At or above the alpha the check cannot fail, whatever the harness does.
    smallest_p = 2 / math.comb(len(first) + len(second), len(first))
    return AACheck(
        ok=p_value >= AA_ALPHA,
        p_value=p_value,
        shift_pct=comparison.change_pct,
        ci_low_pct=comparison.ci_low_pct,
        ci_high_pct=comparison.ci_high_pct,
        can_fail=smallest_p < AA_ALPHA,
        smallest_p=smallest_p,
        n_per_arm=len(second),
    )
