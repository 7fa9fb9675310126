"""The one git wrapper: GitPython for reads, the git CLI (process/capture.py) for the rest."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import git

from ..errors import WorkspaceError
from ..files import gitdir_of
from ..process.capture import capture

__all__ = ["GitResult", "Repo", "open_repo", "tree_patch"]

# The loop commits as itself; the user's identity and hooks are not its business.
COMMIT_ENV = {
    "GIT_AUTHOR_NAME": "autoresearch",
    "GIT_AUTHOR_EMAIL": "autoresearch@localhost",
    "GIT_COMMITTER_NAME": "autoresearch",
    "GIT_COMMITTER_EMAIL": "autoresearch@localhost",
}
GIT_TIMEOUT_S = 300  # a git call that takes longer hangs (a hook, a lock, a network remote)
# Nor are their hooks and signing: a post-checkout hook would run inside every revert, and
# `commit.gpgSign = true` without a usable key would fail the first keep of the night.
# `[target] git_hooks = true` lets them through.
ISOLATION = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "commit.gpgSign=false",
    "-c", "tag.gpgSign=false",
)  # fmt: skip
# A filter or diff driver is chosen by a tree's .gitattributes, which a candidate's build may
# write, and defined in your git config: the loop's own git calls in that tree (the guard's
# diff, the keep's add, the revert) would run it, outside the sandbox. Each one your config
# defines becomes a no-op for them (`cat`, no long-running process, not required); diffs are
# asked for with --no-ext-diff and --no-textconv. `[target] git_hooks = true` lets them
# through (a repository whose files go through Git LFS needs it).
_DRIVERS = re.compile(r"^(filter|diff)\.(.+)\.(clean|smudge|process|textconv|command)$")
# What names the config files git reads outside any repository.
_CONFIG_ENV = ("HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM")


def driver_overrides() -> tuple[str, ...]:
    """`-c` options that make every filter and diff driver of your git config a no-op."""
    return _overrides_for(tuple(os.environ.get(name) for name in _CONFIG_ENV))


@functools.cache
def _overrides_for(_config_env: tuple[str | None, ...]) -> tuple[str, ...]:
    """(Cached per set of config files: the keys only name them.)"""
    done = capture(
        ["git", "config", "--name-only", "--get-regexp", _DRIVERS.pattern], cwd=Path("/")
    )
    names = {match.group(1, 2) for key in done.text().split() if (match := _DRIVERS.match(key))}
    options: list[str] = []
    for section, name in sorted(names):
        if section == "filter":
            values = {"clean": "cat", "smudge": "cat", "process": "", "required": "false"}
        else:
            values = {"textconv": "cat"}
        for key, value in values.items():
            options += ["-c", f"{section}.{name}.{key}={value}"]
    return tuple(options)


# Whatever a run may have left in the repository before the seal (repo/seal.py) puts it back,
# the loop's own git calls do not follow it: a `core.fsmonitor` command would run inside each of
# them, outside every timeout, and a replace ref (`git replace -f HEAD HEAD`) would make every
# object read fail. Nor does a keep commit start git's housekeeping: `gc --auto` detaches and
# would repack the repository beside the next bench runs, outside every process the loop tracks.
# Nor does a status or diff descend into a submodule on its own: a run can rewrite a submodule's
# `.git` to point at a git directory of its making, whose filters would run in that call,
# outside the sandbox (submodules.py puts those files back before it works in them).
HARDENED = (
    "-c", "core.fsmonitor=false", "-c", "gc.auto=0", "-c", "maintenance.auto=false",
    "-c", "diff.ignoreSubmodules=all", "-c", "submodule.recurse=false",
)  # fmt: skip
HARDENED_ENV = {"GIT_NO_REPLACE_OBJECTS": "1"}
# The CLI's own calls: git's messages in English (they are read back, and shown as they are).
GIT_ENV = {**HARDENED_ENV, "LANGUAGE": "C", "LC_ALL": "C"}
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass(frozen=True)
class GitResult:
    code: int
    out: str
    err: str

    @property
    def ok(self) -> bool:
        return self.code == 0


class Repo:
    """A git working tree (the user's checkout or a session worktree).

    Its git directory is found once, when it is opened, and named in every git call after
    (GIT_DIR, GIT_WORK_TREE, GIT_COMMON_DIR): a run that rewrites the tree's `.git` file (to
    `gitdir: <your repository>/.git`) cannot turn the loop's own reset, clean or add on your
    repository. A tree the loop made is opened by `worktree()`, from what the repository
    itself records of it, never from the tree's `.git`."""

    def __init__(self, path: Path, hooks: bool = False, git_dir: Path | None = None):
        self.hooks = hooks
        try:
            self._repo = git.Repo(git_dir if git_dir is not None else path)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise WorkspaceError(f"{git_dir or path}: not a git repository") from None
        if self._repo.bare:
            raise WorkspaceError(f"{path}: a bare repository has no working tree")
        self.path = Path(self._repo.working_tree_dir or path)
        self.pinned = {
            "GIT_DIR": str(Path(self._repo.git_dir).resolve()),
            "GIT_WORK_TREE": str(self.path),
            "GIT_COMMON_DIR": str(self.common_dir),
        }
        self._repo.git.update_environment(**HARDENED_ENV, **self.pinned)  # its object reads too

    @classmethod
    def worktree(cls, source: Repo, tree: Path, hooks: bool | None = None) -> Repo:
        """The linked worktree at `tree` of `source`'s repository, its git directory found
        in the repository's own records (`worktrees/<name>/gitdir`), not in the tree."""
        wanted = (Path(tree).resolve() / ".git").as_posix()
        root = source.common_dir / "worktrees"
        for admin in sorted(root.iterdir()) if root.is_dir() else []:
            with contextlib.suppress(OSError, UnicodeDecodeError):
                recorded = (admin / "gitdir").read_text(encoding="utf-8").strip()
                if Path(recorded).resolve(strict=False).as_posix() == wanted:
                    return cls(tree, source.hooks if hooks is None else hooks, git_dir=admin)
        raise WorkspaceError(f"{tree}: not a worktree of {source.path}")

    def dotgit_problem(self) -> str | None:
        """What is wrong with the tree's `.git` now, against the git directory it was opened
        with (gone, rewritten, pointed elsewhere); None when it still leads there."""
        dotgit = self.path / ".git"
        if not dotgit.exists() and not dotgit.is_symlink():
            return "its .git is gone"
        if dotgit.is_symlink():
            return "its .git was made a symbolic link"
        leads = str(dotgit.resolve() if dotgit.is_dir() else gitdir_of(dotgit) or "nowhere")
        if leads != self.pinned["GIT_DIR"]:
            return f"its .git was rewritten to point at {leads}"
        return None

    def repair_dotgit(self) -> bool:
        """A linked worktree's `.git` put back as it was made (`gitdir: <its git directory>`)
        when a run rewrote, removed or replaced it; True when it had to be."""
        if self.dotgit_problem() is None or self.pinned["GIT_DIR"] == self.pinned["GIT_COMMON_DIR"]:
            return False  # intact, or a main checkout's own .git directory: not the loop's to make
        dotgit = self.path / ".git"
        if dotgit.is_dir() and not dotgit.is_symlink():
            shutil.rmtree(dotgit)
        else:
            dotgit.unlink(missing_ok=True)
        dotgit.write_text(f"gitdir: {self.pinned['GIT_DIR']}\n", encoding="utf-8")
        return True

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The environment of a git call in this tree: its repository named, git's messages
        in English."""
        return {**GIT_ENV, **self.pinned, **(extra or {})}

    # -- reads ---------------------------------------------------------------------------------

    @property
    def common_dir(self) -> Path:
        """The .git directory shared by all worktrees of this repository."""
        return Path(self._repo.common_dir).resolve()

    def resolve(self, rev: str) -> str | None:
        result = self.run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
        return result.out.strip() if result.ok else None

    def head(self) -> str:
        """The commit HEAD is at, read from the ref files (`head_ref`, `branch_tip`): no object
        read, so no long-lived `git cat-file` process that a run's clean-up could take for one
        of its own."""
        ref = self.head_ref()
        if ref.startswith("refs/heads/"):
            sha = self.branch_tip(ref.removeprefix("refs/heads/"))
        else:
            sha = ref if _SHA.fullmatch(ref) else None
        sha = sha or self.resolve("HEAD")
        if sha is None:
            raise WorkspaceError(f"{self.path}: HEAD names no commit")
        return sha

    def git_path(self, name: str) -> Path:
        """A file of this working tree's own git directory (its HEAD, its index)."""
        return Path(self._repo.git_dir) / name

    def head_ref(self) -> str:
        """What HEAD names: its branch's full ref name, or its commit when detached. Read from
        the HEAD file when it is a plain one (a link or anything odd is asked of git)."""
        head = self.git_path("HEAD")
        with contextlib.suppress(OSError, UnicodeDecodeError):
            if head.is_file() and not head.is_symlink():
                text = head.read_text(encoding="utf-8").strip()
                if text.startswith("ref: refs/"):
                    return text.removeprefix("ref: ")
                if _SHA.fullmatch(text):
                    return text
        named = self.run("symbolic-ref", "-q", "HEAD")
        return named.out.strip() if named.ok else self.run("rev-parse", "HEAD").out.strip()

    def branch_tip(self, branch: str) -> str | None:
        """The commit `refs/heads/<branch>` names, or None when there is none. Read from the ref
        files, loose or packed, with no git process: the loop asks several times an experiment,
        and on a busy machine each `git rev-parse` costs tens of milliseconds. Anything but a
        plain loose file (a directory, a link planted there) is left to git to judge."""
        name = f"refs/heads/{branch}"
        loose = self.common_dir / name
        if loose.is_symlink() or (loose.exists() and not loose.is_file()):
            return self.resolve(name)
        try:
            return git.SymbolicReference.dereference_recursive(self._repo, name)
        except (ValueError, OSError):
            return None

    def branch_exists(self, branch: str) -> bool:
        return self.resolve(f"refs/heads/{branch}") is not None

    def status_paths(self) -> list[str]:
        """Paths with any change against HEAD, tracked or untracked (ignored files excluded),
        in its submodules too: each asked of its own git directory, under the tree's, never
        through the `.git` a run may have rewritten in it (submodules.py)."""
        found = self._status_of()
        if not (self.path / ".gitmodules").exists():  # none; or gone, which the above says
            return found
        for git_dir, rel in _submodule_trees(Path(self.pinned["GIT_DIR"]), Path()):
            work = self.path / rel
            if work.is_dir() and not work.is_symlink():
                found += [(rel / path).as_posix() for path in self._status_of(git_dir, work)]
        return found

    def _status_of(self, git_dir: Path | None = None, work: Path | None = None) -> list[str]:
        env = None if git_dir is None else {"GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(work)}
        if env is not None:
            env["GIT_COMMON_DIR"] = env["GIT_DIR"]
        result = self.run("status", "--porcelain=v1", "-z", "--untracked-files=all", env=env)
        entries = result.out.split("\0")
        paths, i = [], 0
        while i < len(entries):
            entry = entries[i]
            if len(entry) > 3:
                paths.append(entry[3:])
                if entry[0] in "RC":  # a rename carries its source as the next entry
                    i += 1
            i += 1
        return paths

    def is_dirty(self) -> bool:
        return bool(self.status_paths())

    def commit_message(self, rev: str) -> str:
        """Asked of git, not read through GitPython's object database: that keeps a `git
        cat-file` process alive, which a run's clean-up could take for one of its own."""
        return self.must("log", "-1", "--format=%B", rev, "--")

    def worktrees(self) -> dict[Path, str | None]:
        """Registered worktrees: path -> branch ref (None when detached)."""
        out = self.run("worktree", "list", "--porcelain").out
        found: dict[Path, str | None] = {}
        current: Path | None = None
        for line in out.splitlines():
            if line.startswith("worktree "):
                current = Path(line.removeprefix("worktree ")).resolve()
                found[current] = None
            elif line.startswith("branch ") and current is not None:
                found[current] = line.removeprefix("branch ")
        return found

    # -- the CLI, for everything else ------------------------------------------------------------

    def run(self, *args: str, env: dict[str, str] | None = None) -> GitResult:
        """Run `git <args>` in this tree; never raises on a non-zero exit. In a session of its
        own (process/capture.py): a hook's leftovers die with the call, a hang with its timeout."""
        done = capture(
            ["git", *HARDENED, *([] if self.hooks else (*ISOLATION, *driver_overrides())), *args],
            cwd=self.path,
            env=self.env(env),
            timeout_s=GIT_TIMEOUT_S,
        )
        err = done.err.decode("utf-8", "surrogateescape")
        if done.timed_out:
            err += f"git {args[0] if args else ''} timed out after {GIT_TIMEOUT_S} s"
        code = -1 if done.code is None or done.timed_out else done.code
        return GitResult(code, done.out.decode("utf-8", "surrogateescape"), err)

    def must(self, *args: str, env: dict[str, str] | None = None) -> str:
        """Run `git <args>`; a failure is a WorkspaceError carrying git's own words."""
        result = self.run(*args, env=env)
        if not result.ok:
            detail = (result.err or result.out).strip().splitlines()
            raise WorkspaceError(
                f"git {' '.join(args[:2])} failed in {self.path}: {detail[-1] if detail else ''}"
            )
        return result.out


def open_repo(path: Path, hooks: bool = False) -> Repo:
    """The repository at `path` (its top level, if `path` is inside one)."""
    if not path.exists():
        raise WorkspaceError(f"{path}: target repository does not exist")
    try:
        top = git.Repo(path, search_parent_directories=True).working_tree_dir
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise WorkspaceError(f"{path}: not a git repository (set [target] repo)") from None
    if top is None:
        raise WorkspaceError(f"{path}: a bare repository has no working tree to experiment in")
    return Repo(Path(top), hooks)


def tree_patch(
    tree: Repo, base: str, leave_out: Callable[[str], bool], index: Path | None = None
) -> bytes:
    """The working tree of `tree` against commit `base` as one binary-safe patch: tracked
    files, untracked ones git does not ignore, and whatever was committed there since `base`;
    paths `leave_out` names stay as they are at `base`. Staged through `index` when given (a
    scratch index file, leaving the tree's own untouched), else through the tree's own index.
    The tree's git directory is the one it was opened with, whatever its `.git` says now."""
    path = tree.path
    broken = tree.dotgit_problem()
    if broken is not None:  # what was changed there cannot be read as the change
        raise WorkspaceError(f"{path}: not the git worktree it was made as any more ({broken})")
    env = tree.env({"GIT_INDEX_FILE": str(index)} if index is not None else {})

    def git(*args: str) -> bytes:
        done = capture(["git", *HARDENED, *driver_overrides(), *args], cwd=path, env=env)
        if not done.ok:
            raise WorkspaceError(f"{path}: git {args[0]} failed reading the change: {done.why()}")
        return done.out

    if index is not None:
        git("read-tree", base)
    git("add", "--all", "--", ".")
    names = git("diff", "--cached", "--name-only", "-z", base).decode(errors="surrogateescape")
    left_out = [n for n in names.split("\0") if n and leave_out(n)]
    if left_out:
        git("reset", "--quiet", base, "--", *left_out)
    return git("diff", "--cached", "--binary", "--no-color", "--no-ext-diff", base)


def submodules_of(git_dir: Path) -> list[tuple[str, str]]:
    """(name, path) of each submodule the `.gitmodules` of `git_dir`'s HEAD lists: read from the
    repository, not from a tree a run may have written."""
    done = capture(
        ["git", *HARDENED, "--git-dir", str(git_dir), "config", "--blob", "HEAD:.gitmodules",
         "--get-regexp", r"^submodule\..*\.path$"],
        cwd=git_dir,
        env=GIT_ENV,
    )  # fmt: skip
    found = []
    for line in done.text().splitlines():
        key, _, rel = line.partition(" ")
        name = key.removeprefix("submodule.").removesuffix(".path")
        if name and rel and not Path(rel).is_absolute() and ".." not in Path(rel).parts:
            found.append((name, rel))
    return found


def _submodule_trees(git_dir: Path, under: Path) -> list[tuple[Path, Path]]:
    """Each submodule's git directory and its path in the tree, down its own submodules."""
    found = []
    for name, rel in submodules_of(git_dir):
        module = git_dir / "modules" / name
        if module.is_dir():
            found.append((module, under / rel))
            found += _submodule_trees(module, under / rel)
    return found
