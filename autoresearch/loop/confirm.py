"""Confirmation: the session's original baseline against its final tip, interleaved, many runs.

Per-keep changes multiplied together are biased upward (each keep was chosen because it looked
good), so the headline of a session is this one direct comparison, with its interval. It is
read as the decisions read their runs: the within-pair log ratios (their geometric mean and t
interval), so that the title, the tables, the body, `status` and `report` quote one estimator.
"""

from __future__ import annotations

from dataclasses import replace

from ..bench.measure import PairMeasurement, measure_pair
from ..config import Config
from ..decide.rule import CONFIDENCE
from ..decide.stats import compare, compare_paired
from ..errors import UserError
from ..journal.confirmed import ConfirmedHoldout, ConfirmedMetric
from ..journal.draft import now_iso
from ..journal.records import ConfirmationRecord
from ..progress import Progress, format_value
from ..statuses import Direction, Status
from .session import (
    RunOptions,
    Session,
    StopRequested,
    log_label,
    marker,
    open_session,
    prepare_best,
)

__all__ = ["announce", "confirm", "confirm_session", "confirmation_record", "with_holdout"]


def confirm(
    config: Config,
    options: RunOptions | None = None,
    progress: Progress | None = None,
    runs: int | None = None,
) -> ConfirmationRecord | None:
    """`autoresearch confirm`: open the session and confirm it; None if a signal stopped it."""
    with open_session(config, options, progress, purpose="confirm", proposers=False) as session:
        if session.ws.tip() == session.base_commit:
            raise UserError(
                f"session '{config.session.name}' has kept nothing yet: its tip is its baseline"
            )
        return confirm_session(session, runs)


def confirm_session(
    session: Session,
    runs: int | None = None,
    tip: str | None = None,
    branch: str | None = None,
    base: str | None = None,
    left_out: list[str] | None = None,
) -> ConfirmationRecord | None:
    """Run the base commit against the tip, alternating, and journal the cumulative change.
    `tip`: another commit than the session's, the tip of `branch` (one `finalize` cut), its
    tree measured in the session worktree. `base`: another commit than the session's base, the
    tip without the kept commits `left_out` (what they contribute to it)."""
    config, progress = session.config, session.progress
    runs = runs or config.decision.confirm_runs
    base, tip = base or session.base_commit, tip or session.ws.tip()
    label = log_label(session, "confirmation")
    progress.info(
        f"confirming: baseline {base[:10]} against tip {tip[:10]}, {runs} runs each, alternating"
    )
    try:
        prepare_best(session, base, label)
    except StopRequested:
        session.paths.inflight.unlink(missing_ok=True)
        return None
    pair = _measure(session, tip, runs, label)
    if pair.failure == Status.INTERRUPTED:
        return None
    if pair.failure:
        raise UserError(f"confirmation failed: {pair.detail}")
    record = confirmation_record(
        config,
        base,
        tip,
        runs,
        (pair.baseline.samples, pair.candidate.samples),
        pair.logs,
        branch=branch,
        left_out=left_out,
    )
    if pair.holdout is not None:
        held = (pair.holdout[0].samples, pair.holdout[1].samples)
        spent = pair.holdout[0].duration_s + pair.holdout[1].duration_s
        record = with_holdout(config, record, held, spent)
    session.journal.append(record)
    if not left_out:  # a contribution is said by its caller, as one
        announce(config, record, progress)
    return record


def _measure(session: Session, tip: str, runs: int, label: str) -> PairMeasurement:
    """The best's tree (at the base) against the worktree at `tip`, `runs` pairs."""
    session.ws.revert()
    if tip != session.ws.tip():
        session.ws.show(tip)
    harness = session.harness(marker(session, "confirmation"))
    try:
        pair = measure_pair(
            harness,
            (session.baseline_tree.path, session.ws.path),
            lambda name: session.paths.log(label, name),
            pairs=runs,
            holdout_pairs=runs if session.config.holdout.command else 0,
            on_run=lambda arm, i: (
                session.progress.info(f"confirmation pair {i}/{runs}")
                if arm == "baseline"
                else None
            ),
        )
        if pair.failure is None and tip == session.ws.tip():
            session.ws.mark_built()  # the tip's own build: the reverts after it keep it
    finally:
        session.paths.inflight.unlink(missing_ok=True)
        session.ws.revert()
    return pair


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


def _comparison_fields(c) -> dict:
    return {
        "baseline_median": c.baseline_median,
        "tip_median": c.candidate_median,
        "change_pct": c.change_pct,
        "ci_low_pct": c.ci_low_pct,
        "ci_high_pct": c.ci_high_pct,
        "p_value": min(1.0, 2 * min(c.p_lower, c.p_higher)),
        "estimator": "paired" if c.paired else "two-sample",
    }
