"""The driver. One experiment at a time, resumable, until a budget, a stop rule or a signal.

lock the session -> open the worktrees -> recover a crashed experiment -> calibrate the best
repeat: next hypothesis -> run the experiment (experiment.py) -> append the record
        -> after a keep, calibrate the new best
at the end: confirm the session's baseline against its final tip
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..config import Config
from ..decide.calibration import Calibration
from ..decide.stats import change_pct
from ..errors import PreflightError
from ..journal.records import CalibrationRecord, ExperimentRecord
from ..progress import Progress, format_value
from ..proposers import Hypothesis
from ..statuses import Status
from .calibrate import calibrate
from .confirm import confirm_session
from .experiment import run_experiment
from .preflight import run_preflight
from .retention import prune_session_logs
from .second_look import forget_request, second_look
from .session import (
    RunOptions,
    Session,
    StopRequested,
    log_label,
    marker,
    may_run_again,
    open_session,
    prepare_best,
    proposal_context,
)

__all__ = [
    "SessionOutcome",
    "account",
    "adopt_calibration",
    "calibrate_best",
    "confirm_wanted",
    "preflight_base",
    "restore_calibration",
    "run_session",
    "second_look_hypothesis",
    "session_outcome",
    "stop_reason",
]

MAX_BASELINE_FAILURES = 3  # in a row: no candidate can be judged against a best that fails


@dataclass(frozen=True)
class SessionOutcome:
    session: str
    stop_reason: str
    ran: int
    kept: int
    baseline: float | None
    best: float | None
    interrupted: bool = False
    confirmed_change_pct: float | None = None


def run_session(
    config: Config, options: RunOptions | None = None, progress: Progress | None = None
) -> SessionOutcome:
    """Run the session's loop until a stop condition; resumes where a previous run ended."""
    with open_session(config, options, progress) as run:
        try:
            reason = _loop(run)
        except StopRequested as exc:
            reason = f"interrupted by a signal: {exc}"
            run.ws.revert()
            run.paths.inflight.unlink(missing_ok=True)
        finally:
            run.proposer.close()
        run.progress.info(f"stopped: {reason}")
        return session_outcome(run, reason, _confirm_at_end(run))


def session_outcome(run: Session, reason: str, confirmed: float | None) -> SessionOutcome:
    """The end of a run: its logs pruned, what it did and why it stopped."""
    prune_session_logs(run)
    return SessionOutcome(
        session=run.config.session.name,
        stop_reason=reason,
        ran=run.tally.ran,
        kept=run.tally.kept,
        baseline=run.baseline,
        best=run.best_median,
        interrupted=run.stop.is_set() or run.stop_error is not None,
        confirmed_change_pct=confirmed,
    )


def _loop(run: Session) -> str:
    """Experiments until a stop condition; returns why it stopped."""
    if run.baseline is None and run.config.session.preflight and not preflight_base(run):
        return "interrupted by a signal during the pre-flight"
    reason = None if calibrate_best(run) else "interrupted by a signal during calibration"
    if reason is None and not run.options.accept_noise:
        _refuse_noise(run)
    while reason is None and (reason := stop_reason(run)) is None:
        context = proposal_context(run)
        hypothesis = run.proposer.next(context) or second_look_hypothesis(run)
        for note in context.notes:
            run.progress.warn(note)
        if hypothesis is None:
            reason = (
                "no hypotheses left: the proposers have none, and none undecided to look at again"
            )
            break
        record = run_experiment(run, hypothesis)
        account(run, record)
        # The kept commit is the new best: measure it afresh for the noise and threshold.
        if record.status == Status.KEEP and not run.stop.is_set() and not calibrate_best(run):
            reason = "interrupted by a signal during calibration"
    return reason


def preflight_base(run: Session) -> bool:
    """Build, bench once and run the checks on the base: refuse a night they say is wasted."""
    tip = run.ws.tip()
    run.progress.info(f"pre-flight on {tip[:10]}: build, one bench run, the checks")
    log_dir = run.paths.log(log_label(run, "preflight"), "x").parent
    harness = run.harness("preflight", marker(run, "preflight"))
    try:
        result = run_preflight(run.config, run.ws.path, tip, log_dir, harness)
    finally:
        run.ws.revert()
        run.paths.inflight.unlink(missing_ok=True)
    if result.interrupted:
        return False
    for line in result.lines(run.config):
        run.progress.info(line)
    if not result.ok:
        raise PreflightError("pre-flight: " + "; ".join(result.problems))
    return True


def _refuse_noise(run: Session) -> None:
    """Stop before the night when the calibration says the effect asked for cannot be seen."""
    detectable = run.calibration.detectable_pct if run.calibration else None
    target = run.config.decision.target_effect_pct
    if detectable is not None and detectable > target:
        raise PreflightError(
            f"the bench is too noisy for the effect asked for: it detects {detectable:.1f}%, "
            f"decision.target_effect_pct is {target:g}% (see the warning above); quiet the "
            "machine or raise decision.max_runs, or run with --accept-noise to spend the night "
            "anyway"
        )


def calibrate_best(run: Session) -> bool:
    """Measure the current best repeatedly: its samples and noise set the threshold."""
    tip = run.ws.tip()
    label = log_label(run, "calibration")
    pairs = run.config.bench.calibration_runs // 2
    run.progress.info(f"calibrating on {tip[:10]}: {pairs} runs in each arm, alternating")
    prepare_best(run, tip, label)
    # The worktree is clean at the tip here: recovery and keep both end with a revert.
    try:
        record = calibrate(
            run.config,
            run.harness("calibration", marker(run, "calibration")),
            arms=(run.baseline_tree.path, run.ws.path),
            commit=tip,
            logs=lambda name: run.paths.log(label, name),
            on_run=lambda arm, i: (
                run.progress.info(f"calibration pair {i}/{pairs}") if arm == "baseline" else None
            ),
        )
    finally:
        run.ws.revert()
        run.paths.inflight.unlink(missing_ok=True)
    if record is None:
        return False
    run.journal.append(record)
    _announce_calibration(run, record)
    return True


def _announce_calibration(run: Session, record: CalibrationRecord) -> None:
    """Adopt a fresh calibration and say what it found."""
    first = run.baseline is None
    moved = run.calibration is not None and run.calibration.commit != record.commit
    adopt_calibration(run, record)
    if first or record.commit == run.base_commit:  # the base measured again: the night goes on
        run.baseline = run.best_median
    primary = run.config.metric
    calibration = run.calibration
    assert calibration is not None
    noise = calibration.noise_pct or 0.0
    run.progress.info(
        f"{'baseline' if first else 'new best' if moved else 'best (unchanged)'} {primary.name} = "
        f"{format_value(run.best_median, primary.unit)}, noise {noise:.2f}%, "
        f"threshold {calibration.threshold:.2f}%"
    )
    for warning in record.warnings:
        run.progress.warn(warning)
    aa = record.aa or {}
    if first and aa and not aa.get("can_fail", True):
        run.progress.info(
            f"the A/A check cannot fail with {aa['n_per_arm']} runs per arm (the smallest p "
            f"it can reach is {aa['smallest_p']:.2g}); bench.calibration_runs = 10 or more "
            "lets it catch a harness that favours an arm"
        )


def restore_calibration(run: Session) -> bool:
    """The best's last calibration, when it measured the current tip: a `try` in a new process
    need not measure the same commit again (the experiment still runs both arms side by side)."""
    last = run.calibration  # the journal's last, as the session opened
    return (
        last is not None
        and last.commit == run.ws.tip()
        and last.median(run.config.metric.name) is not None
    )


def adopt_calibration(run: Session, record: CalibrationRecord) -> None:
    """A calibration of the current best stands for it (one just measured; a journaled one for
    a `try` in a new process; on a cluster, a host's)."""
    run.calibration = Calibration.from_record(record, run.config.metric.name)


def account(run: Session, record: ExperimentRecord) -> None:
    """Write the record, then forget the in-flight marker: in that order, so nothing is lost."""
    run.journal.append(record)
    run.paths.inflight.unlink(missing_ok=True)
    attempts = run.attempts.setdefault(record.patch_sha256, [])
    attempts.append(record)
    if not may_run_again(attempts, run.config.budget.retries):
        run.tried.add(record.patch_sha256)
    if record.retry_of:
        forget_request(run.paths, record.retry_of)
    run.tally.add(record)
    # What ended it: the checks' failure rather than the bench verdict that came before it.
    reason = record.asi.rollback_reason or (record.decision or {}).get("reason") or ""
    run.progress.outcome(record.status, reason, _best_text(run))


def _best_text(run: Session) -> str:
    unit = run.config.metric.unit
    best, base = run.best_median, run.baseline
    if best is None or not base:
        return format_value(best, unit)
    return f"{format_value(best, unit)} ({change_pct(base, best):+.2f}% vs baseline)"


def second_look_hypothesis(run: Session) -> Hypothesis | None:
    """With the proposers done: an undecided hypothesis (or one `retry` asked for), again."""
    found = second_look(run.paths, run.attempts, run.config.budget.retries)
    if found is None:
        return None
    hypothesis, earlier = found
    run.progress.info(
        f"second look at {earlier.id} {earlier.title!r} (was {earlier.status}): "
        "measuring it again against the current best"
    )
    return hypothesis


def _confirm_at_end(run: Session) -> float | None:
    """The honest headline: the session's baseline against its tip, when anything was kept."""
    if not confirm_wanted(run):
        return None
    record = confirm_session(run)
    return None if record is None else record.change_pct


def confirm_wanted(run: Session) -> bool:
    """A confirmation at the end: asked for, not stopped by a signal, and something kept."""
    return (
        bool(run.config.decision.confirm)
        and not run.stop.is_set()
        and run.ws.tip() != run.base_commit
    )


def stop_reason(run: Session) -> str | None:
    budget, tally = run.config.budget, run.tally
    if run.stop_error:
        return run.stop_error
    if run.stop.is_set():
        return "interrupted by a signal"
    if tally.done >= budget.max_experiments:
        return (
            f"budget reached: {tally.done} experiments (max_experiments = {budget.max_experiments})"
        )
    hours = (time.monotonic() - run.started) / 3600
    if hours >= budget.max_hours:
        return f"budget reached: {hours:.2f} h (max_hours = {budget.max_hours})"
    if budget.stop_after_no_keep and tally.no_keep_streak >= budget.stop_after_no_keep:
        return f"{tally.no_keep_streak} consecutive experiments without a keep"
    if tally.baseline_failures >= MAX_BASELINE_FAILURES:
        return (
            f"the baseline (the current best, unmodified) failed in {tally.baseline_failures} "
            "experiments in a row: the bench or the machine is broken; see the last records' "
            "logs, fix it, and run again to resume"
        )
    return None
