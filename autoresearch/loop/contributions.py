"""The morning's measurements: each branch `finalize` wrote against the session's base, and
each keep left out of the tip (`finalize --confirm`, `--contributions`), measured side by side
as the session's own confirmation is (confirm.py) and journaled as confirmations."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import Config
from ..decide.percent import CONTRIBUTION, interval_side
from ..journal.records import ConfirmationRecord
from ..morning.finalize import Finalized, finalize
from ..progress import Progress
from ..repo.gitrepo import open_repo
from ..repo.regroup import Kept, without
from .driver import confirm_session
from .session import RunOptions, open_session

__all__ = ["Contribution", "confirm_branches", "contributions"]


def confirm_branches(
    config: Config, done: Finalized, runs: int | None, env: dict[str, str], progress: Progress
) -> None:
    """Each written branch measured against the session's base, side by side, as the session's
    own confirmation is: its own headline, journaled as a confirmation of the branch's tip."""
    options = RunOptions(env=env)
    with open_session(config, options, progress, purpose="confirm", proposers=False) as session:
        for group in done.groups:
            progress.info(f"{group.branch}: its tree against the base")
            done.confirmations[group.branch] = confirm_session(
                session, runs=runs, tip=group.tip, branch=group.branch
            )
            if done.confirmations[group.branch] is None:
                return


@dataclass
class Contribution:
    """What one kept commit adds to the final combination: the tip without it against the tip,
    measured side by side (`record`); `why_not` when it could not be taken out alone."""

    kept: Kept
    record: ConfirmationRecord | None = None
    why_not: str | None = None

    def verdict(self, direction: str) -> str:
        """`contributes` (the tip is shown better with it), `costs` (shown worse with it),
        `dead weight` (no measurable difference either way), or why it was not measured."""
        r = self.record
        side = None if r is None else interval_side(r.ci_low_pct, r.ci_high_pct, direction)
        if side is None:
            return self.why_not or "not measured (interrupted)"
        return CONTRIBUTION[side]


def contributions(
    config: Config, runs: int | None, env: dict[str, str], progress: Progress
) -> list[Contribution]:
    """Each kept commit taken out of the session's tip and measured against it (leave one out),
    as the confirmation measures: a keep judged early may add nothing once later keeps landed,
    or cost. Journaled as confirmations naming what they `left_out` (never the headline)."""
    plan = finalize(config, dry_run=True)
    repo = open_repo(config.repo_path, config.target.git_hooks)
    found = []
    options = RunOptions(env=env)
    with open_session(config, options, progress, purpose="confirm", proposers=False) as session:
        for group in plan.groups:
            for kept in group.commits:
                commit, why = without(repo, plan.tip, [kept])
                found.append(Contribution(kept, why_not=why.partition(": ")[2] or None))
                if commit is None:
                    progress.info(f"#{kept.n} {kept.title}: {why}")
                    continue
                progress.info(f"#{kept.n} {kept.title}: the tip without it, against the tip")
                found[-1].record = confirm_session(
                    session, runs=runs, base=commit, left_out=[kept.commit]
                )
                if found[-1].record is None:
                    return found
    return sorted(found, key=lambda c: c.kept.n or 0)
