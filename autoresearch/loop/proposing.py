"""What the proposers see of an open session: its records so far, read only when a proposer
looks, and the current best, checked out."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from ..bench.runners import LocalRunner
from ..proposers import ProposalContext
from .session import Session

__all__ = ["proposal_context"]


def proposal_context(session: Session) -> ProposalContext:
    """What the proposers see: the session so far and the current best, checked out."""
    calibration = session.calibration
    return ProposalContext(
        tried=session.tried,
        records=SessionRecords(session),
        tip=session.ws.tip(),
        worktree=session.ws.path,
        metric=session.config.metric.name,
        direction=session.config.metric.direction,
        base=session.base_commit,
        baseline=session.baseline,
        best=session.best_median,
        noise_pct=calibration.noise_pct if calibration else None,
        threshold_pct=calibration.threshold if calibration else 0.0,
        state_dir=session.paths.root,
        branch=session.ws.branch,
        stop=session.stop,
        token=session.token,
        say=session.progress.info,
        runner=LocalRunner(),
        measured=(session.ws.path, session.baseline_tree.path),
        scrub_measured=functools.partial(scrub_measurement_trees, session),
        no_keep_streak=session.tally.no_keep_streak,
    )


def scrub_measurement_trees(session: Session) -> None:
    """Both measurement trees back as the loop leaves them, with nothing of anyone else's in
    them, kept build output included: the best is built again before it is measured."""
    session.ws.scrub()
    session.baseline_tree.scrub()


class SessionRecords(Sequence):
    """The session's records as a proposer sees them, read only when it looks at them."""

    def __init__(self, session: Session):
        self._session = session

    def __len__(self) -> int:
        return len(self._session.records())

    def __getitem__(self, index):
        return self._session.records()[index]

    def __iter__(self):
        return iter(self._session.records())
