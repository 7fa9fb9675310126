"""What no run may change outside the two worktrees: the repository's git directory, your
checkout and the journal. Taken before an experiment's runs, compared after them, and put back.

The sandbox makes these read-only to a confined run; this is the guard where confinement cannot
reach (bwrap missing, `[sandbox] mode = "off"`, a daemon left by an unconfined build). What it
fingerprints:
- the git directory: `config` (a `core.fsmonitor` there runs a command inside every git call),
  the worktrees' `config.worktree`, `info/exclude`, `info/attributes`, `info/grafts`,
  `objects/info/alternates`, `shallow`, and every hook file;
- every ref, replace refs and the stash included (`git replace -f HEAD HEAD` makes the
  repository unusable; a stash takes your uncommitted work out of your checkout);
- your checkout: the branch it is on and its untracked files (the tree guard has its HEAD and
  tracked changes);
- the journal: its length and the hash of its last bytes (a forged `keep` line appended, or the
  file emptied).

`restore()` puts back what can be put back exactly: the files' bytes, the refs, your checkout's
branch, a stash taken from it, the journal (cut back to its length, or copied back from the
mirror kept beside the session's state). It never deletes a file from your checkout: new
untracked files there are named, and left for you.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..journal.fold import derived_paths
from ..process.procfs import files_of_session
from .gitrepo import Repo
from .mirror import JournalMirror, journal_tail
from .watch import tree_stamp

__all__ = ["RepoSeal"]

GIT_FILES = (
    "config",
    "config.worktree",
    "info/exclude",
    "info/attributes",
    "info/grafts",
    "objects/info/alternates",
    "shallow",
)
MAX_KEPT_BYTES = 4 * 1024 * 1024  # a bigger file there is not config: compared by hash only
SESSION_REFS = "refs/heads/autoresearch/"  # the sessions' branches: each guards its own
REF_STORAGE = ("packed-refs", "refs", "reftable")  # where refs live: packed, loose, a reftable


@dataclass(frozen=True)
class _FileState:
    size: int
    digest: str
    data: bytes | None  # what to write back; None when too big to keep


def _file_state(path: Path) -> _FileState | None:
    try:
        if path.is_symlink():
            target = os.readlink(path)
            return _FileState(-1, f"symlink:{target}", None)
        size = path.stat().st_size
        if size > MAX_KEPT_BYTES:
            digest = hashlib.sha256()
            with path.open("rb") as f:
                while chunk := f.read(1 << 20):
                    digest.update(chunk)
            return _FileState(size, digest.hexdigest(), None)
        data = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError:
        return _FileState(-2, "unreadable", None)
    return _FileState(len(data), hashlib.sha256(data).hexdigest(), data)


@dataclass(frozen=True)
class _State:
    files: dict[str, _FileState | None]
    refs: dict[str, str]
    checkout_branch: str
    untracked: frozenset[tuple[str, int, int]]
    journal_size: int
    journal_tail: str


class RepoSeal:
    """A fingerprint of the repository, your checkout and the journal; `changes()` names what
    differs now, `restore()` puts it back."""

    def __init__(
        self,
        checkout: Repo,
        journal: Path,
        mirror: Path | None = None,
        own: Path | None = None,
        *,
        watch_journal: bool = True,
        ignore_refs: tuple[str, ...] = (),
        session: str | None = None,
        skip: tuple[Path, ...] = (),
        confined: bool = False,
    ):
        """`own`: the session's state directory, whose files the loop itself writes (it sits
        in the git directory by default, or wherever `[session] state_dir` puts it). A seal
        around a run the loop works beside (an agent preparing the next proposal while an
        experiment is measured, kept and journaled) leaves out the journal and the refs the
        loop itself moves (`ignore_refs`).

        Other sessions of the repository may run meanwhile: their branches
        (`refs/heads/autoresearch/*`; this session's is the tree guard's), their appends to a
        shared journal (records of another `session`) and `skip` (the ideas file, which
        `autoresearch ideas` and the MCP tools write) are theirs, not the run's.

        `confined`: the runs cannot write the repository or your checkout at all (the sandbox
        mounts them read-only), so what changes there meanwhile (a commit you make, a file you
        write, a branch you switch to) is yours: only the git directory's files and the journal
        are compared, and nothing of yours is put back. Unconfined, the files the loop's own
        session writes in your checkout (its log, `> night.log`) are the loop's, not the run's.
        """
        self.session = session
        self.confined = confined
        # (storage stamp, refs)
        self._refs_seen: tuple[tuple[object, ...], dict[str, str]] | None = None
        self.watch_journal = watch_journal
        self.ignore_refs = ignore_refs
        self.checkout = checkout
        self.common = checkout.common_dir
        self.journal = journal.resolve()
        mine = [journal, *derived_paths(journal), *([own] if own is not None else []), *skip]
        self._skip = [rel for rel in map(self._relative, mine) if rel]
        self.mirror = JournalMirror(self.journal, mirror) if mirror is not None else None
        if self.mirror is not None and watch_journal:
            try:
                self.mirror.sync()
            except OSError:
                # A full disk: the copy is only a way to put a wiped journal back. Without it
                # a wipe is still caught, and said to be beyond repair.
                self.mirror.drop()
                self.mirror = None
        self.expected = self._state(untracked=True)
        self._journal_stamp = self._stamp()
        self._prefix_seen: tuple[tuple[int, int] | None, bool] | None = None  # (stamp, changed)

    # -- what changed ----------------------------------------------------------------------------

    def changes(self, checkout: bool = True) -> list[str]:
        """What differs from the seal; `checkout=False` leaves out the walk of your checkout's
        untracked files (the rest costs a few small reads and one git call)."""
        was, now = self.expected, self._state(untracked=checkout)
        found: list[str] = []
        moved = (now.journal_size, now.journal_tail) != (was.journal_size, was.journal_tail)
        if moved or self._earlier_bytes_changed():
            how = "emptied" if now.journal_size == 0 else "rewritten"
            if now.journal_size > was.journal_size and self._journal_prefix_intact():
                forged = len(self._appended_here())
                how = f"appended to ({forged} line(s) of this session)" if forged else ""
            if how:
                found.append(f"the journal {self.journal} was {how}")
        for name in sorted(set(was.files) | set(now.files)):
            if _differs(was.files.get(name), now.files.get(name)):
                found.append(
                    f"{self._git_path(name)} was {_how(was.files.get(name), now.files.get(name))}"
                )
        for ref in sorted(set(was.refs) | set(now.refs)):
            old, new = was.refs.get(ref), now.refs.get(ref)
            if old != new:
                how = "added" if old is None else "deleted" if new is None else "moved"
                found.append(f"ref {ref} was {how}")
        if now.checkout_branch != was.checkout_branch:
            found.append(
                f"your checkout was switched from {_branch(was.checkout_branch)} to "
                f"{_branch(now.checkout_branch)}"
            )
        if checkout and now.untracked != was.untracked:
            loops = self._loop_outputs()
            added = sorted({p for p, *_ in now.untracked} - {p for p, *_ in was.untracked} - loops)
            changed = sorted({p for p, *_ in now.untracked ^ was.untracked} - set(added) - loops)
            if added:
                found.append(f"untracked files appeared in your checkout: {_names(added)}")
            if changed:
                found.append(f"untracked files of your checkout changed: {_names(changed)}")
        return found

    # -- putting back ----------------------------------------------------------------------------

    def restore(self) -> list[str]:
        """Put back what can be put back; returns what could not be (for the user)."""
        was = self.expected
        left: list[str] = []
        # The files first: a `core.fsmonitor` or `core.hooksPath` in the config would run in
        # every git call made to put the rest back.
        for name in sorted(set(was.files) | set(self._files())):
            old = was.files.get(name)
            if not _differs(old, _file_state(self.common / name)):
                continue
            try:
                put = self._put_file(name, old)
            except OSError as exc:
                left.append(f"{self._git_path(name)} could not be put back: {exc.strerror}")
                continue
            if not put:
                left.append(
                    f"{self._git_path(name)} could not be put back (it was too big to keep)"
                )
        now = self._state(untracked=False)
        if now.checkout_branch != was.checkout_branch:
            self._restore_branch(was.checkout_branch, left)
        stash_was, stash_now = was.refs.get("refs/stash"), now.refs.get("refs/stash")
        if stash_now is not None and stash_now != stash_was:
            popped = self.checkout.run("stash", "pop", "--index", "--quiet")
            if not popped.ok:
                left.append(
                    f"a stash was taken from your checkout and could not be popped back "
                    f"(`git stash pop` in {self.checkout.path}): {popped.err.strip()[:200]}"
                )
            now = self._state(untracked=False)
        for ref in sorted(set(was.refs) | set(now.refs)):
            old_sha, new_sha = was.refs.get(ref), now.refs.get(ref)
            if old_sha == new_sha:
                continue
            result = (
                self.checkout.run("update-ref", "-d", ref)
                if old_sha is None
                else self.checkout.run("update-ref", ref, old_sha)
            )
            if not result.ok:
                left.append(f"ref {ref} could not be put back: {result.err.strip()[:200]}")
        try:
            self._restore_journal(left)
        except OSError as exc:
            left.append(f"the journal {self.journal} could not be put back: {exc.strerror}")
        return left

    def _put_file(self, name: str, old: _FileState | None) -> bool:
        path = self.common / name
        if old is None:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            return True
        if old.data is None:
            return False
        with contextlib.suppress(FileNotFoundError):
            if path.is_symlink() or path.is_dir():
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(old.data)
        return True

    def _restore_branch(self, branch: str, left: list[str]) -> None:
        if branch.startswith("refs/"):
            result = self.checkout.run("symbolic-ref", "HEAD", branch)
        else:  # it was detached at a commit
            result = self.checkout.run("update-ref", "--no-deref", "HEAD", branch)
        if not result.ok:
            left.append(
                f"your checkout could not be put back on {_branch(branch)}: "
                f"{result.err.strip()[:200]}"
            )

    def _restore_journal(self, left: list[str]) -> None:
        was = self.expected
        size, tail = self._journal_state()
        same = (size, tail) == (was.journal_size, was.journal_tail)
        if same and not self._earlier_bytes_changed():
            return
        if was.journal_size < 0:  # there was none: the run made it
            self.journal.unlink(missing_ok=True)
            return
        if size > was.journal_size and self._journal_prefix_intact():
            # Lines the run appended as this session's go; another session's appends stay.
            appended = self._appended()
            kept = [line for line in appended if not self._of_this_session(line)]
            if len(kept) == len(appended):
                return
            with self.journal.open("r+b") as f:
                f.truncate(was.journal_size)
                f.seek(was.journal_size)
                f.write(b"".join(kept))
                f.flush()
                os.fsync(f.fileno())
            return
        if self.mirror is None or not self.mirror.restore(was.journal_size):
            left.append(
                f"the journal {self.journal} could not be put back (no copy of it): restore "
                "it from a backup before the next run"
            )

    # -- reading ---------------------------------------------------------------------------------

    def _state(self, untracked: bool) -> _State:
        size, tail = self._journal_state()
        if self.confined:  # a run could not have changed these: they are yours
            return _State(self._file_states(), {}, "", frozenset(), size, tail)
        return _State(
            files=self._file_states(),
            refs=self._refs(),
            checkout_branch=self._checkout_branch(),
            untracked=self._untracked() if untracked else self.expected.untracked,
            journal_size=size,
            journal_tail=tail,
        )

    def _file_states(self) -> dict[str, _FileState | None]:
        return {name: _file_state(self.common / name) for name in self._files()}

    def _loop_outputs(self) -> set[str]:
        """Your checkout's files the loop's own session holds open (its redirected output), as
        `ls-files` names them."""
        root = self.checkout.path.resolve()
        return {str(p.relative_to(root)) for p in files_of_session(root)}

    def _files(self) -> list[str]:
        names = [
            n for n in GIT_FILES if (self.common / n).exists() or (self.common / n).is_symlink()
        ]
        for directory in ("hooks", "worktrees"):
            root = self.common / directory
            if not root.is_dir():
                continue
            for dirpath, dirnames, filenames in os.walk(root):
                here = Path(dirpath)
                if directory == "worktrees":
                    # Only each worktree's own config: its index and HEAD move with its work.
                    names += [
                        str((here / f).relative_to(self.common))
                        for f in filenames
                        if f == "config.worktree"
                    ]
                    continue
                names += [str((here / f).relative_to(self.common)) for f in filenames]
                names += [
                    str((here / d).relative_to(self.common))
                    for d in dirnames
                    if (here / d).is_symlink()
                ]
        # The ones the seal was taken with, even if gone now: a deleted hook is a change.
        expected = getattr(self, "expected", None)
        if expected is not None:
            names += [n for n in expected.files if n not in names]
        return sorted(set(names))

    def _refs(self) -> dict[str, str]:
        # Asked after every run of a candidate: git is asked again only when a file or
        # directory where refs live has changed since (a write moves its ctime, which no one
        # can set back), saving a git process a run.
        stamp = tree_stamp(self.common / name for name in REF_STORAGE)
        if stamp is not None and self._refs_seen is not None and self._refs_seen[0] == stamp:
            return self._refs_seen[1]
        out = self.checkout.run("for-each-ref", "--format=%(refname)%00%(objectname)").out
        refs = {}
        for line in out.splitlines():
            name, _, sha = line.partition("\0")
            if name and name not in self.ignore_refs and not name.startswith(SESSION_REFS):
                refs[name] = sha
        self._refs_seen = (stamp, refs) if stamp is not None else None
        return refs

    def _checkout_branch(self) -> str:
        return self.checkout.head_ref()  # detached: the commit

    def _untracked(self) -> frozenset[tuple[str, int, int]]:
        out = self.checkout.run("ls-files", "--others", "--exclude-standard", "-z").out
        found = set()
        for rel in filter(None, out.split("\0")):
            if any(rel == s or rel.startswith(s) for s in self._skip):
                continue  # the journal and what is derived from it (compared on their own), state
            path = self.checkout.path / rel
            try:
                stat = path.lstat()
            except OSError:
                continue
            found.add((rel, stat.st_size, stat.st_mtime_ns))
        return frozenset(found)

    def _journal_state(self) -> tuple[int, str]:
        if not self.watch_journal:
            return 0, ""
        try:
            size = self.journal.stat().st_size
        except FileNotFoundError:
            return -1, ""
        return size, journal_tail(self.journal, size)

    def _appended(self) -> list[bytes]:
        """The lines the journal gained since the seal (bounded: a run that appends more than
        64 MiB is read that far, and the rest counts as this session's)."""
        with self.journal.open("rb") as f:
            f.seek(max(self.expected.journal_size, 0))
            data = f.read(64 * 1024 * 1024 + 1)
        return data.splitlines(keepends=True)

    def _appended_here(self) -> list[bytes]:
        return [line for line in self._appended() if self._of_this_session(line)]

    def _of_this_session(self, line: bytes) -> bool:
        """A line that is not another session's well-formed record: this session's, or a
        forgery of unknown allegiance (both are the run's doing)."""
        try:
            found = json.loads(line)
        except ValueError:
            return True
        other = isinstance(found, dict) and isinstance(found.get("session"), str)
        return not (other and self.session is not None and found["session"] != self.session)

    def _journal_prefix_intact(self) -> bool:
        size = self.expected.journal_size
        return (
            journal_tail(self.journal, size) == self.expected.journal_tail
            and not self._earlier_bytes_changed()
        )

    def _stamp(self) -> tuple[int, int] | None:
        """The journal's identity and change time: a write moves the change time, which no
        one can set back."""
        try:
            st = self.journal.stat()
        except OSError:
            return None
        return st.st_ino, st.st_ctime_ns

    def _earlier_bytes_changed(self) -> bool:
        """Whether the journal's bytes before the seal's length differ from the mirror's (an
        edit further back than the hashed tail). Read whole only when something wrote the
        journal since the seal; without a mirror, only the tail is compared."""
        stamp = self._stamp()
        if not self.watch_journal or self.mirror is None or stamp == self._journal_stamp:
            return False
        # Asked several times a look (changes, then restore): the journal read once a write.
        if self._prefix_seen is None or self._prefix_seen[0] != stamp:
            self._prefix_seen = (stamp, not self.mirror.same_prefix(self.expected.journal_size))
        return self._prefix_seen[1]

    def _relative(self, path: Path) -> str | None:
        """`path` as `ls-files` names it (a prefix of the journal's own files, or a folder's
        with its slash); None outside the checkout."""
        try:
            rel = path.resolve().relative_to(self.checkout.path.resolve())
        except ValueError:
            return None
        return f"{rel}/" if path.is_dir() else str(rel)

    def _git_path(self, name: str) -> str:
        return str(self.common / name)


def _differs(old: _FileState | None, new: _FileState | None) -> bool:
    if old is None or new is None:
        return old is not new
    return (old.size, old.digest) != (new.size, new.digest)


def _how(old: _FileState | None, new: _FileState | None) -> str:
    return "added" if old is None else "deleted" if new is None else "changed"


def _branch(ref: str) -> str:
    return ref.removeprefix("refs/heads/") if ref.startswith("refs/") else f"a detached {ref[:10]}"


def _names(paths: list[str]) -> str:
    shown = ", ".join(paths[:5])
    return shown + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
