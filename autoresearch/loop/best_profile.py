"""The best's profile, taken after its calibration (off the timed runs, where the executor has
the best built: local.py, or aside for bench hosts), kept with the session, and read back for
`state`, the agent's prompt and the review (profiles.py)."""

from __future__ import annotations

from ..bench.profiling import profile_aside
from ..config import Config
from ..profiles import Folded, save_profile, top_frames
from ..repo.state_dir import session_paths
from .session import Session

__all__ = ["profile_commit", "said_profile"]


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
