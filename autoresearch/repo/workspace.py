"""The session's isolated worktree: create or reattach, apply a patch, keep it, revert it.

The user's checkout is never modified: experiments run in a git worktree on the session branch
`autoresearch/<session>`, whose tip is always the last kept commit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import WorkspaceError
from ..filestate import FileState
from .gitrepo import COMMIT_ENV, Repo, open_repo
from .submodules import check_out_submodules
from .watch import Watches

__all__ = [
    "ApplyResult",
    "BaselineTree",
    "UncommittableError",
    "Workspace",
    "add_detached_tree",
    "apply_patch",
    "open_workspace",
]


class UncommittableError(WorkspaceError):
    """The change itself cannot be committed (not the repository, the disk or the signing):
    that experiment's failure, not the night's."""


@dataclass(frozen=True)
class ApplyResult:
    ok: bool
    message: str = ""
    three_way: bool = False


class Workspace:
    """A worktree checked out on the session branch. `keep`: build output (`[bench] keep`,
    gitignore patterns) a revert leaves in place, so that the next build is incremental."""

    def __init__(self, source: Repo, tree: Repo, branch: str, keep: tuple[str, ...] = ()):
        self.source = source
        self.tree = tree
        self.branch = branch
        self.build_output = keep
        # A session's watches (see watch.py): with them, a revert right after a revert to the
        # same tip, with nothing written or staged between, is not done twice.
        self.watches: Watches | None = None
        self._reverted: tuple | None = None

    @property
    def path(self) -> Path:
        return self.tree.path

    def tip(self) -> str:
        """The last kept commit: the session branch's tip."""
        sha = self.tree.branch_tip(self.branch)
        if sha is None:
            raise WorkspaceError(
                f"session branch {self.branch} disappeared from {self.source.path}"
            )
        return sha

    def touched_paths(self, patch_file: Path) -> list[str] | None:
        """Paths git would touch with this patch (both sides of a rename); None if not a patch."""
        result = self.tree.run("apply", "--numstat", "-z", str(patch_file))
        if not result.ok:
            return None
        paths: list[str] = []
        fields = result.out.split("\0")
        i = 0
        while i < len(fields):
            parts = fields[i].split("\t")
            if len(parts) == 3 and parts[2]:
                paths.append(parts[2])
            elif len(parts) == 3 and i + 2 < len(fields):  # rename: "a\td\t" NUL old NUL new
                paths.extend([fields[i + 1], fields[i + 2]])
                i += 2
            i += 1
        return paths

    def apply(self, patch_file: Path) -> ApplyResult:
        """Apply on top of the tip; fall back to a three-way merge, never leave conflicts behind."""
        applied = apply_patch(self.tree, patch_file)
        if not applied.ok:
            self.revert()
        return applied

    def keep(self, paths: list[str], message: str) -> str:
        """Commit exactly the patch's paths on the session branch; returns the new tip."""
        # Only what is there to add: a header may name a path that git's apply did not touch.
        tracked = set(self.tree.run("ls-files", "-z", "--", *paths).out.split("\0"))
        present = [p for p in paths if p in tracked or (self.path / p).exists()]
        # --force: a file the patch adds is kept even when a .gitignore pattern matches it.
        self.tree.must("add", "--all", "--force", "--", *present)
        missing = self._not_staged(present)
        if missing:
            raise UncommittableError(
                f"git cannot commit {', '.join(missing[:5])}: it is not in the index after "
                "`git add` (inside a directory that became a repository of its own, or a "
                "gitlink?)"
            )
        # Those paths only (`git commit -- paths`): a change a run staged in the index alone,
        # with the working tree untouched, is not in what the guard compared, nor in the keep.
        only = ["--", *present] if present else []
        self.tree.must("commit", "--no-verify", "--quiet", "-m", message, *only, env=COMMIT_ENV)
        sha = self.tree.head()
        # Whatever else the bench left behind must not survive into the next experiment.
        self.revert()
        return sha

    def _not_staged(self, present: list[str]) -> list[str]:
        """The paths of `present` that are files but are not in the index as files after the
        add: git skipped them, and `git commit -- <paths>` would refuse the lot."""
        listed = self.tree.run("ls-files", "-s", "-z", "--", *present).out.split("\0")
        staged = {
            entry.partition("\t")[2] for entry in listed if entry and not entry.startswith("160000")
        }
        return [p for p in present if (self.path / p).is_file() and p not in staged]

    def show(self, commit: str) -> None:
        """The tree of `commit` checked out over the tip, HEAD left on the branch: what a
        confirmation of another commit (a finalized branch) measures; `revert` undoes it."""
        self.tree.must("read-tree", "-u", "--reset", commit)

    def restart_at(self, commit: str) -> None:
        """The session branch moved to `commit`, its tree clean there: for a session that
        kept nothing yet and whose base moved (a pre-flight that failed, then a fix)."""
        self.tree.must("reset", "--hard", "--quiet", commit)
        clean(self.tree, self.build_output)
        self._reverted = None

    def revert(self) -> None:
        """Back to the last kept commit: changes undone, untracked and ignored files removed."""
        tip = self.tip()
        if self._reverted is not None and self._reverted == self._revert_state(tip):
            return  # nothing written in the tree, nothing staged, HEAD at the tip since
        self.tree.repair_dotgit()  # a run that rewrote it: the tree leads to its own repository
        self.tree.must("reset", "--hard", "--quiet", tip)
        clean(self.tree, self.build_output)
        put_back_output(self.tree, self.build_output)
        self._reverted = self._revert_state(tip) if self.watches is not None else None

    def mark_built(self) -> None:
        """The tree's kept build output is the best's now (its build for a calibration)."""
        save_output(self.tree, self.build_output)

    def _revert_state(self, tip: str) -> tuple | None:
        """What must stand for the tree to be as the last revert left it: the watch's count
        (no write), the index file (nothing staged), HEAD at the tip."""
        if self.watches is None:
            return None
        watch = self.watches.of(self.path)
        try:
            index = os.stat(self.tree.git_path("index"))
            staged = (index.st_ino, index.st_mtime_ns, index.st_size)
        except OSError:
            return None
        if not watch.usable or self.tree.head() != tip:
            return None
        return (tip, watch.generation(), staged)

    def scrub(self) -> None:
        """Back to the last kept commit with nothing untracked left, its kept build output
        included: what to do when something other than its runs wrote into the tree."""
        self.tree.must("reset", "--hard", "--quiet", self.tip())
        clean(self.tree)

    def is_clean(self) -> bool:
        return not self.tree.is_dirty()


class BaselineTree:
    """A detached worktree at the current best: the baseline arm of every measurement.

    It moves only when the best moves, so that its build is reused from one experiment to the
    next; a bench that dirtied it is undone before it is measured again.
    """

    def __init__(
        self,
        source: Repo,
        path: Path,
        stamp: Path | None = None,
        keep: tuple[str, ...] = (),
        watches: Watches | None = None,
    ):
        self.source = source
        self.path = path.resolve()
        self.watches = watches  # a session's: a tree nothing wrote to is not asked its status
        self.build_output = keep  # what its cleaning leaves, as the Workspace's
        # The commit its build output belongs to: in memory, or in `stamp` for a bench host
        # whose jobs each open the tree afresh.
        self.stamp = stamp
        self._built_at: str | None = None

    @property
    def built_at(self) -> str | None:
        if self.stamp is None:
            return self._built_at
        try:
            return self.stamp.read_text().strip() or None
        except OSError:
            return None

    def mark_built(self, commit: str | None) -> None:
        """Its build output is `commit`'s (None: unknown, build it again before use)."""
        self._built_at = commit
        if self.stamp is not None:
            if commit is None:
                self.stamp.unlink(missing_ok=True)
            else:
                self.stamp.write_text(commit)

    def scrub(self) -> None:
        """Forget its build and remove every untracked file, kept build output included: what
        to do when something other than its runs wrote into the tree. The next `ensure`
        checks it out again and the best is built afresh."""
        self.mark_built(None)
        if self.path.exists():
            clean(Repo.worktree(self.source, self.path))

    def ensure(self, commit: str) -> bool:
        """Check out `commit`; True when the tree changed (so its build is stale)."""
        if self.path not in self.source.worktrees() or not self.path.exists():
            self.source.run("worktree", "prune")
            if self.path.exists():
                raise WorkspaceError(f"{self.path}: exists but is not the baseline worktree")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            add_detached_tree(self.source, self.path, commit)
            return True
        tree = Repo.worktree(self.source, self.path)
        if tree.repair_dotgit():
            self.mark_built(None)  # a run reached into it: checked out and built afresh
        # Unknown build output (a new session, or a run wrote into the tree) is cleaned too:
        # an ignored file planted there is as good as a changed one to the baseline's bench.
        if tree.head() == commit and self.built_at is not None and self._clean(tree, commit):
            return False
        tree.must("checkout", "--quiet", "--force", "--detach", commit)
        clean(tree, self.build_output)
        return True

    def _clean(self, tree: Repo, head: str) -> bool:
        if self.watches is None:
            return not tree.is_dirty()
        return self.watches.memo(self.path, ("clean", head), lambda: not tree.is_dirty())


def add_detached_tree(source: Repo, path: Path, commit: str) -> Repo:
    """A new worktree of `source` at `path`, detached at `commit`, its submodules checked
    out: a tree the loop measures, builds or profiles in."""
    source.must("worktree", "add", "--quiet", "--detach", str(path), commit)
    tree = Repo.worktree(source, path)
    check_out_submodules(tree)
    return tree


def save_output(tree: Repo, keep: tuple[str, ...]) -> None:
    """The kept build output of `tree` as a build of an unpatched commit (the best's, a tip's)
    left it: every revert puts it back (`put_back_output`), so that what a patched build left
    there (a discarded candidate's output dated 2100) is made again by the next build, never
    taken for fresh. On disk beside the tree: a `try` in another process, a bench host's next
    job, put it back too."""
    if keep:
        FileState.take([tree.path]).save(_saved_output(tree.path))


def put_back_output(tree: Repo, keep: tuple[str, ...]) -> None:
    """Remove the kept build output that changed since `save_output` (tracked files aside:
    the revert wrote those); nothing before the first save."""
    best = FileState.load(_saved_output(tree.path)) if keep else None
    if best is not None:
        tracked = tree.run("ls-files", "-z").out.split("\0")
        best.restore(spare={str(tree.path / rel) for rel in tracked if rel})


def _saved_output(tree: Path) -> Path:
    return tree.parent / f"{tree.name}.built.json"


def clean(tree: Repo, keep: tuple[str, ...] = ()) -> None:
    """Remove every untracked and ignored file but the build output `keep` names: each tree
    keeps its own (never one shared between the arms, which a toolchain may take for fresh).
    Its submodules are checked out as its commit records them, nothing a run left in them."""
    tree.must("clean", "-ffdxq", *(f"--exclude={pattern}" for pattern in keep))
    check_out_submodules(tree)


def apply_patch(tree: Repo, patch_file: Path) -> ApplyResult:
    """Apply a patch to `tree`; fall back to a three-way merge. On failure the tree may hold a
    partial merge: the caller reverts it."""
    # Without --reject, git apply checks every hunk before it writes anything: a patch that
    # does not apply leaves the tree as it was, for the three-way merge to try.
    plain = tree.run("apply", "--whitespace=nowarn", str(patch_file))
    if plain.ok:
        return ApplyResult(True)
    three_way = tree.run("apply", "--3way", "--whitespace=nowarn", str(patch_file))
    if three_way.ok:
        return ApplyResult(True, "applied with a three-way merge", three_way=True)
    reason = _last_line(three_way.err) or _last_line(plain.err) or "git apply failed"
    return ApplyResult(False, reason)


def open_workspace(
    repo_path: Path,
    branch: str,
    worktree_path: Path,
    base: str,
    hooks: bool = False,
    keep: tuple[str, ...] = (),
) -> Workspace:
    """Create the session branch and worktree, or reattach to them after a restart."""
    source = open_repo(repo_path, hooks)
    if not source.branch_exists(branch):
        base_sha = source.resolve(base)
        if base_sha is None:
            raise WorkspaceError(f"{source.path}: base revision '{base}' not found ([target] base)")
        source.must("branch", branch, base_sha)
    registered = source.worktrees()
    wanted_ref = f"refs/heads/{branch}"
    holder = next((p for p, ref in registered.items() if ref == wanted_ref), None)
    worktree_path = worktree_path.resolve()
    if holder is not None and holder != worktree_path:
        raise WorkspaceError(
            f"branch {branch} is checked out at {holder}; check out another branch there "
            "so the session can use its own worktree"
        )
    if holder is None or not worktree_path.exists():
        source.run("worktree", "prune")
        if worktree_path.exists() and any(worktree_path.iterdir()):
            raise WorkspaceError(f"{worktree_path}: exists but is not the session's worktree")
        worktree_path.parent.mkdir(parents=True, exist_ok=True)
        source.must("worktree", "add", "--quiet", str(worktree_path), branch)
        check_out_submodules(Repo.worktree(source, worktree_path))
    workspace = Workspace(source, Repo.worktree(source, worktree_path), branch, keep)
    if workspace.tree.head() != workspace.tip():
        # HEAD left detached or moved by hand inside the worktree: go back to the branch.
        workspace.tree.must("checkout", "--quiet", "--force", branch)
    return workspace


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""
