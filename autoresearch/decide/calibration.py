"""What a calibration of the best says: one frozen value, passed whole to the judge.

The loop measures it (bench/calibrate.py), journals it as a `CalibrationRecord`, and reads it
back from there on a resume, in a `try` or from a bench host; wherever it comes from, the
decision rule sees the same value.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..readers.rows import minimum_of
from ..statuses import Direction
from .design import REFUSE_FACTOR, NoiseVerdict, noise_verdict, paired_noise_pct
from .headline import session_metric
from .rule import Judge
from .stats import robust_cv_pct

if TYPE_CHECKING:
    from ..config import Config
    from ..journal.records import CalibrationRecord

__all__ = [
    "Calibration",
    "calibrated_config",
    "fallback_switch",
    "minimum_noise",
    "noise_verdict_of",
    "pair_noise_of",
]


@dataclass(frozen=True)
class Calibration:
    """The current best as the last calibration measured it."""

    commit: str  # the commit measured
    samples: dict[str, list[float]]  # its runs, by metric (both arms of the A/A pairs)
    threshold: float  # the smallest change of the primary worth claiming, in %
    noise_pct: float | None  # one run's noise of the primary metric
    run_s: float | None  # one bench run's duration
    sentinel_run_s: float | None = None  # one run of bench.sentinel_command's
    detectable_pct: float | None = None  # the change max_runs detect with 90% power
    # The A/A pairs' log ratios of the primary metric: their sum of squares about their mean
    # and its degrees of freedom, pooled into each decision's test (`compare_paired`).
    pair_ss: float | None = None
    pair_df: int = 0

    @classmethod
    def from_record(cls, record: CalibrationRecord, primary: str) -> Calibration:
        return cls(
            commit=record.commit,
            samples={k: [v for v in vs if v is not None] for k, vs in record.samples.items()},
            threshold=record.threshold_pct or 0.0,
            noise_pct=record.noise_pct.get(primary),
            run_s=run_seconds(record),
            sentinel_run_s=record.sentinel_run_s,
            detectable_pct=record.detectable_effect_pct,
            **_aa_pairs(record.samples.get(primary) or []),
        )

    def median(self, metric: str) -> float | None:
        values = self.samples.get(metric)
        return statistics.median(values) if values else None

    def verdict(self, config: Config) -> NoiseVerdict | None:
        """What its noise lets the night see (design.noise_verdict); None when the noise could
        not be measured."""
        if self.noise_pct is None:
            return None
        pair_noise = paired_noise_pct(self.pair_ss, self.pair_df)
        quieter = minimum_noise(config, self.samples)
        return noise_verdict(config, self.noise_pct, self.run_s, pair_noise, quieter)

    def judge(self, config: Config) -> Judge:
        """The decision rule for one experiment against this best."""
        prior = (self.pair_ss, self.pair_df) if self.pair_ss else None
        return Judge(config, self.threshold, self.noise_pct, self.run_s, self.sentinel_run_s, prior)

    def kept(self, samples: dict[str, list[float]]) -> Calibration:
        """A keep's own runs standing for the new best until it is calibrated afresh (the
        commit stays the one last calibrated: the new best is not, yet)."""
        return replace(self, samples=samples)


def _aa_pairs(values: Sequence[float | None]) -> dict[str, Any]:
    """The spread of the calibration's A/A pairs (run i of each arm): the first half of the
    samples are one arm's, the second half the other's, in the order they ran."""
    half = len(values) // 2
    pairs = [
        math.log(c / b)
        for b, c in zip(values[:half], values[half : 2 * half], strict=True)
        if b is not None and c is not None and b > 0 and c > 0
    ]
    if len(pairs) < 2:
        return {}
    mean = sum(pairs) / len(pairs)
    return {"pair_ss": sum((x - mean) ** 2 for x in pairs), "pair_df": len(pairs) - 1}


def minimum_noise(
    config: Config, samples: Mapping[str, Sequence[float | None]]
) -> tuple[str, float] | None:
    """The primary's least disturbed value (readers.rows.minimum_of), when the runs measured
    it: its name and its noise as the rule's design sees it (the A/A pairs' under the paired
    rule, the runs' own spread otherwise). A timing's: for a metric where higher is better
    (a throughput) the least disturbed run is the largest, and no harness reports it so."""
    if config.metric.direction != Direction.LOWER:
        return None
    name = minimum_of(config.metric.name)
    runs = samples.get(name or "", [])
    values = [v for v in runs if v is not None]
    if name is None or len(values) < 4:
        return None
    if not config.decision.paired:
        noise = robust_cv_pct(values)
        return None if noise is None else (name, noise)
    spread = _aa_pairs(runs)
    if not spread:
        return None
    # A fastest round alike in every run has no spread at all: nothing to refuse.
    return name, paired_noise_pct(spread["pair_ss"], spread["pair_df"]) or 0.0


def noise_verdict_of(
    config: Config, samples: Mapping[str, Sequence[float | None]], run_s: float | None
) -> NoiseVerdict | None:
    """design.noise_verdict of a calibration's runs (both arms, one after the other) of the
    config's primary; None when they show no noise to go on."""
    runs = samples.get(config.metric.name) or []
    noise = robust_cv_pct([v for v in runs if v is not None])
    if noise is None:
        return None
    quieter = minimum_noise(config, samples)
    return noise_verdict(config, noise, run_s, pair_noise_of(runs), quieter)


def fallback_switch(
    config: Config,
    samples: Mapping[str, Sequence[float | None]],
    run_s: float | None,
    primary: NoiseVerdict | None,
) -> tuple[str, NoiseVerdict] | None:
    """Why the night decides on `[metric] fallback` from this calibration on, and the
    fallback's verdict, when it does: the primary's runs here would refuse the night (its
    verdict, `primary`), the fallback's would not. The session decides on it from then on
    (loop/stages.adopt_calibration); the primary is still measured in every run, and reported."""
    if not config.metric.fallback or primary is None or not primary.refuse:
        return None
    fallback = config.deciding_on_fallback()
    instead = noise_verdict_of(fallback, samples, run_s)
    if instead is None or instead.refuse:
        return None
    why = (
        f"the night decides on {fallback.metric.name} ([metric] fallback): "
        f"{config.metric.name} is too noisy (noise {primary.noise_pct:.2f}% a run as the rule "
        f"sees it: {primary.detectable_pct:.1f}% detectable, over {REFUSE_FACTOR:g} times the "
        f"{primary.target_pct:g}% asked for), {fallback.metric.name} is not (noise "
        f"{instead.noise_pct:.2f}%: {instead.detectable_pct:.1f}% detectable)"
    )
    return why, instead


def calibrated_config(config: Config, record: CalibrationRecord) -> Config:
    """The config an experiment measured against this calibration is judged with: deciding on
    `[metric] fallback` when this calibration switched to it (a bench host's, before the
    driver's session did)."""
    if session_metric(config.metric, [record]) != config.metric.name:
        return config.deciding_on_fallback()
    return config


def pair_noise_of(values: Sequence[float | None]) -> float | None:
    """One run's noise as the paired rule sees it, from a calibration's runs of the primary
    (both arms, one after the other): design.paired_noise_pct of its A/A pairs."""
    spread = _aa_pairs(values)
    return paired_noise_pct(spread.get("pair_ss"), spread.get("pair_df", 0))


def run_seconds(record: CalibrationRecord) -> float | None:
    """One bench run's duration: what a decision's time budget is counted in."""
    return record.duration_s / len(record.bench_logs) if record.bench_logs else None
