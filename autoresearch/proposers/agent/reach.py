"""What an agent's run changed beyond its scratch tree: what the seal covers, the loop's
measurement trees, your queue of patches. Named for its refusal, and put back or removed."""

from __future__ import annotations

import contextlib
from pathlib import Path

from ...repo.seal import RepoSeal
from ...repo.watch import WriteWatch
from ..base import ProposalContext

__all__ = ["changed_beyond", "joined", "listing", "unqueue"]


def changed_beyond(
    seal: RepoSeal, trees: WriteWatch | None, context: ProposalContext
) -> str | None:
    """What the agent's run changed that the seal covers, or in the loop's measurement trees
    (where a file the baseline's bench reads would slow the best), put back; None when
    nothing."""
    changes = seal.changes()
    left = seal.restore() if changes else []
    if trees is not None and trees.written():
        names = ", ".join(str(p) for p in trees.roots)
        changes.append(f"the loop's measurement trees were written to ({names})")
        if context.scrub_measured is not None:
            context.scrub_measured()
    if not changes:
        return None
    return "; ".join(changes) + (f"; NOT put back: {'; '.join(left)}" if left else " (put back)")


def listing(directories: list[Path]) -> dict[Path, tuple[int, int, int]]:
    """Every file under `directories`, with its identity, size and write time."""
    found = {}
    for directory in directories:
        for path in directory.rglob("*") if directory.is_dir() else []:
            with contextlib.suppress(OSError):
                st = path.lstat()
                found[path] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return found


def unqueue(before: dict[Path, tuple[int, int, int]], directories: list[Path]) -> str | None:
    """What the agent's run wrote into your queue: new files removed (the queue proposer would
    measure them as yours), changed ones named; None when nothing."""
    after = listing(directories)
    new = sorted(p for p in after if p not in before and not p.is_dir())
    changed = sorted(p for p in after if p in before and after[p] != before[p] and not p.is_dir())
    for path in new:
        with contextlib.suppress(OSError):
            path.unlink()
    said = []
    if new:
        said.append(f"it wrote into your queue (removed): {', '.join(p.name for p in new[:5])}")
    if changed:
        said.append(f"it changed files of your queue: {', '.join(p.name for p in changed[:5])}")
    return "; ".join(said) or None


def joined(*parts: str | None) -> str | None:
    return "; ".join(p for p in parts if p) or None
