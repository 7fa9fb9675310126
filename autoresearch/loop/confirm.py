"""Confirmation: the session's original baseline against its final tip, interleaved, many runs.

Per-keep changes multiplied together are biased upward (each keep was chosen because it looked
good), so the headline of a session is this one direct comparison, with its interval. It is
read as the decisions read their runs: the within-pair log ratios (their geometric mean and t
interval), so that the title, the tables, the body, `status` and `report` quote one estimator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..bench.jobs import CONFIRM, JobResult
from ..config import Config
from ..decide.rule import CONFIDENCE
from ..decide.stats import Comparison, compare, compare_paired
from ..errors import UserError
from ..journal.confirmed import ConfirmedHoldout, ConfirmedMetric
from ..journal.draft import now_iso
from ..journal.records import ConfirmationRecord
from ..progress import Progress, format_value
from ..statuses import Direction, Status
from .executor import Flight, Lost
from .session import Session

__all__ = ["announce", "confirmation", "confirmation_record", "with_holdout"]

# Sends a flight with nothing else out and waits for what comes back (night.Night.await_flight);
# None when a signal stopped the wait.
Await = Callable[[Flight], JobResult | Lost | None]


def confirmation(
    session: Session,
    wait: Await,
    runs: int | None = None,
    tip: str | None = None,
    branch: str | None = None,
    base: str | None = None,
    left_out: list[str] | None = None,
) -> ConfirmationRecord | None:
    """The base commit against the tip, alternating, measured by the night's executor
    (through `wait`), and the cumulative change journaled. `tip`: another commit than the
    session's, the tip of `branch` (one `finalize` cut). `base`: another commit than the
    session's base, the tip without the kept commits `left_out` (what they contribute to it).
    None when a signal stopped it or the slot measuring it was lost."""
    config, progress = session.config, session.progress
    runs = runs or config.decision.confirm_runs
    base, tip = base or session.base_commit, tip or session.ws.tip()
    progress.info(
        f"confirming: baseline {base[:10]} against tip {tip[:10]}, {runs} runs each, alternating"
    )
    result = wait(Flight(CONFIRM, parent=base, tip=tip, runs=runs))
    if isinstance(result, Lost):  # the headline waits for `autoresearch confirm`
        progress.warn(
            f"confirmation lost with its bench host ({result.why}); run `autoresearch confirm` "
            "for the headline"
        )
        return None
    if result is None or result.failure == Status.INTERRUPTED:
        return None
    if result.failure is not None:
        where = f" on {result.name}" if result.name else ""
        raise UserError(f"confirmation failed{where}: {result.detail}")
    record = confirmation_record(
        config,
        base,
        tip,
        runs,
        result.samples,
        result.log_paths,
        host=result.name,
        branch=branch,
        left_out=left_out,
    )
    if result.holdout is not None:
        held = (result.holdout[0].samples, result.holdout[1].samples)
        record = with_holdout(config, record, held, result.holdout_seconds)
    session.journal.append(record)
    if not left_out:  # a contribution is said by its caller, as one
        announce(config, record, progress)
    return record


def confirmation_record(
    config: Config,
    base: str,
    tip: str,
    runs: int,
    samples: tuple[dict[str, list[float]], dict[str, list[float]]],
    bench_logs: list[str],
    host: str | None = None,
    branch: str | None = None,
    left_out: list[str] | None = None,
) -> ConfirmationRecord:
    """The record of `runs` pairs of the base (samples[0]) against the tip (samples[1])."""
    baseline, tip_samples = samples
    # Every metric the bench printed, not only the configured ones: the PR's per-scale rows
    # come from here too, so that one measurement stands behind the whole headline.
    specs = {spec.name: spec for spec in config.all_metrics()}
    names = list(dict.fromkeys([*specs, *baseline, *tip_samples]))
    metrics = {}
    for name in names:
        spec = specs.get(name)
        b, t = baseline.get(name, []), tip_samples.get(name, [])
        # Paired when every pair printed the metric; else (a metric some runs left out) as two
        # samples, said in the record.
        comparison = compare_paired(b, t, CONFIDENCE) or compare(b, t, CONFIDENCE)
        metrics[name] = ConfirmedMetric(
            direction=spec.direction if spec else Direction.LOWER,
            unit=spec.unit if spec else "",
            baseline_samples=b,
            tip_samples=t,
            **({} if comparison is None else _comparison_fields(comparison)),
        )
    primary = metrics[config.metric.name]
    return ConfirmationRecord(
        session=config.session.name,
        at=now_iso(),
        base_commit=base,
        tip_commit=tip,
        runs_per_arm=runs,
        metric=config.metric.name,
        change_pct=primary.change_pct,
        ci_low_pct=primary.ci_low_pct,
        ci_high_pct=primary.ci_high_pct,
        p_value=primary.p_value,
        metrics=metrics,
        bench_logs=bench_logs,
        host=host,
        branch=branch,
        left_out=left_out,
    )


def with_holdout(
    config: Config,
    record: ConfirmationRecord,
    samples: tuple[dict[str, list[float]], dict[str, list[float]]],
    spent: float,
) -> ConfirmationRecord:
    """The confirmation with the holdout's base against tip beside it (measured here or on a
    bench host), `spent` seconds of runs."""
    compared = holdout_comparison(config, samples)
    return replace(record, holdout=replace(compared, duration_s=round(spent, 3)))


def holdout_comparison(
    config: Config, samples: tuple[dict[str, list[float]], dict[str, list[float]]]
) -> ConfirmedHoldout:
    """The holdout's base against tip, as a confirmation's metric is."""
    name = config.holdout_metric.name
    b, t = samples[0].get(name, []), samples[1].get(name, [])
    comparison = compare_paired(b, t, CONFIDENCE) or compare(b, t, CONFIDENCE)
    compared = {} if comparison is None else _comparison_fields(comparison)
    return ConfirmedHoldout(metric=name, baseline_samples=b, tip_samples=t, **compared)


def announce(config: Config, record: ConfirmationRecord, progress: Progress) -> None:
    if record.change_pct is None:
        return
    primary = record.metrics[config.metric.name]
    unit = config.metric.unit
    progress.info(
        f"confirmed: {config.metric.name} {format_value(primary.baseline_median, unit)} "
        f"-> {format_value(primary.tip_median, unit)}, {record.change_pct:+.2f}% "
        f"(95% CI [{record.ci_low_pct:+.2f}%, {record.ci_high_pct:+.2f}%])"
        + (f" on {record.host}" if record.host else "")
    )
    held = record.holdout
    if held is not None and held.change_pct is not None:
        progress.info(
            f"confirmed on the hidden holdout: {held.metric} {held.change_pct:+.2f}% "
            f"(95% CI [{held.ci_low_pct:+.2f}%, {held.ci_high_pct:+.2f}%])"
        )


def _comparison_fields(c: Comparison) -> dict[str, Any]:
    return {
        "baseline_median": c.baseline_median,
        "tip_median": c.candidate_median,
        "change_pct": c.change_pct,
        "ci_low_pct": c.ci_low_pct,
        "ci_high_pct": c.ci_high_pct,
        "p_value": min(1.0, 2 * min(c.p_lower, c.p_higher)),
        "estimator": "paired" if c.paired else "two-sample",
    }
