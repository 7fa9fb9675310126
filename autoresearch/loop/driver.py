"""The night: one driver, whatever measures it (executor.py), until a budget, a stop rule or a
signal.

lock the session -> open the worktrees -> recover a crash -> send again what a dead driver
left in flight -> get ready (the pre-flight here, the best calibrated, the noise judged)
repeat: ask the proposers for as many hypotheses as there are free slots -> check each patch
  and send it -> land each result as it comes (landing.py): replay the rule, measure a stale
  win again, the checks and the keep, the record; a keep's new best calibrated first
at the end: confirm the session's baseline against its final tip

`run` drives it on this machine (one slot, local.py), `run --cluster` on bench hosts (N slots,
cluster/dask_executor.py), `try` for one hypothesis an agent made (`try_hypothesis`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..config import Config
from ..errors import UserError
from ..journal.records import ConfirmationRecord, ExperimentRecord
from ..progress import Progress
from ..proposers import Hypothesis
from .dispatch import Night
from .executor import Executor
from .local import LocalExecutor
from .session import RunOptions, Session, StopRequested, open_session
from .stages import SessionOutcome, confirm_wanted, session_outcome

__all__ = ["confirm", "confirm_session", "run_session", "try_hypothesis"]

# How a night gets its executor: from its open session (None: this machine, local.py).
ExecutorOf = Callable[[Session], Executor]


def run_session(
    config: Config,
    options: RunOptions | None = None,
    progress: Progress | None = None,
    executor: ExecutorOf | None = None,
) -> SessionOutcome:
    """Run the session's loop until a stop condition; resumes where a previous run ended."""
    with open_session(config, options, progress) as session:
        night = Night(session, (executor or LocalExecutor)(session))
        try:
            reason = night.run()
        except StopRequested as exc:
            reason = f"interrupted by a signal: {exc}"
            session.ws.revert()
            session.paths.inflight.unlink(missing_ok=True)
        finally:
            night.cancel()
            session.proposer.close()
        session.progress.info(f"stopped: {reason}")
        confirmed = night.confirm() if confirm_wanted(session) else None
        change = confirmed.change_pct if confirmed is not None else None
        return session_outcome(session, reason, change)


def try_hypothesis(
    config: Config,
    change: Callable[[str], Hypothesis],
    options: RunOptions,
    progress: Progress,
) -> ExperimentRecord:
    """One experiment of the session, measured here, for a change an agent made (`change`
    reads it against the session's tip): the best's last calibration stands when it measured
    the tip; a keep is calibrated before it returns, so that the next try is measured against
    its own calibration."""
    with open_session(config, options, progress, proposers=False) as session:
        hypothesis = change(session.ws.tip())
        night = Night(session, LocalExecutor(session))
        stopped = night.get_ready(reuse=True) or session.stop_error
        if stopped is not None:
            raise UserError(stopped)
        flight = night.begin_flight(hypothesis)
        if flight is not None:
            night.send(flight)
        while night.flights or (night.again and not session.stop.is_set()):
            night.fill(proposing=False)
            night.land_some()
        assert night.last is not None  # every experiment ends in a record
        return night.last


def confirm(
    config: Config,
    options: RunOptions | None = None,
    progress: Progress | None = None,
    runs: int | None = None,
) -> ConfirmationRecord | None:
    """`autoresearch confirm`: open the session and confirm it here; None if a signal stopped it."""
    with open_session(config, options, progress, purpose="confirm", proposers=False) as session:
        if session.ws.tip() == session.base_commit:
            raise UserError(
                f"session '{config.session.name}' has kept nothing yet: its tip is its baseline"
            )
        return confirm_session(session, runs=runs)


def confirm_session(session: Session, **what: Any) -> ConfirmationRecord | None:
    """A confirmation measured here, in the open session's worktrees (confirm.confirmation says
    what it may be told: another tip, branch, base or runs)."""
    return Night(session, LocalExecutor(session)).confirm(**what)
