"""Every confined run of an arm under one name, whichever arm it is.

A confined run sees its tree at one path in both arms (sandbox.py, `one_path`), but the mount
table (/proc/self/mountinfo) names each bind mount's source as it is on disk: the arm's own
directory, its caches', its private /tmp's. Those names are drawn at random per session, yet
each stays its arm's: a kept change that noted the name it ran under as the candidate would
know, as the best, when it runs in the baseline's tree. So for each confined run the arm's
three directories are renamed to the one name every arm's runs have (STAGE), and back after:
the mount table then says the same in every run of either arm. Runs of a session's arms never
overlap (one at a time on a machine), and a run that died staged is put back before the next
one is staged (the note beside them says which arm it was), and before the arms are opened
(a session's start, a bench host's job), so that an arm a killed run left staged is not made
again beside it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from ..atomic import write_json_atomic

__all__ = ["STAGE", "in_stage", "staged", "unstage"]

STAGE = "tree"  # where each run sees its tree already (sandbox.seen_at): the same name on disk
NOTE = "staged.json"  # beside the trees: which arm is under STAGE while a run has it there


def _places(root: Path, name: str) -> list[tuple[Path, Path]]:
    """An arm's directories (its tree, its caches, its private /tmp) and where each is staged."""
    return [
        (root / name, root / STAGE),
        (root / "caches" / name, root / "caches" / STAGE),
        (root / "tmp" / name, root / "tmp" / STAGE),
    ]


@contextlib.contextmanager
def staged(cwd: Path, stage: bool = True) -> Iterator[Path]:
    """The arm whose tree is `cwd` under STAGE for the block (`stage` False: where it is);
    where its tree is meanwhile."""
    cwd = cwd.resolve()
    root = cwd.parent
    if not stage or cwd.name == STAGE:
        yield cwd
        return
    unstage(root)
    write_json_atomic(root / NOTE, {"arm": cwd.name})
    try:
        for there, here in _places(root, cwd.name):
            if there.exists():
                os.rename(there, here)
        yield root / STAGE
    finally:
        unstage(root)


def unstage(root: Path) -> None:
    """The arm a run left under STAGE (this one's, or one of a loop that died) back in its
    place; nothing when none is."""
    note = root / NOTE
    try:
        name = json.loads(note.read_text())["arm"]
    except (OSError, ValueError, KeyError, TypeError):
        return
    for there, here in _places(root, str(name)):
        if here.exists() and there.exists():  # the arm made again meanwhile: this one is stale
            shutil.rmtree(here, ignore_errors=True)
        elif here.exists():
            there.parent.mkdir(parents=True, exist_ok=True)
            os.rename(here, there)
    note.unlink(missing_ok=True)


def in_stage(value: str, cwd: Path) -> str:
    """`value` (an environment variable's) with a path into the arm's directories (the arm
    whose tree is `cwd`) named where they are while staged."""
    cwd = cwd.resolve()
    for there, staged_at in _places(cwd.parent, cwd.name):
        prefix = str(there)
        if value == prefix or value.startswith(prefix + os.sep):
            return str(staged_at) + value[len(prefix) :]
    return value
