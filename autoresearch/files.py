"""Reading a file someone else made (a queued patch, an agent's hypothesis file, a try's
result): a regular file of bounded size, or a one-line reason why not, never a hang.

`open()` on a FIFO blocks until a writer comes; a link to /dev/zero reads forever; a 20 GB file
fills memory. The file is opened without blocking, looked at through its own descriptor (so
that what is checked is what is read), and read only when it is a regular file within `limit`.
"""

from __future__ import annotations

import functools
import os
import stat
from pathlib import Path

from .errors import UserError

__all__ = ["MAX_HANDED_BYTES", "common_git_dir", "gitdir_of", "read_bounded"]

MAX_HANDED_BYTES = 64 * 1024 * 1024  # no patch or hypothesis of a real night comes near it


def read_bounded(
    path: Path, limit: int = MAX_HANDED_BYTES, what: str = "file", follow: bool = True
) -> bytes:
    """The bytes of `path`; a UserError naming the path when it is not a regular file, is
    bigger than `limit`, or cannot be read (or, unless `follow`, is a symbolic link)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    try:
        fd = os.open(path, flags if follow else flags | os.O_NOFOLLOW)
    except FileNotFoundError:
        if path.is_symlink():
            raise UserError(f"{path}: a symbolic link to nothing") from None
        raise UserError(f"{path}: no such {what}") from None
    except OSError as exc:
        if not follow and path.is_symlink():
            raise UserError(f"{path}: a symbolic link, not the {what} itself; not read") from None
        raise UserError(f"{path}: cannot open the {what}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UserError(f"{path}: not a regular file ({_kind(info.st_mode)}); not read")
        if info.st_size > limit:
            raise UserError(
                f"{path}: {info.st_size:,} bytes, more than the {limit:,} a {what} may have; "
                "not read"
            )
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > limit:  # it grew while being read
                raise UserError(f"{path}: grew past {limit:,} bytes while read; not read")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise UserError(f"{path}: cannot read the {what}: {exc.strerror}") from None
    finally:
        os.close(fd)


def gitdir_of(dotgit: Path) -> Path | None:
    """Where a linked worktree's `.git` file points, resolved; None when it says nothing (or
    is no regular file: a run may have put a FIFO there)."""
    try:
        text = read_bounded(dotgit, 64 * 1024, ".git file").decode("utf-8").strip()
    except (UserError, UnicodeDecodeError):
        return None
    if not text.startswith("gitdir:"):
        return None
    target = Path(text.removeprefix("gitdir:").strip())
    return (target if target.is_absolute() else dotgit.parent / target).resolve()


@functools.lru_cache(maxsize=64)
def common_git_dir(directory: Path) -> Path | None:
    """The common git directory of the repository whose working tree holds `directory`, found
    by its `.git` (a directory, or a linked worktree's `gitdir:` file), without running git or
    importing GitPython (a tenth of a second of a read-only command's start); None when no
    `.git` is found."""
    for here in (directory, *directory.parents):
        dotgit = here / ".git"
        if dotgit.is_dir():
            return dotgit
        if dotgit.exists():
            admin = gitdir_of(dotgit)
            if admin is not None and (admin / "commondir").is_file():
                common = (admin / "commondir").read_text(encoding="utf-8").strip()
                return (admin / common).resolve()
            return admin
    return None


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return name
    return "not a file"
