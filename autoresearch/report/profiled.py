"""Each kept change's differential profile: where the best's time moved from the best before
it to the kept commit (both profiled at their calibrations; profiles.py), for `report`, the
page and `pr` ("`previous` 38.8% -> 0.0%")."""

from __future__ import annotations

from ..profiles import moves_between, short_frame
from ..repo.state_dir import session_paths

__all__ = ["with_profile_moves"]

SHOWN_MOVES = 4


def with_profile_moves(summary: dict, config) -> dict:
    """`summary` with each win's `profile` moves and `profile_said`, when both ends of it were
    profiled (the config names a [profile] command)."""
    if config is None or not config.profile.command:
        return summary
    paths = session_paths(config)
    for win in summary["wins"]:
        parent, commit = win.get("parent"), win.get("commit")
        if not parent or not commit:
            continue
        moves = moves_between(paths.profile(parent), paths.profile(commit))
        win["profile"] = moves
        win["profile_said"] = "; ".join(
            f"`{short_frame(m['frame'])}` {m['before_pct']:.1f}% → {m['after_pct']:.1f}%"
            for m in moves[:SHOWN_MOVES]
        )
    return summary
