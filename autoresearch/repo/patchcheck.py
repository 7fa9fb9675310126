"""What a patch touches, and whether it may: scope, protection, escapes, symlinks, binaries."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..statuses import Status
from .globs import matches_any

__all__ = ["PatchProblem", "check_paths", "patch_paths"]

_HEADER_PATH = re.compile(r"^(?:---|\+\+\+) (.+?)(?:\t.*)?$")
_GIT_META_PATH = re.compile(r"^(?:rename|copy) (?:from|to) (.+)$")
_SYMLINK_MODE = re.compile(r"^(?:new file mode|new mode|deleted file mode|old mode) 120000", re.M)
# A gitlink (a submodule's entry): git applies it as an empty directory, and no commit of the
# patch's paths can take it.
_GITLINK_MODE = re.compile(
    r"^(?:(?:new file mode|new mode|deleted file mode|old mode) 160000"
    r"|index [0-9a-f]+\.\.[0-9a-f]+ 160000)$",
    re.M,
)
_BINARY = re.compile(r"^(?:GIT binary patch|Binary files .* differ)$", re.M)


@dataclass(frozen=True)
class PatchProblem:
    """Why a patch may not be applied: `kind` is the record status it leads to."""

    kind: str  # "scope_violation" or "apply_failed"
    message: str


def patch_paths(patch: str) -> list[str]:
    """Every path a unified diff names in its headers, as written (prefix a/ or b/ removed)."""
    found: list[str] = []
    for line in patch.splitlines():
        match = _HEADER_PATH.match(line) or _GIT_META_PATH.match(line)
        if not match:
            continue
        path = _unquote(match.group(1).strip())
        if path == "/dev/null":
            continue
        if line.startswith(("--- ", "+++ ")) and path.startswith(("a/", "b/")):
            path = path[2:]
        if path not in found:
            found.append(path)
    return found


def check_paths(
    patch: str,
    paths: list[str],
    *,
    worktree: Path,
    include: list[str],
    protect: list[str],
    allow_binary: bool,
) -> PatchProblem | None:
    """The first reason the patch may not touch `paths`, or None when it may."""
    if not paths:
        return PatchProblem(
            Status.APPLY_FAILED, "the patch touches no file (is it a unified diff?)"
        )
    if _GITLINK_MODE.search(patch):
        return PatchProblem(
            Status.SCOPE_VIOLATION,
            "the patch adds or changes a gitlink (a submodule's entry, mode 160000), which a "
            "keep cannot commit",
        )
    if _SYMLINK_MODE.search(patch):
        return PatchProblem(Status.SCOPE_VIOLATION, "the patch creates or changes a symbolic link")
    if not allow_binary and (_BINARY.search(patch) or "\0" in patch):
        # A NUL byte in a text hunk is binary content all the same: git applies it as it is.
        return PatchProblem(Status.SCOPE_VIOLATION, "the patch carries binary content")
    for path in paths:
        problem = _check_one(path, worktree, include, protect)
        if problem:
            return PatchProblem(Status.SCOPE_VIOLATION, problem)
    return None


def _check_one(path: str, worktree: Path, include: list[str], protect: list[str]) -> str | None:
    pure = PurePosixPath(path)
    if pure.is_absolute() or path.startswith("~"):
        return f"{path}: absolute path"
    if ".." in pure.parts:
        return f"{path}: escapes the repository ('..')"
    if pure.parts and pure.parts[0] == ".git":
        return f"{path}: inside .git"
    # A symlink anywhere on the way would let a patch write outside the scope it seems to be in.
    probe = worktree
    for part in pure.parts:
        probe = probe / part
        if probe.is_symlink():
            return f"{path}: goes through the symbolic link {probe.relative_to(worktree)}"
    pattern = matches_any(path, protect)
    if pattern:
        return f"{path}: protected (matches '{pattern}')"
    if not matches_any(path, include):
        return f"{path}: outside the scope ({', '.join(include)})"
    return None


def _unquote(path: str) -> str:
    """Undo git's C-style quoting of unusual paths ("a/sp\\303\\251cial")."""
    if not (len(path) >= 2 and path[0] == '"' and path[-1] == '"'):
        return path
    body = path[1:-1].encode("latin-1", errors="backslashreplace").decode("unicode_escape")
    return body.encode("latin-1", errors="replace").decode("utf-8", errors="replace")
