"""The sessions of a repository: list them (`autoresearch sessions`), remove one (`clean`).

A session is a branch `autoresearch/<name>`, its records in the journal, and a state directory
(worktrees, logs, patches, lock). Listing finds every session any of those three knows of;
cleaning removes the worktrees and the state directory, and the branch only when asked (its
commits are the night's work).
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ..config import Config
from ..errors import UserError
from ..journal.digest import session_digests
from ..repo.gitrepo import open_repo
from ..repo.state_dir import SessionLock, session_paths
from ..statuses import Status

__all__ = ["SessionInfo", "clean_session", "format_sessions", "list_sessions"]

PREFIX = "autoresearch/"


@dataclass
class SessionInfo:
    name: str
    branch: str | None  # the branch, when it exists
    ahead: int  # commits on the branch beyond the base
    experiments: int  # records in the config's journal
    kept: int
    state_dir: Path | None  # when it exists
    state_bytes: int
    last_activity: float | None  # seconds since the epoch: the newest file of its state


def list_sessions(config: Config) -> list[SessionInfo]:
    repo = open_repo(config.repo_path)
    base = repo.resolve(config.target.base)
    branches = [
        line.strip()
        for line in repo.must(
            "for-each-ref", "--format=%(refname:short)", "refs/heads/autoresearch/"
        )
        .strip()
        .splitlines()
        if line.strip()
    ]
    root = session_paths(config).root.parent
    dirs = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    # Counts from the summary beside the journal's index, not a parse of every record.
    digests = session_digests(config.journal_path)
    by_session = {name: d for name, d in digests.items() if d.experiments}
    names = sorted({b[len(PREFIX) :] for b in branches} | set(dirs) | set(by_session))
    out = []
    for name in names:
        branch = PREFIX + name if PREFIX + name in branches else None
        ahead = 0
        if branch and base:
            ahead = int(repo.must("rev-list", "--count", f"{base}..{branch}").strip() or 0)
        state = root / name if name in dirs else None
        size, newest = _du(state) if state else (0, None)
        digest = by_session.get(name)
        out.append(
            SessionInfo(
                name=name,
                branch=branch,
                ahead=ahead,
                experiments=digest.experiments if digest else 0,
                kept=digest.outcomes()[0].get(Status.KEEP, 0) if digest else 0,
                state_dir=state,
                state_bytes=size,
                last_activity=newest,
            )
        )
    return out


def format_sessions(sessions: list[SessionInfo], current: str) -> str:
    if not sessions:
        return "no sessions yet: `autoresearch run` starts one"
    rows = [("", "session", "branch", "experiments", "state", "last activity")]
    for s in sessions:
        branch = f"{s.branch} (+{s.ahead})" if s.branch else "(no branch)"
        records = f"{s.experiments} ({s.kept} kept)"
        state = f"{s.state_bytes / 1e6:.1f} MB" if s.state_dir else "-"
        when = (
            time.strftime("%Y-%m-%d %H:%M", time.localtime(s.last_activity))
            if s.last_activity
            else "-"
        )
        rows.append(("*" if s.name == current else "", s.name, branch, records, state, when))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    lines.append("")
    lines.append("* the config's session; pick another with --session NAME")
    return "\n".join(lines)


def clean_session(config: Config, delete_branch: bool = False) -> list[str]:
    """Remove the session's worktrees and state directory (and its branch, when asked); what was
    removed, in words. Refuses while a run holds the session."""
    repo = open_repo(config.repo_path)
    paths = session_paths(config)
    branch = config.branch
    done: list[str] = []
    if not paths.root.exists() and not repo.branch_exists(branch):
        raise UserError(f"no session '{config.session.name}' here (see `autoresearch sessions`)")
    if paths.root.exists():
        lock = SessionLock(paths.lock)
        lock.acquire()  # a SessionBusyError while a run holds the session
        try:
            registered = repo.worktrees()
            for tree in (paths.worktree, paths.baseline, paths.agent_scratch):
                if tree.exists() or tree.resolve() in registered:
                    repo.run("worktree", "remove", "--force", str(tree))
                    done.append(f"removed worktree {tree}")
            shutil.rmtree(paths.root)
            outside = paths.agent_scratch.parent  # with its agent's home and caches
            if paths.root not in outside.parents and outside.exists():
                shutil.rmtree(outside)
                done.append(f"removed {outside}")
        finally:
            lock.release()
        repo.run("worktree", "prune")
        done.append(f"removed state {paths.root}")
    if delete_branch and repo.branch_exists(branch):
        tip = repo.resolve(branch) or ""
        repo.must("branch", "-D", branch)
        done.append(
            f"deleted branch {branch} (was {tip[:10]}; `git branch {branch} {tip[:10]}` "
            "brings it back)"
        )
    elif repo.branch_exists(branch):
        done.append(f"kept branch {branch} (--branch deletes it too)")
    return done


def _du(path: Path) -> tuple[int, float | None]:
    size, newest = 0, None
    for item in path.rglob("*"):
        try:
            st = item.lstat()
        except OSError:
            continue
        if item.is_file() and not item.is_symlink():
            size += st.st_size
        newest = st.st_mtime if newest is None else max(newest, st.st_mtime)
    return size, newest
