"""How an agent CLI runs when the target's runs are confined: in its scratch tree, with the
network it needs to reach its model, and a home of its own, made from a copy of the parts of
yours its preset names (its login and settings). Your real home it does not see.

A CLI finds its files where your environment says: `CODEX_HOME`, `CLAUDE_CONFIG_DIR`,
`GEMINI_CLI_HOME`, the `XDG_*_HOME` family. Each one you set is followed: what it points at is
copied into the agent's home at the place the CLI would use without it, and the variable is
pointed there, as `HOME` is; left pointing at your real path, the CLI would find a read-only
file system, or nothing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from ..files import gitdir_of
from ..journal.fold import derived_paths
from .covers import hidden_homes
from .private_tmp import paths_in
from .sandbox import Sandbox, cache_dir, sandbox_for

if TYPE_CHECKING:
    from ..config import Config

__all__ = ["RELOCATING", "agent_sandbox", "relocated"]

# Each variable that moves a CLI's files: the place in a home it stands for, and the files it
# moves (GEMINI_CLI_HOME names the directory its `.gemini` is in).
RELOCATING = {
    "CODEX_HOME": (".codex", ".codex"),
    "CLAUDE_CONFIG_DIR": (".claude", ".claude"),
    "GEMINI_CLI_HOME": ("", ".gemini"),
    "XDG_CONFIG_HOME": (".config", ".config"),
    "XDG_DATA_HOME": (".local/share", ".local/share"),
    "XDG_STATE_HOME": (".local/state", ".local/state"),
}


def agent_sandbox(
    config: Config, scratch: Path, home: list[str], command: str = "", logs: Path | None = None
) -> Sandbox | None:
    """How an agent CLI runs when the target's runs are confined: in its scratch tree (and
    that tree's own git files, so that `git status` and `git diff` work), with the network it
    needs to reach its model, and a home of its own: a copy of what `home` names of yours (its
    login and settings), made afresh for each run of the loop, so that nothing it writes there
    reaches your real one. Your real home it does not see, but for your repository and the
    tools it runs (its PATH's, `command`'s), read-only: its git directory, not your checkout
    around it. Nor does it see the holdout's files, the session's `logs` (where the holdout's
    runs print their figures) or the journal and what is derived from it (each keep's holdout
    evidence). None when runs are not confined."""
    sandbox, _ = sandbox_for(config)
    if sandbox is None:
        return None
    admin = gitdir_of(scratch / ".git")
    derived = derived_paths(config.journal_path)
    for directory in derived:  # made now, so that what is derived during the run is hidden too
        with contextlib.suppress(OSError):
            directory.mkdir(parents=True, exist_ok=True)
    return Sandbox(
        nested=True,
        network=True,
        unix_sockets=True,
        writable=(*sandbox.writable, *([admin] if admin is not None else [])),
        caches={"HOME": "home"},
        seeds={"HOME": _agent_home_seed(scratch, home)},
        hide=hidden_homes(config.repo_path),
        reveal=paths_in(command),
        read=sandbox.read,
        relocate={var: at for var, (at, _) in RELOCATING.items() if os.environ.get(var)},
        secret=(
            *sandbox.secret,
            *([logs] if logs is not None else []),
            config.journal_path,
            *derived,
        ),
    )


def _agent_home_seed(scratch: Path, home: list[str]) -> Path:
    """A copy of the named parts of your home, beside the scratch tree; the agent's home (its
    cache) is dropped so that it is made from this copy on its next run."""
    seed = scratch.parent / "agent-home-seed"
    shutil.rmtree(seed, ignore_errors=True)
    shutil.rmtree(cache_dir(scratch, "home"), ignore_errors=True)
    seed.mkdir(parents=True)
    for rel in home:
        source, copy = relocated(rel, os.environ), seed / rel
        copy.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, copy, symlinks=True, ignore_dangling_symlinks=True)
        elif source.is_file():
            shutil.copy2(source, copy)
    return seed


def relocated(rel: str, env: dict[str, str] | os._Environ[str], home: Path | None = None) -> Path:
    """Where the file `rel` of a home (`.codex`, `.config/opencode`) is for you: where the
    variable of RELOCATING that moves it says, when you set one, else under `home` (yours)."""
    for var, (at, moves) in sorted(RELOCATING.items(), key=lambda item: -len(item[1][1])):
        where = env.get(var)
        if where and (rel == moves or rel.startswith(moves + "/")):
            return Path(where) / rel.removeprefix(at).lstrip("/")
    return (home or Path.home()) / rel
