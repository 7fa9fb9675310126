"""What a confined run does not see: a path covered whole (a directory by an empty tmpfs, a
file by /dev/null), or a directory's entries covered but for the ways to what the run needs
(your home beside an agent's copy of it, your checkout beside the trees made from it)."""

from __future__ import annotations

import os
from pathlib import Path

from .private_tmp import under

__all__ = ["covered", "covered_whole", "tool_prefixes"]


def tool_prefixes(path: str, reveal: tuple[Path, ...]) -> list[Path]:
    """Where the tools a run is given live: each PATH entry's install prefix (`~/.local/bin`
    -> `~/.local`, `<prefix>/node_modules/.bin` -> `<prefix>`), and each of `reveal` (a file
    its command names) by its directory's."""
    entries = [Path(e) for e in path.split(os.pathsep) if e]
    entries += [p.parent for p in reveal]
    found = []
    for entry in entries:
        prefix = entry.parent
        if prefix.name == "node_modules":
            prefix = prefix.parent
        found += [entry.resolve(), prefix.resolve()]
    return found


def covered(hidden: Path, needed: list[Path]) -> list[str]:
    """bwrap arguments that cover every entry under `hidden` but the ways to `needed`: a
    directory by an empty tmpfs, a file by /dev/null. A needed path itself stays whole, an
    ancestor of one keeps its own entries covered in turn; a path that *is* `hidden` (a tool
    prefix at your home's top) does not uncover it."""
    hidden = hidden.resolve()
    if hidden == Path("/") or under(hidden, Path("/tmp")) or not hidden.is_dir():
        return []
    ways = [n for n in needed if n != hidden and under(n, hidden)]
    argv: list[str] = []
    stack = [hidden]
    while stack:
        directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            path = Path(entry.path)
            if any(under(n, path) for n in ways):  # needed, or on the way to a needed path
                if path not in ways and entry.is_dir(follow_symlinks=False):
                    stack.append(path)
            elif entry.is_dir(follow_symlinks=False):
                argv += ["--tmpfs", str(path)]
            elif not entry.is_symlink():  # a link leads to what is covered or shown anyway
                argv += ["--ro-bind", "/dev/null", str(path)]
    return argv


def covered_whole(paths: tuple[Path, ...]) -> list[str]:
    """bwrap arguments that cover each of `paths` whole, last, over every bind before them."""
    argv: list[str] = []
    for path in paths:
        if path.is_dir():
            argv += ["--tmpfs", str(path)]
        elif path.exists():
            argv += ["--ro-bind", "/dev/null", str(path)]
    return argv
