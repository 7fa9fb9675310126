"""Each arm's state (filestate.py) kept from one measurement to the next, with a watch on its
trees (repo/watch.py): taken by a walk once, then brought up to date from the paths written
since, and put back after each run from those paths alone. On a tree of 20,000 files a walk
costs a tenth of a second, and a measurement would otherwise take one per arm and put back
with one after every run. Where the watch cannot say what was written (no inotify, events
lost), the state is taken and put back by walking, as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..filestate import FileState
from ..repo.watch import TreeWatch

__all__ = ["ArmStates"]


@dataclass
class _Arm:
    roots: tuple[Path, ...]
    state: FileState
    watch: TreeWatch
    # The paths written since `state` was last brought up to date; None: not known.
    pending: set[str] | None = field(default_factory=set)


class ArmStates:
    """The arms' states of one session (or one measurement, where nothing outlives it)."""

    def __init__(self) -> None:
        self._arms: dict[Path, _Arm] = {}

    def take(self, cwd: Path, roots: list[Path]) -> FileState:
        """The state of the arm in `cwd` (its tree and `roots` beside it) as it is now."""
        # Those that exist: an arm's caches are made only when the config names some, and a
        # root that appears later makes another key, so the state is taken afresh then.
        key = tuple(Path(r) for r in roots if Path(r).is_dir())
        arm = self._arms.get(cwd)
        if arm is not None and arm.roots == key:
            self._since(arm)
            if arm.pending is not None:
                arm.state, arm.pending = arm.state.updated(arm.pending), set()
                return arm.state
            arm.watch.close()
        watch = TreeWatch(key, collect=True)  # before the walk: a write meanwhile is seen
        arm = _Arm(key, FileState.take(key), watch)
        self._arms[cwd] = arm
        return arm.state

    def put_back(self, cwd: Path) -> None:
        """The arm as `take` last found it: what a run wrote there since removed."""
        arm = self._arms.get(cwd)
        if arm is None:
            return
        touched = self._since(arm)
        if touched is None or touched:
            arm.state.restore(touched=touched)
            self._since(arm)  # the removals themselves: looked at again by the next `take`

    def close(self) -> None:
        for arm in self._arms.values():
            arm.watch.close()
        self._arms.clear()

    @staticmethod
    def _since(arm: _Arm) -> set[str] | None:
        """The paths written in the arm since the last look (None: not known), kept in
        `pending` too."""
        touched = arm.watch.touched()
        if touched is None or arm.pending is None:
            arm.pending = None
        else:
            arm.pending |= touched
        return touched
