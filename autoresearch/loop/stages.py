"""The session's stages around its experiments, for the one driver (dispatch.py) whatever its
executor: the pre-flight, the refusal of a bench too noisy for the effect asked for, a
calibration adopted and said, a record accounted, the stop rule, the second look and the
session's outcome. The experiment itself is lifecycle.py; what comes back, landing.py."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ..decide.calibration import Calibration, calibrated_config
from ..decide.design import NOISE_CALIBRATIONS
from ..decide.headline import baseline_calibration
from ..errors import PreflightError
from ..journal.digest import SessionDigest
from ..journal.records import CalibrationRecord, ExperimentRecord
from ..progress import format_value
from ..proposers import Hypothesis
from .preflight import run_preflight
from .retention import prune_session_logs
from .second_look import forget_request, second_look
from .session import Session, log_label, marker
from .testref import remember_tests

__all__ = [
    "MAX_BASELINE_FAILURES",
    "SessionOutcome",
    "account",
    "adopt_calibration",
    "announce_calibration",
    "confirm_wanted",
    "preflight_new_session",
    "refuse_noise",
    "restore_calibration",
    "say_best",
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
    # Where the session stands at the end, as the night folded it (what its journal says).
    standing: SessionDigest | None = None


def session_outcome(session: Session, reason: str, confirmed: float | None) -> SessionOutcome:
    """The end of a run: its logs pruned, what it did and why it stopped."""
    prune_session_logs(session)
    return SessionOutcome(
        session=session.config.session.name,
        stop_reason=reason,
        ran=session.tally.ran,
        kept=session.tally.kept,
        baseline=session.baseline,
        best=session.best_median,
        interrupted=session.stop.is_set() or session.stop_error is not None,
        confirmed_change_pct=confirmed,
        standing=session.tally.standing,
    )


def preflight_new_session(session: Session) -> str | None:
    """A new session's pre-flight (unless `session.preflight` is off), serial or on bench
    hosts: why a signal stopped it, or None."""
    if (
        session.baseline is None
        and session.config.session.preflight
        and not preflight_base(session)
    ):
        return "interrupted by a signal during the pre-flight"
    return None


def preflight_base(session: Session) -> bool:
    """Build, bench once and run the checks on the base: refuse a night they say is wasted."""
    tip = session.ws.tip()
    session.progress.info(f"pre-flight on {tip[:10]}: build, one bench run, the checks")
    log_dir = session.paths.log(log_label(session, "preflight"), "x").parent
    harness = session.harness(marker(session, "preflight"))
    try:
        result = run_preflight(session.config, session.ws.path, tip, log_dir, harness)
    finally:
        session.ws.revert()
        session.paths.inflight.unlink(missing_ok=True)
    if result.interrupted:
        return False
    if result.checks is not None and result.checks.ok:
        remember_tests(session, tip, result.checks.tests)
    for line in result.lines(session.config):
        session.progress.info(line)
    if not result.ok:
        raise PreflightError("pre-flight: " + "; ".join(result.problems))
    return True


def refuse_noise(session: Session, calibrate_again: Callable[[], bool]) -> str | None:
    """Stop before the night only when the bench cannot see several times the effect asked
    for (decide/design.noise_verdict: the one verdict `check` gives too), in a calibration
    measured once more first (NOISE_CALIBRATIONS) by `calibrate_again` (here, or on a bench
    host; False when a signal stopped it). Why a signal stopped it, or None."""
    for attempt in range(1, NOISE_CALIBRATIONS + 1):
        calibration = session.calibration
        verdict = calibration.verdict(session.config) if calibration is not None else None
        if verdict is None or not verdict.refuse:
            return None
        if attempt < NOISE_CALIBRATIONS:
            session.progress.warn(verdict.again)
            if not calibrate_again():
                return "interrupted by a signal during calibration"
            if session.stop_error is not None:
                return None  # the best's bench failed: stop_reason says so
    assert verdict is not None  # each attempt above returned unless it refused
    raise PreflightError(verdict.refusal)


def announce_calibration(
    session: Session, record: CalibrationRecord, host: str | None = None
) -> None:
    """Adopt a fresh calibration of the tip (measured here, or on bench `host`) and say what it
    found: the best, the noise and threshold, and what the night can see with them."""
    first = session.baseline is None
    moved = session.calibration is not None and session.calibration.commit != record.commit
    adopt_calibration(session, record)
    if first or record.commit == session.base_commit:  # the base measured again: the night goes on
        session.baseline = session.best_median
    label = "baseline" if first else "new best" if moved else "best (unchanged)"
    say_best(session, label, f"calibrated on {host}" if host else None)
    calibration = session.calibration
    assert calibration is not None
    for warning in record.warnings:
        session.progress.warn(f"{host}: {warning}" if host else warning)
    verdict = calibration.verdict(session.config)
    if verdict is not None and verdict.warning is None:  # what the night can see, unless warned
        session.progress.info(verdict.message)
    aa = record.aa
    if first and aa is not None and not aa.can_fail:
        session.progress.info(
            f"the A/A check cannot fail with {aa.n_per_arm} runs per arm (the smallest p "
            f"it can reach is {aa.smallest_p:.2g}); bench.calibration_runs = 10 or more "
            "lets it catch a harness that favours an arm"
        )


def say_best(session: Session, label: str, how: str | None = None) -> None:
    """The best as its calibration stands: its median, noise and threshold (and `how` it was
    had)."""
    primary, calibration = session.config.metric, session.calibration
    assert calibration is not None
    session.progress.info(
        f"{label} {primary.name} = {format_value(session.best_median, primary.unit)}, "
        f"noise {calibration.noise_pct or 0.0:.2f}%, threshold {calibration.threshold:.2f}%"
        + (f" ({how})" if how else "")
    )


def restore_calibration(session: Session) -> bool:
    """The best's last calibration, when it measured the current tip: a `try` in a new process
    need not measure the same commit again (the experiment still runs both arms side by side)."""
    last = session.calibration  # the journal's last, as the session opened
    return (
        last is not None
        and last.commit == session.ws.tip()
        and last.median(session.config.metric.name) is not None
    )


def adopt_calibration(session: Session, record: CalibrationRecord) -> None:
    """A calibration of the current best stands for it (one just measured; a journaled one for
    a `try` in a new process; on a cluster, a host's); one that found the primary too noisy
    and `[metric] fallback` not makes the session decide on the fallback from here on."""
    if (config := calibrated_config(session.config, record)) is not session.config:
        session.config = config
        # What the night is measured from: the base's calibrated median of the fallback.
        base = baseline_calibration(session.journal.digest().calibrations, session.base_commit)
        session.baseline = base["medians"].get(record.decides_on) if base else None
    session.calibration = Calibration.from_record(record, session.config.metric.name)


def account(session: Session, record: ExperimentRecord) -> None:
    """Write the record, then forget the in-flight marker: in that order, so nothing is lost."""
    span = session.journal.append(record)
    session.paths.inflight.unlink(missing_ok=True)
    session.add(record, span)
    if record.retry_of:
        forget_request(session.paths, record.retry_of)
    # What ended it: the checks' failure rather than the bench verdict that came before it.
    decided = record.decision.reason if record.decision is not None else ""
    reason = record.asi.rollback_reason or decided
    session.progress.outcome(record.status, reason, _best_text(session))


def _best_text(session: Session) -> str:
    """The best's median, and its change from the baseline as the keeps measured it: not the
    ratio of two calibrations made at different times, which drifts with the machine's load."""
    best = format_value(session.best_median, session.config.metric.unit)
    compounded = session.compounded_pct()
    return best if compounded is None else f"{best} ({compounded:+.2f}% vs baseline, kept changes)"


def second_look_hypothesis(session: Session) -> Hypothesis | None:
    """With the proposers done: an undecided hypothesis (or one `retry` asked for), again."""
    found = second_look(
        session.paths, session.attempts, session.config.budget.retries, session.journal.record
    )
    if found is None:
        return None
    hypothesis, earlier = found
    session.progress.info(
        f"second look at {earlier.id} {hypothesis.title!r} (was {earlier.status}): "
        "measuring it again against the current best"
    )
    return hypothesis


def confirm_wanted(session: Session) -> bool:
    """A confirmation at the end: asked for, not stopped by a signal, and something kept."""
    return (
        bool(session.config.decision.confirm)
        and not session.stop.is_set()
        and session.ws.tip() != session.base_commit
    )


def stop_reason(session: Session) -> str | None:
    budget, tally = session.config.budget, session.tally
    if session.stop_error:
        return session.stop_error
    if session.stop.is_set():
        return "interrupted by a signal"
    if tally.done >= budget.max_experiments:
        return (
            f"budget reached: {tally.done} experiments (max_experiments = {budget.max_experiments})"
        )
    hours = (time.monotonic() - session.started) / 3600
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
