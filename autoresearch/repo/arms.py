"""Where each arm's tree lives on disk, under names that do not say which arm it is.

A confined run sees its tree at one path whatever its arm (bench/sandbox.py), but the mount
table (`/proc/self/mountinfo`) names the source of every bind: a tree at `<state>/baseline`
would tell the code running in it that it is the best being measured, and a kept change that
slows itself down there makes every later null look like a win. So each tree's name is drawn at
random the first time and kept in `arms.json` beside them, which no confined run can read.

A state directory made before (its trees named by their roles) keeps its names.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from pathlib import Path

__all__ = ["ARMS_FILE", "arm_dirs"]

ARMS_FILE = "arms.json"


def arm_dirs(root: Path, roles: tuple[str, ...]) -> dict[str, Path]:
    """Each role's tree under `root` (role -> path): the names `root/arms.json` holds, drawn
    there the first time a tree is asked for; the roles' own names where trees of those names
    are already there (a state directory from before)."""
    names = _recorded(root, roles)
    if names is None:
        if any((root / role).exists() for role in roles):
            return {role: root / role for role in roles}
        names = _draw(root, roles)
    return {role: root / names[role] for role in roles}


def _recorded(root: Path, roles: tuple[str, ...]) -> dict[str, str] | None:
    try:
        data = json.loads((root / ARMS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not all(_plain(data.get(role)) for role in roles):
        return None
    return data


def _plain(name: object) -> bool:
    return isinstance(name, str) and bool(name) and "/" not in name and name not in (".", "..")


def _draw(root: Path, roles: tuple[str, ...]) -> dict[str, str]:
    """New names, written whole; a process that wrote first wins and its names are read back
    (two commands opening one session agree)."""
    names = {role: f"arm-{secrets.token_hex(4)}" for role in roles}
    root.mkdir(parents=True, exist_ok=True)
    partial = root / f"{ARMS_FILE}.{os.getpid()}.tmp"
    try:
        partial.write_text(json.dumps(names), encoding="utf-8")
    except OSError as exc:  # a full disk: said naming this file (the CLI names its file system)
        partial.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(partial)) from None
    try:
        os.link(partial, root / ARMS_FILE)  # fails when another process drew first
    except FileExistsError:
        found = _recorded(root, roles)
        if found is None:  # a file cut short or edited: these names replace it
            os.replace(partial, root / ARMS_FILE)
        names = found or names
    finally:
        with contextlib.suppress(OSError):
            partial.unlink()
    return names
