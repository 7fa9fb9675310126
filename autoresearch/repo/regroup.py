"""Finalize: a night's kept commits regrouped into independent branches cut from its base.

A session leaves one branch of stacked keeps; a reviewer merges changes one at a time. Kept
commits that touch a common file go together (neither applies without the other's text);
groups that share no file each become a branch from the session's base, carrying its commits
in order. The branches are built with git plumbing, through a scratch index: no checkout, the
user's tree and the session's worktrees untouched. Their union is then checked against the
session's tip: together they are exactly the night.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import WorkspaceError
from ..process.capture import capture
from .gitrepo import COMMIT_ENV, HARDENED, HARDENED_ENV, Repo

__all__ = [
    "Group",
    "Kept",
    "build_branch",
    "group_commits",
    "kept_commits",
    "union_tree",
    "without",
]


@dataclass(frozen=True)
class Kept:
    """One commit of the session branch, with the experiment that kept it (if any)."""

    commit: str
    title: str
    files: tuple[str, ...]
    n: int | None = None  # the experiment's number; None: a commit no experiment kept
    change_pct: float | None = None  # as judged at its keep, against the best before it
    mechanism: str | None = None


@dataclass
class Group:
    """Kept commits that must go together: each shares a file with another of them."""

    commits: list[Kept]
    files: set[str] = field(default_factory=set)
    branch: str = ""
    tip: str = ""

    @property
    def shared(self) -> list[str]:
        """The files that tie the group's commits together (touched by more than one)."""
        seen: dict[str, int] = {}
        for kept in self.commits:
            for path in kept.files:
                seen[path] = seen.get(path, 0) + 1
        return sorted(path for path, count in seen.items() if count > 1)


def kept_commits(repo: Repo, base: str, tip: str, records: dict[str, dict[str, Any]]) -> list[Kept]:
    """The session branch's commits from `base` to `tip` in order (first parents), each with
    the files it changed and its experiment's record (`records` by commit) when one kept it."""
    revs = repo.must("rev-list", "--reverse", "--first-parent", f"{base}..{tip}").split()
    out = []
    for rev in revs:
        listed = repo.must("diff-tree", "--no-commit-id", "--name-only", "-r", "-z", rev)
        files = tuple(sorted(p for p in listed.split("\0") if p))
        record = records.get(rev)
        title = (record or {}).get("title") or repo.must("log", "-1", "--format=%s", rev).strip()
        out.append(
            Kept(
                commit=rev,
                title=title,
                files=files,
                n=(record or {}).get("n"),
                change_pct=(record or {}).get("change_pct"),
                mechanism=(record or {}).get("mechanism"),
            )
        )
    return out


def group_commits(kept: list[Kept]) -> list[Group]:
    """Commits joined when they share a file, directly or through others; groups in the order
    of their first commit, commits in branch order."""
    parent = list(range(len(kept)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, commit in enumerate(kept):
        for path in commit.files:
            if path in owner:
                parent[root(i)] = root(owner[path])
            else:
                owner[path] = i
    groups: dict[int, Group] = {}
    for i, commit in enumerate(kept):
        group = groups.setdefault(root(i), Group(commits=[]))
        group.commits.append(commit)
        group.files.update(commit.files)
    return sorted(groups.values(), key=lambda g: kept.index(g.commits[0]))


def branch_name(prefix: str, number: int, title: str) -> str:
    """`<prefix>01-skip-the-get`: numbered in branch order, named after its first change."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40].rstrip("-") or "change"
    return f"{prefix}{number:02d}-{slug}"


def build_branch(repo: Repo, base: str, group: Group) -> str:
    """The group's commits replayed on `base`, each keeping its message, author and date and
    changing only its own files to their content at that commit; returns the last commit."""
    parent = base
    for kept in group.commits:
        tree = _tree(repo, parent, [(kept.commit, kept.files)])
        fields = repo.must("log", "-1", "--format=%aI%x00%B", kept.commit)
        date, message = fields.split("\0", 1)
        env = {**COMMIT_ENV, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
        parent = repo.must("commit-tree", tree, "-p", parent, "-m", message.strip(), env=env)
        parent = parent.strip()
    return parent


def union_tree(repo: Repo, base: str, groups: list[Group]) -> str:
    """The tree of `base` with every group's files as its branch has them: the branches merged."""
    return _tree(repo, base, [(g.tip, tuple(sorted(g.files))) for g in groups])


def _tree(repo: Repo, start: str, sources: Iterable[tuple[str, tuple[str, ...]]]) -> str:
    """`start`'s tree with each source's files set as that commit has them (removed where it
    has none), written through a scratch index."""
    handle, index = tempfile.mkstemp(prefix="autoresearch-finalize-", suffix=".index")
    os.close(handle)
    env = {"GIT_INDEX_FILE": index}
    try:
        Path(index).unlink()  # git makes it: an empty file is not an index
        repo.must("read-tree", start, env=env)
        for commit, files in sources:
            present = {}
            if files:
                listed = repo.must("ls-tree", "-r", "-z", commit, "--", *files)
                for entry in filter(None, listed.split("\0")):
                    meta, path = entry.split("\t", 1)
                    mode, _, sha = meta.split()
                    present[path] = (mode, sha)
            for path in files:
                if path in present:
                    mode, sha = present[path]
                    info = f"{mode},{sha},{path}"
                    repo.must("update-index", "--add", "--cacheinfo", info, env=env)
                else:
                    repo.must("update-index", "--force-remove", "--", path, env=env)
        tree = repo.must("write-tree", env=env).strip()
    finally:
        Path(index).unlink(missing_ok=True)
    if not tree:
        raise WorkspaceError(f"{repo.path}: git write-tree gave no tree")
    return tree


def without(repo: Repo, tip: str, left_out: list[Kept]) -> tuple[str | None, str]:
    """A commit (on top of `tip`, on no branch) whose tree is `tip`'s with the changes of the
    `left_out` commits taken back; (None, why) when a later commit built on their text, so
    that they cannot be taken out alone. Written through a scratch index: nothing checked out."""
    handle, index = tempfile.mkstemp(prefix="autoresearch-without-", suffix=".index")
    os.close(handle)
    env = {"GIT_INDEX_FILE": index, **HARDENED_ENV}
    try:
        Path(index).unlink()
        repo.must("read-tree", tip, env=env)
        for kept in reversed(left_out):  # the latest first: each taken back from what follows
            diff = capture(
                ["git", *HARDENED, "diff", "--binary", f"{kept.commit}^", kept.commit],
                cwd=repo.path,
                env=HARDENED_ENV,
            )
            taken = capture(
                ["git", *HARDENED, "apply", "--cached", "--reverse", "-"],
                cwd=repo.path,
                env=env,
                stdin=diff.out,
            )
            if not (diff.ok and taken.ok):
                why = (taken.err or diff.err).decode(errors="replace").strip().splitlines()
                return None, f"#{kept.n}: a later keep builds on it ({why[-1] if why else 'git'})"
        tree = repo.must("write-tree", env=env).strip()
    finally:
        Path(index).unlink(missing_ok=True)
    names = ", ".join(f"#{k.n}" for k in left_out)
    message = f"the session's tip without {names}"
    commit = repo.must("commit-tree", tree, "-p", tip, "-m", message, env=COMMIT_ENV).strip()
    return commit, ""
