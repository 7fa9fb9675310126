"""The best's profile, taken after its calibration (off the timed runs), kept with the session,
and read back for `state`, the agent's prompt and the review (profiles.py)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ..bench.measure import Harness
from ..bench.profiling import take_profile
from ..config import Config
from ..profiles import Folded, save_profile, top_frames
from ..repo.gitrepo import open_repo
from ..repo.state_dir import session_paths
from ..repo.workspace import add_detached_tree
from .session import Session, log_label, marker

__all__ = ["profile_best", "profile_best_aside", "profile_commit"]


def profile_best(session: Session, commit: str) -> None:
    """After the best's calibration: its profile, once per commit, in its built tree."""
    if not _wanted(session, commit):
        return
    label = log_label(session, "profile")
    harness = session.harness(marker(session, "profile"))
    try:
        folded, why = take_profile(
            harness, session.baseline_tree.path, session.paths.log(label, "profile")
        )
    finally:
        session.paths.inflight.unlink(missing_ok=True)
    if folded is not None:
        save_profile(session.paths.profile(commit), folded)
    _said(session, commit, folded, why)


def profile_best_aside(session: Session, commit: str, env: dict[str, str]) -> None:
    """A new best's profile on a night measured by bench hosts: taken by the driver in a
    worktree of its own (profile_commit, which keeps it), since its own trees are not built at
    the best."""
    if _wanted(session, commit):
        _said(session, commit, *profile_commit(session.config, commit, env))


def _wanted(session: Session, commit: str) -> bool:
    """A profile is configured and `commit` has none yet: said, as it is taken."""
    if not session.config.profile.command or session.paths.profile(commit).exists():
        return False
    session.progress.info(f"profiling {commit[:10]} (a run of its own, not timed)")
    return True


def _said(session: Session, commit: str, folded: Folded | None, why: str) -> None:
    """Where the kept profile's time goes, said; or why there is none."""
    if folded is None:
        session.progress.warn(f"no profile of {commit[:10]}: {why}")
        return
    top = top_frames(folded, 1)
    session.progress.info(
        f"profile of {commit[:10]}: {sum(folded.values()):,} samples; the most time in "
        f"{top[0]['frame']} ({top[0]['total_pct']:.1f}%)"
    )


def profile_commit(config: Config, commit: str, env: dict[str, str]) -> tuple[Folded | None, str]:
    """A fresh profile of `commit`, built and run in a worktree of its own (removed after),
    stored as the session's profile of that commit: what `autoresearch profile --fresh` and
    the MCP server's `profile` ask for, without a bench run being timed."""
    repo = open_repo(config.repo_path, config.target.git_hooks)
    scratch = Path(tempfile.mkdtemp(prefix="autoresearch-profile-"))
    tree = scratch / "tree"
    try:
        add_detached_tree(repo, tree, commit)
        harness = Harness(config, env=env, stop=None)
        built = harness.build(tree, scratch / "build.log")
        if built is not None and not built.ok:
            return None, f"the build failed ({built.describe()})"
        folded, why = take_profile(harness, tree, scratch / "profile.log")
        if folded is not None:
            save_profile(session_paths(config).profile(commit), folded)
        return folded, why
    finally:
        repo.run("worktree", "remove", "--force", str(tree))
        repo.run("worktree", "prune")
        shutil.rmtree(scratch, ignore_errors=True)
