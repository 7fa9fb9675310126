"""The best's profile, taken after its calibration (off the timed runs, in the driver's own
best tree, whichever executor measured), kept with the session, and read back for `state`,
the agent's prompt and the review (profiles.py)."""

from __future__ import annotations

from ..bench.profiling import profile_aside, take_profile
from ..config import Config
from ..profiles import Folded, save_profile, top_frames
from ..repo.state_dir import session_paths
from .session import Session, StopRequested, log_label, marker, prepare_best

__all__ = ["profile_best", "profile_commit", "said_profile"]


def profile_best(session: Session, commit: str) -> None:
    """The best's profile, once per commit, in the driver's own best tree (built at it by its
    calibration here; else built now: bench hosts measure elsewhere), off the timed runs: in
    the world of every run the driver makes (one path, the same variables)."""
    if not session.config.profile.command or session.paths.profile(commit).exists():
        return
    session.progress.info(f"profiling {commit[:10]} (a run of its own, not timed)")
    label = log_label(session, "profile")
    try:
        prepare_best(session, commit, label)
        harness = session.harness(marker(session, "profile"))
        log = session.paths.log(label, "profile")
        folded, why = take_profile(harness, session.baseline_tree.path, log)
    except StopRequested:
        return
    finally:
        session.paths.inflight.unlink(missing_ok=True)
    said_profile(session, commit, folded, why)


def said_profile(session: Session, commit: str, folded: Folded | None, why: str) -> None:
    """The best's profile kept with the session and where its time goes said; or why there is
    none."""
    if folded is None:
        session.progress.warn(f"no profile of {commit[:10]}: {why}")
        return
    save_profile(session.paths.profile(commit), folded)
    top = top_frames(folded, 1)
    session.progress.info(
        f"profile of {commit[:10]}: {sum(folded.values()):,} samples; the most time in "
        f"{top[0]['frame']} ({top[0]['total_pct']:.1f}%)"
    )


def profile_commit(config: Config, commit: str, env: dict[str, str]) -> tuple[Folded | None, str]:
    """A fresh profile of `commit` (profile_aside), stored as the session's profile of that
    commit: what `autoresearch profile --fresh` and the MCP server's `profile` ask for."""
    folded, why = profile_aside(config, commit, env)
    if folded is not None:
        save_profile(session_paths(config).profile(commit), folded)
    return folded, why
