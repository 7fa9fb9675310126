"""Calibration: repeated runs of the current best give the noise, the threshold, and a warning
before the night starts when the bench is too noisy, or drifts, for the effects asked for."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .config import Config
from .decide import CONFIDENCE, detectable_effect_pct, runs_needed, threshold_pct
from .errors import UserError
from .experiment import now_iso
from .measure import Harness
from .records import CalibrationRecord
from .stats import compare, robust_cv_pct

__all__ = ["AA_ALPHA", "Calibration", "calibrate"]

AA_ALPHA = 0.01  # two halves of identical runs differing at this level means the harness drifts


@dataclass(frozen=True)
class Calibration:
    record: CalibrationRecord
    threshold: float
    samples: dict[str, list[float]]


def calibrate(
    config: Config,
    harness: Harness,
    *,
    cwd: Path,
    commit: str,
    log_for: Callable[[int], Path],
    on_run: Callable[[int, int], None] | None = None,
) -> Calibration | None:
    """Run the bench `calibration_runs` times in `cwd`; None when a signal stopped it."""
    m = harness.repeat(cwd, log_for, config.bench.calibration_runs, on_run)
    if m.failure == "interrupted":
        return None
    if m.failure:
        raise UserError(f"the baseline bench on {commit[:10]} failed: {m.detail}")
    primary = config.metric.name
    samples = m.samples[primary]
    noise = {name: robust_cv_pct(values) for name, values in m.samples.items()}
    threshold = threshold_pct(config, samples)
    warnings = []
    aa = _aa_check(samples)
    if aa is not None and not aa["ok"]:
        warnings.append(
            f"A/A check failed: two interleaved halves of identical runs differ by "
            f"{aa['shift_pct']:+.2f}% (p={aa['p_value']:.2g}); the bench drifts (warm-up, "
            "caches, thermal, other load): add a warm-up run to the bench or quiet the machine"
        )
    detectable = needed = None
    if noise[primary]:
        detectable = detectable_effect_pct(config, noise[primary])
        needed = runs_needed(config, noise[primary], config.decision.target_effect_pct)
        if detectable > config.decision.target_effect_pct:
            warnings.append(
                f"the bench is too noisy for the effect asked for: noise {noise[primary]:.2f}% "
                f"means {config.decision.max_runs} runs per arm detect {detectable:.1f}% with "
                f"90% power, more than decision.target_effect_pct = "
                f"{config.decision.target_effect_pct:g}%; raise decision.max_runs to {needed}, "
                "or make the bench quieter (longer runs, fewer other jobs)"
            )
    record = CalibrationRecord(
        session=config.session.name,
        at=now_iso(),
        commit=commit,
        samples=m.samples,
        medians={name: statistics.median(values) for name, values in m.samples.items()},
        noise_pct=noise,
        threshold_pct=threshold,
        bench_logs=m.logs,
        duration_s=round(m.duration_s, 3),
        aa=aa,
        detectable_effect_pct=detectable,
        runs_needed_for_target=needed,
        warnings=warnings,
    )
    return Calibration(record=record, threshold=threshold, samples=m.samples)


def _aa_check(samples: list[float]) -> dict | None:
    """Compare alternate runs of the same code: the harness must not find a difference."""
    first, second = samples[0::2], samples[1::2]
    comparison = compare(first, second, CONFIDENCE)
    if comparison is None:
        return None
    p_value = min(1.0, 2 * min(comparison.p_lower, comparison.p_higher))
    return {
        "n_per_half": len(second),
        "shift_pct": comparison.change_pct,
        "ci_low_pct": comparison.ci_low_pct,
        "ci_high_pct": comparison.ci_high_pct,
        "p_value": p_value,
        "ok": p_value >= AA_ALPHA,
    }
