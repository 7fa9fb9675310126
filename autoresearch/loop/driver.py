"""The serial driver: one experiment at a time, resumable, until a budget, a stop rule or a signal.

lock the session -> open the worktrees -> recover a crashed experiment -> get ready (stages.py)
repeat: next hypothesis -> one experiment step (stages.py: the lifecycle, then the record)
at the end: confirm the session's baseline against its final tip

Bench hosts (cluster/) and `try` (agents/) drive the same stages and the same lifecycle; they
differ from this loop only in who supplies the hypotheses and how many are in flight.
"""

from __future__ import annotations

from ..config import Config
from ..progress import Progress
from .confirm import confirm_session
from .proposing import proposal_context
from .session import RunOptions, Session, StopRequested, open_session
from .stages import (
    SessionOutcome,
    calibrate_best,
    confirm_wanted,
    experiment_step,
    get_ready,
    refuse_noise,
    second_look_hypothesis,
    session_outcome,
    stop_reason,
)

__all__ = ["run_session"]


def run_session(
    config: Config, options: RunOptions | None = None, progress: Progress | None = None
) -> SessionOutcome:
    """Run the session's loop until a stop condition; resumes where a previous run ended."""
    with open_session(config, options, progress) as session:
        try:
            reason = _loop(session)
        except StopRequested as exc:
            reason = f"interrupted by a signal: {exc}"
            session.ws.revert()
            session.paths.inflight.unlink(missing_ok=True)
        finally:
            session.proposer.close()
        session.progress.info(f"stopped: {reason}")
        return session_outcome(session, reason, _confirm_at_end(session))


def _loop(session: Session) -> str:
    """Experiments until a stop condition; returns why it stopped."""
    reason = get_ready(session)
    if reason is None and not session.options.accept_noise:
        reason = refuse_noise(session, lambda: calibrate_best(session))
    while reason is None and (reason := stop_reason(session)) is None:
        context = proposal_context(session)
        hypothesis = session.proposer.next(context) or second_look_hypothesis(session)
        for note in context.notes:
            session.progress.warn(note)
        if hypothesis is None:
            reason = (
                "no hypotheses left: the proposers have none, and none undecided to look at again"
            )
            break
        _, reason = experiment_step(session, hypothesis)
    return reason


def _confirm_at_end(session: Session) -> float | None:
    """The honest headline: the session's baseline against its tip, when anything was kept."""
    if not confirm_wanted(session):
        return None
    record = confirm_session(session)
    return None if record is None else record.change_pct
