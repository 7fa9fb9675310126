"""`autoresearch finalize`: the session's keeps as independent branches from its base.

Reads the session's kept experiments from the journal, groups the commits of the session
branch that share files (repo/regroup.py), writes one local branch per group, and checks that
the branches together equal the session's tip. Nothing is pushed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config import Config
from ..decide.percent import interval_side
from ..errors import UserError
from ..journal.digest import SessionDigest
from ..journal.records import ConfirmationRecord
from ..journal.store import Journal
from ..repo.gitrepo import open_repo
from ..repo.regroup import (
    Group,
    Kept,
    branch_name,
    build_branch,
    group_commits,
    kept_commits,
    union_tree,
    without,
)
from ..statuses import Status

__all__ = [
    "Finalized",
    "finalize",
    "stands_alone",
]


@dataclass
class Finalized:
    base: str
    tip: str
    groups: list[Group] = field(default_factory=list)
    union_equals_tip: bool = False
    differing: list[str] = field(default_factory=list)  # paths where the union and tip differ
    written: bool = False
    dropped: list[Kept] = field(default_factory=list)  # keeps left out of every branch
    unchanged: list[str] = field(default_factory=list)  # branches that held it already
    # Each branch measured against the base (`--confirm`), by branch name; None: interrupted.
    confirmations: dict[str, ConfirmationRecord | None] = field(default_factory=dict)


def finalize(
    config: Config,
    prefix: str | None = None,
    dry_run: bool = False,
    force: bool = False,
    drop: tuple[int, ...] = (),
) -> Finalized:
    """Group the session's keeps, write a branch per group (unless `dry_run`), check the union.
    An existing branch of the same name is refused unless `force` (or it already holds the
    same commits: finalizing twice is a no-op). `drop`: the experiments (by number) whose
    keeps go in no branch (dead weight); the union is then checked against the tip without
    them."""
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
    result = Finalized(base=base, tip=tip)
    kept = kept_commits(repo, base, tip, _kept_records(journal, digest))
    result.dropped = _dropped(kept, drop, session)
    result.groups = group_commits([k for k in kept if k not in result.dropped])
    target: str | None = tip
    if result.dropped:
        target, why = without(repo, tip, result.dropped)
        if target is None:
            raise UserError(f"cannot leave out {why}: drop it with what builds on it")
    prefix = prefix if prefix is not None else f"{config.branch}-"
    for number, group in enumerate(result.groups, 1):
        group.branch = branch_name(prefix, number, group.commits[0].title)
        group.tip = build_branch(repo, base, group)
    union = union_tree(repo, base, result.groups)
    differing = repo.must("diff-tree", "-r", "--name-only", "-z", union, f"{target}^{{tree}}")
    result.differing = [p for p in differing.split("\0") if p]
    result.union_equals_tip = not result.differing
    if dry_run:
        return result
    if result.differing:
        without_them = "".join(f" without #{k.n}" for k in result.dropped)
        more = len(result.differing) - 5
        raise UserError(
            f"the branches together would differ from the session's tip{without_them} in "
            f"{', '.join(result.differing[:5])}{f' and {more} more' if more > 0 else ''}: "
            "nothing written (--dry-run shows the groups)"
        )
    _refuse_existing(repo, result.groups, force)
    for group in result.groups:
        if _same_tree(repo, repo.branch_tip(group.branch), group.tip):
            result.unchanged.append(group.branch)  # finalized before: left as it was
            continue
        repo.must("update-ref", f"refs/heads/{group.branch}", group.tip)
    result.written = True
    return result


def _kept_records(journal: Journal, digest: SessionDigest) -> dict[str, dict]:
    """What the journal says of each kept commit (by its sha): number, title, change, mechanism."""
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
    return records


def stands_alone(record: ConfirmationRecord, direction: str) -> bool:
    """A branch shown better than the base on its own: its whole interval on the better side.
    One that is not gained only on top of another branch's changes (a keep judged against a
    best that already held them): it cannot go in alone."""
    return interval_side(record.ci_low_pct, record.ci_high_pct, direction) == "better"


def _dropped(kept: list[Kept], drop: tuple[int, ...], session: str) -> list[Kept]:
    """The keeps `drop` names by experiment number; an unknown number is said with the known."""
    numbers = {k.n for k in kept}
    unknown = [n for n in drop if n not in numbers]
    if unknown:
        known = ", ".join(f"#{n}" for n in sorted(n for n in numbers if n is not None))
        raise UserError(
            f"--drop {unknown[0]}: no kept experiment #{unknown[0]} in session '{session}' "
            f"(kept: {known})"
        )
    return [k for k in kept if k.n in drop]


def _same_tree(repo, existing: str | None, tip: str) -> bool:
    return existing is not None and repo.must("rev-parse", f"{existing}^{{tree}}") == repo.must(
        "rev-parse", f"{tip}^{{tree}}"
    )


def _refuse_existing(repo, groups: list[Group], force: bool) -> None:
    """A branch of the same name holding other work is not overwritten unless asked."""
    for group in groups:
        existing = repo.branch_tip(group.branch)
        if existing is None or force:
            continue
        if _same_tree(repo, existing, group.tip):
            continue  # the same content: finalizing again changes nothing that matters
        raise UserError(
            f"branch {group.branch} exists and holds other work: delete it, pick another "
            "--prefix, or pass --force to overwrite it"
        )
