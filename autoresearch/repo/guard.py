"""The judge's integrity: after every build, bench and checks run, nothing but the candidate's
patch has changed.

A candidate runs code, and code can reach outside its tree: write into the baseline worktree
(the baseline gets slower, the candidate "wins"), edit its own bench script at run time, commit
in its worktree, or write into the user's checkout. Each is a false keep or an unrecorded
commit unless something looks. The guard fingerprints, before the runs, what may not change:
- the candidate worktree: HEAD and the session branch at the best, tracked changes exactly the
  patch's, the patch's own files as applied;
- the baseline worktree: HEAD at the best and no tracked change at all;
- the user's checkout: its HEAD and its tracked changes;
and compares: both worktrees after every run of the candidate (a baseline run is the trusted
best), everything after the build, at every look of the decision rule, at the end of the
measurement and after the checks. Your checkout is read by neither arm, so a write into it
cannot sway a measurement: finding it before any decision is enough, and it saves a walk of
your whole tree per run. Untracked build output is not a change: `revert` removes it.

An untracked file written into the baseline's tree is: the baseline's bench may read it (a
`v=200` its script sources makes the best measure slow and a loss look like a win). The baseline
runs write there too, so what counts is a write between `before_run()` and the check after a
run of the candidate. Beyond the worktrees, the seal (seal.py) covers the repository's git
directory, your checkout's branch and untracked files, and the journal.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..files import read_bounded
from .gitrepo import Repo
from .seal import RepoSeal
from .watch import Watches, all_files

__all__ = ["TreeGuard"]

MAX_PATCHED_BYTES = 1 << 40  # no size limit worth the name: a patched file is read whole


@dataclass(frozen=True)
class _Snapshot:
    candidate_head: str
    branch_tip: str
    candidate_changes: str
    baseline_head: str | None
    baseline_changes: str | None
    checkout_head: str
    checkout_changes: str


class TreeGuard:
    """Fingerprints of everything a run may not change; `violation()` names what did."""

    def __init__(
        self,
        *,
        candidate: Repo,
        branch: str,
        baseline: Path | None,
        checkout: Repo,
        patch_paths: list[str],
        hooks: bool = False,
        seal: RepoSeal | None = None,
        watches: Watches | None = None,
        confined: bool = False,
    ):
        """`confined`: the runs cannot write your checkout (the sandbox mounts it read-only),
        so its HEAD and tracked files are yours to change meanwhile and are not compared."""
        self.seal = seal
        self.confined = confined
        self.candidate = candidate
        self.branch = branch
        self.baseline = Repo.worktree(checkout, baseline, hooks) if baseline is not None else None
        self.checkout = checkout
        self.patch_paths = patch_paths
        # The session's watches: a tree nothing wrote to since its fingerprint was taken (in
        # this experiment or an earlier one) is not walked again.
        self.watches = watches if watches is not None else Watches()
        self.expected = self._snapshot()
        # Writes into the baseline's tree while the candidate runs (see the module's text):
        # the watch's count when the run started, or the tree's files where there is no watch.
        self._armed: int | frozenset | None = None

    def before_run(self) -> None:
        """A run of the candidate (its build, a bench run, the checks) starts now: what is
        written into the baseline's tree from here to the next check is the candidate's."""
        if self.baseline is None:
            return
        watch = self.watches.of(self.baseline.path)
        self._armed = watch.generation() if watch.usable else all_files([self.baseline.path])

    def _baseline_written(self) -> str | None:
        armed, self._armed = self._armed, None
        if armed is None or self.baseline is None:
            return None
        watch = self.watches.of(self.baseline.path)
        if isinstance(armed, int) and watch.usable:
            written = watch.generation() != armed
        else:
            written = all_files([self.baseline.path]) != armed
        if not written:
            return None
        return (
            "the baseline worktree was written to during the candidate's run "
            "(files its bench could read)"
        )

    def violation(self, checkout: bool = True) -> str | None:
        """What changed outside the candidate's patch since the guard was made, or None;
        `checkout=False` looks at the two worktrees and the branch only."""
        was = self.expected
        now = self._snapshot(checkout)
        if now.branch_tip != was.branch_tip:
            return (
                f"the session branch moved from {was.branch_tip[:10]} to {now.branch_tip[:10]} "
                "during the run (a commit made by the candidate's code)"
            )
        for tree, arm in ((self.candidate, "candidate"), (self.baseline, "baseline")):
            broken = tree.dotgit_problem() if tree is not None else None
            if broken is not None:  # the loop's git ignores it; the tree's own runs would not
                return f"the {arm} worktree's .git was changed during the run: {broken}"
        if now.candidate_head != was.candidate_head:
            return (
                f"the candidate worktree's HEAD moved to {now.candidate_head[:10]} during the run"
            )
        if now.candidate_changes != was.candidate_changes:
            changed = self._changed(self.candidate, extra=self.patch_paths)
            return f"files of the candidate worktree changed during the run: {changed}"
        if now.baseline_head != was.baseline_head:
            return "the baseline worktree's HEAD moved during the run"
        if now.baseline_changes != was.baseline_changes and self.baseline is not None:
            return (
                "the baseline worktree was written to during the run: "
                f"{self._changed(self.baseline)}"
            )
        written = self._baseline_written()
        if written is not None:
            return written
        if checkout and not self.confined:
            if now.checkout_head != was.checkout_head:
                return f"your checkout {self.checkout.path} moved to another commit during the run"
            if now.checkout_changes != was.checkout_changes:
                return (
                    f"tracked files of your checkout {self.checkout.path} changed during the "
                    f"run: {self._changed(self.checkout)}"
                )
        changes = self.seal.changes(checkout) if self.seal is not None else []
        if changes:
            return f"the repository was changed during the run: {'; '.join(changes)}"
        return None

    def restore(self) -> list[str]:
        """Put back what the candidate changed: the session branch, and what the seal covers.
        Returns what could not be put back, for the user."""
        if (self.candidate.branch_tip(self.branch) or "") != self.expected.branch_tip:
            self.restore_branch()
        return self.seal.restore() if self.seal is not None else []

    def restore_branch(self) -> None:
        """Put the session branch back where it was: a commit the candidate made is not a keep."""
        tip = self.expected.branch_tip
        if not tip:  # there was none (a bench host's clone): the candidate made it
            self.candidate.must("update-ref", "-d", f"refs/heads/{self.branch}")
            return
        self.candidate.must("update-ref", f"refs/heads/{self.branch}", tip)
        self.candidate.must("checkout", "--quiet", "--force", self.branch)

    def _snapshot(self, checkout: bool = True) -> _Snapshot:
        """HEADs and the branch read every time (they move without a write in the tree: a
        commit); each tree's changes walked only when something was written there since."""
        baseline = self.baseline
        candidate_head = self.candidate.head()
        baseline_head = baseline.head() if baseline is not None else None
        checkout = checkout and not self.confined
        checkout_head = self.checkout.head() if checkout else ""
        return _Snapshot(
            candidate_head=candidate_head,
            branch_tip=self.candidate.branch_tip(self.branch) or "",
            candidate_changes=self._changes(self.candidate, candidate_head, self.patch_paths),
            baseline_head=baseline_head,
            baseline_changes=self._changes(baseline, baseline_head, [], True)
            if baseline is not None
            else None,
            checkout_head=checkout_head,
            checkout_changes=self._changes(self.checkout, checkout_head, [], True)
            if checkout
            else "",
        )

    def _changes(self, repo: Repo, head: str | None, files: list[str], stamps=False) -> str:
        key = ("changes", head, tuple(files), stamps)
        return self.watches.memo(repo.path, key, lambda: _fingerprint(repo, files, stamps))

    def _changed(self, repo: Repo, extra: list[str] | None = None) -> str:
        paths = [p for p in repo.status_paths() if p in (extra or []) or _tracked(repo, p)]
        shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
        return shown or "(content of the patch's files)"


def _fingerprint(repo: Repo, files: list[str], stamps: bool = False) -> str:
    """Tracked changes against HEAD (staged or not), and the bytes of `files` as they are.
    With `stamps`, also when each changed file was last written: in a tree nothing may write
    to, rewriting an already changed file with the same bytes is a write all the same."""
    digest = hashlib.sha256()
    diff = repo.run("diff", "HEAD", "--binary", "--no-ext-diff", "--no-textconv").out
    digest.update(diff.encode("utf-8", "surrogateescape"))
    if stamps and diff:
        changed = repo.run("diff", "HEAD", "--name-only", "-z").out.split("\0")
        for rel in filter(None, changed):
            try:
                stat = (repo.path / rel).stat()
            except OSError:
                continue
            stamp = f"{rel}\0{stat.st_mtime_ns}\0{stat.st_size}\0"
            digest.update(stamp.encode("utf-8", "surrogateescape"))
    for rel in files:
        digest.update(rel.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(_bytes_of(repo.path / rel))
    return digest.hexdigest()


def _bytes_of(path: Path) -> bytes:
    """A patched file's bytes, or what stands in its place: read without following a link or
    waiting on a FIFO a run put there (the guard's look must never hang on the candidate)."""
    if path.is_symlink():
        return b"<symlink>"
    try:
        return read_bounded(path, MAX_PATCHED_BYTES, "patched file")
    except UserError as exc:  # gone, a directory, a FIFO, a device: not the patch's file
        return f"<{exc}>".encode("utf-8", "surrogateescape")


def _tracked(repo: Repo, path: str) -> bool:
    return repo.run("ls-files", "--error-unmatch", "--", path).ok
