"""One branch `finalize` cut, reviewed on its own: its keeps, the experiments not kept that
touched its files, and its own headline (its confirmation, when it was measured)."""

from __future__ import annotations

from ..errors import UserError
from .history import History, branch_history
from .summary import summarize

__all__ = ["branch_review"]


def branch_review(
    config,
    history: History,
    branch: str,
    comparison: str | None,
    label: str | None,
    listed: int | None = None,
) -> tuple[History, dict]:
    """The history and summary of `branch`, found among the session's groups by its tree, so
    that any prefix it was written with will do."""
    from ..morning.finalize import finalize
    from ..repo.gitrepo import open_repo

    repo = open_repo(config.repo_path)
    tip = repo.branch_tip(branch)
    if tip is None:
        raise UserError(f"no branch {branch} in {repo.path}")
    tree = repo.must("rev-parse", f"{tip}^{{tree}}")
    plan = finalize(config, dry_run=True)
    group = next(
        (g for g in plan.groups if repo.must("rev-parse", f"{g.tip}^{{tree}}") == tree), None
    )
    if group is None:
        raise UserError(
            f"branch {branch} is none of the session's finalized groups "
            "(`autoresearch finalize --dry-run` lists them)"
        )
    commits = {kept.commit for kept in group.commits}
    history = branch_history(history, branch, tip, commits, group.files)
    return history, summarize(history, comparison, label, listed)
