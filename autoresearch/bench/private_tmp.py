"""A confined run's private /tmp, and what of the real /tmp it is shown again.

Each run gets a /tmp of its own, beside its tree and emptied for each run, so that nothing one
run leaves there is seen by the next. What lived under /tmp and the run needs is mounted again
over it, read-only: the repository the tree belongs to, the tools on its PATH there, and what
its commands and their scripts name there (an interpreter of a virtualenv made under /tmp).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path

from ..errors import UserError
from ..files import read_bounded

MAX_SCRIPT_BYTES = 16 * 1024 * 1024  # a script bigger than this names nothing

__all__ = [
    "named_paths",
    "named_under_tmp",
    "paths_in",
    "private_tmp",
    "private_tmp_mounts",
    "under",
]


def private_tmp(cwd: Path) -> Path:
    """Where a run in `cwd` sees /tmp: beside its tree, its arm's own."""
    return cwd.parent / "tmp" / cwd.name


def private_tmp_mounts(cwd: Path, repository: list[Path], path: str) -> list[str]:
    """A private /tmp on the same disk as before (a tmpfs would move a storage bench's files
    into memory and change what it measures), emptied for each run; and what lived under /tmp
    and the run needs, mounted again read-only over it: the `repository` the tree belongs to
    (git works; the tree itself is bound later), and the tools on `path` there by their first
    component (`/tmp/venv/bin` -> `/tmp/venv`: a virtualenv's interpreter needs its
    site-packages; hidden, `python3` would be another one, or none)."""
    private = private_tmp(cwd)
    shutil.rmtree(private, ignore_errors=True)
    private.mkdir(parents=True)
    argv = ["--bind", str(private), "/tmp"]
    tmp = Path("/tmp")
    shown = [p for p in repository if under(p, tmp)]
    for entry in filter(None, path.split(os.pathsep)):
        resolved = Path(entry).resolve()
        if resolved != tmp and under(resolved, tmp) and resolved.is_dir():
            shown.append(tmp / resolved.relative_to(tmp).parts[0])
    for again in dict.fromkeys(shown):
        argv += ["--ro-bind", str(again), str(again)]
    return argv


def paths_in(command: str) -> tuple[Path, ...]:
    """The files a command line names: its program (found on PATH) and absolute paths."""
    try:
        words = shlex.split(command)
    except ValueError:  # an unclosed quote: bash will say so when it runs
        words = command.split()
    found = [shutil.which(words[0])] if words else []
    found += [w for w in words if w.startswith("/")]
    return tuple(Path(p) for p in found if p)


def named_paths(commands: tuple[str, ...], scripts: tuple[Path, ...] = ()) -> tuple[Path, ...]:
    """The files the commands, and the scripts they run, name by an absolute path (an
    interpreter of a virtualenv: `init --python /tmp/venv/bin/python3` writes it into
    autoresearch.sh). A script is read as text: any absolute path in it, quoted or not."""
    named = [p for command in commands if command for p in paths_in(command)]
    for script in scripts:
        try:
            text = read_bounded(script, MAX_SCRIPT_BYTES, "script").decode("utf-8", "replace")
        except UserError:  # not there yet (the run will say so), or no file to read
            continue
        named += [Path(m) for m in re.findall(r"(?<![\w.~-])/[^\s'\"`;:|&()<>$]+", text)]
    return tuple(dict.fromkeys(named))


def named_under_tmp(named: tuple[Path, ...]) -> tuple[Path, ...]:
    """The top directories under /tmp of what is `named`, which the run's private /tmp would
    otherwise hide (the interpreter's virtualenv, its site-packages with it)."""
    tmp = Path("/tmp")
    found = [tmp / p.parts[2] for p in named if under(p, tmp) and len(p.parts) > 2]
    return tuple(dict.fromkeys(p for p in found if p.exists()))


def under(path: Path, root: Path) -> bool:
    """Whether `path` is `root` or within it (by their parts: a sandbox's views ask it of
    every pair of the paths they bind, each confined run)."""
    inner, outer = path.parts, root.parts
    return inner[: len(outer)] == outer
