"""`autoresearch finalize`: the session's keeps as independent branches from its base.

Reads the session's kept experiments from the journal, groups the commits of the session
branch that share files (repo/finalize.py), writes one local branch per group, and checks that
the branches together equal the session's tip. Nothing is pushed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config import Config
from ..errors import UserError
from ..journal.records import ConfirmationRecord
from ..journal.store import Journal
from ..progress import Progress
from ..repo.finalize import (
    Group,
    branch_name,
    build_branch,
    group_commits,
    kept_commits,
    union_tree,
)
from ..repo.gitrepo import open_repo
from ..statuses import Status

__all__ = ["Finalized", "confirm_branches", "finalize", "stands_alone"]


@dataclass
class Finalized:
    base: str
    tip: str
    groups: list[Group] = field(default_factory=list)
    union_equals_tip: bool = False
    differing: list[str] = field(default_factory=list)  # paths where the union and tip differ
    written: bool = False
    # Each branch measured against the base (`--confirm`), by branch name; None: interrupted.
    confirmations: dict[str, ConfirmationRecord | None] = field(default_factory=dict)


def finalize(
    config: Config, prefix: str | None = None, dry_run: bool = False, force: bool = False
) -> Finalized:
    """Group the session's keeps, write a branch per group (unless `dry_run`), check the union.
    An existing branch of the same name is refused unless `force` (or it already holds the
    same commits: finalizing twice is a no-op)."""
    session = config.session.name
    journal = Journal(config.journal_path, session)
    digest = journal.digest()
    if not digest.sessions:
        raise UserError(f"{config.journal_path}: no session '{session}' in the journal")
    base = digest.sessions[0]["base_commit"]
    repo = open_repo(config.repo_path, config.target.git_hooks)
    tip = repo.branch_tip(config.branch)
    if tip is None:
        raise UserError(f"session '{session}': its branch {config.branch} does not exist")
    if tip == base:
        raise UserError(f"session '{session}' kept nothing: its branch is at its base")
    records = {}
    for attempt in digest.attempts or []:
        if attempt.status == Status.KEEP:
            record = journal.record(attempt)
            if record is not None and record.kept_commit:
                records[record.kept_commit] = {
                    "n": record.n,
                    "title": record.title,
                    "change_pct": record.evidence().change_pct,
                    "mechanism": record.asi.mechanism if record.asi else None,
                }
    result = Finalized(base=base, tip=tip)
    result.groups = group_commits(kept_commits(repo, base, tip, records))
    prefix = prefix if prefix is not None else f"{config.branch}-"
    for number, group in enumerate(result.groups, 1):
        group.branch = branch_name(prefix, number, group.commits[0].title)
        group.tip = build_branch(repo, base, group)
    union = union_tree(repo, base, result.groups)
    differing = repo.must("diff-tree", "-r", "--name-only", "-z", union, f"{tip}^{{tree}}")
    result.differing = [p for p in differing.split("\0") if p]
    result.union_equals_tip = not result.differing
    if dry_run:
        return result
    if result.differing:
        raise UserError(
            "the branches together would differ from the session's tip in "
            + ", ".join(result.differing[:5])
            + ("" if len(result.differing) <= 5 else f" and {len(result.differing) - 5} more")
            + ": nothing written (--dry-run shows the groups)"
        )
    _refuse_existing(repo, result.groups, force)
    for group in result.groups:
        repo.must("update-ref", f"refs/heads/{group.branch}", group.tip)
    result.written = True
    return result


def confirm_branches(
    config: Config, done: Finalized, runs: int | None, env: dict[str, str], progress: Progress
) -> None:
    """Each written branch measured against the session's base, side by side, as the session's
    own confirmation is: its own headline, journaled as a confirmation of the branch's tip."""
    from .confirm import confirm_session
    from .session import RunOptions, open_session

    options = RunOptions(env=env)
    with open_session(config, options, progress, purpose="confirm", proposers=False) as session:
        for group in done.groups:
            progress.info(f"{group.branch}: its tree against the base")
            done.confirmations[group.branch] = confirm_session(
                session, runs, tip=group.tip, branch=group.branch
            )
            if done.confirmations[group.branch] is None:
                return


def stands_alone(record: ConfirmationRecord, direction: str) -> bool:
    """A branch shown better than the base on its own: its whole interval on the better side.
    One that is not gained only on top of another branch's changes (a keep judged against a
    best that already held them): it cannot go in alone."""
    if record.ci_low_pct is None or record.ci_high_pct is None:
        return False
    return record.ci_high_pct < 0 if direction == "lower" else record.ci_low_pct > 0


def _refuse_existing(repo, groups: list[Group], force: bool) -> None:
    """A branch of the same name holding other work is not overwritten unless asked."""
    for group in groups:
        existing = repo.branch_tip(group.branch)
        if existing is None or force:
            continue
        if repo.must("rev-parse", f"{existing}^{{tree}}") == repo.must(
            "rev-parse", f"{group.tip}^{{tree}}"
        ):
            continue  # the same content: finalizing again changes nothing that matters
        raise UserError(
            f"branch {group.branch} exists and holds other work: delete it, pick another "
            "--prefix, or pass --force to overwrite it"
        )
