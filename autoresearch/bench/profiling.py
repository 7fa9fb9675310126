"""A profile of the best: `[profile] command` run once in its tree, confined like its bench runs
but off the timed ones, writing its profile where `AUTORESEARCH_PROFILE_OUT` says; read back
as folded stacks (profiles.py), converted by the profiler's own tool where it needs one
(`go tool pprof -traces -lines`, `perf script`)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UserError
from ..files import read_bounded
from ..process.capture import capture
from ..profiles import Folded, fold
from ..repo.gitrepo import open_repo
from ..repo.workspace import add_detached_tree
from .channel import PROFILE_ENV, PROFILE_NAME
from .handed import moved_to
from .measure import Harness

if TYPE_CHECKING:
    from ..config import Config
    from .sandbox import Sandbox

__all__ = ["PROFILE_ENV", "profile_aside", "take_profile"]

MAX_PROFILE_BYTES = 256 * 1024 * 1024
CONVERT_TIMEOUT_S = 300
CONVERTERS = {
    "pprof": lambda path: ["go", "tool", "pprof", "-traces", "-lines", str(path)],
    "perf": lambda path: ["perf", "script", "-i", str(path)],
}


def take_profile(harness: Harness, cwd: Path, log: Path) -> tuple[Folded | None, str]:
    """One profiling run in `cwd`: its folded stacks, or None and why not (said, never
    raised: a profile that failed costs the night nothing)."""
    profile = harness.config.profile
    sandbox = getattr(harness.runner, "sandbox", None)
    # Where the run saw its tree, and where it is: the files a profile names are under one.
    roots = (str(cwd), str(cwd.resolve()), str(sandbox.seen_at(cwd.resolve())) if sandbox else "")
    out = cwd / PROFILE_NAME
    out.unlink(missing_ok=True)
    try:
        run = harness.profile_run(cwd, log)
        if not run.ok:
            return None, f"the profile run failed ({run.describe()}); log: {log}"
        try:
            raw = read_bounded(out, MAX_PROFILE_BYTES, "profile", follow=False)
        except UserError as exc:
            return None, f"no profile written to ${PROFILE_ENV}: {exc}; log: {log}"
        text = _as_text(profile.format, out, raw, cwd, sandbox)
        if text is None:
            return None, f"cannot read the {profile.format} profile ({_converter(profile.format)})"
        folded = fold(text, profile.format, roots)
        if not folded:
            return None, f"the profile holds no samples; log: {log}"
        return folded, ""
    finally:
        with contextlib.suppress(OSError):
            out.unlink()


def _as_text(format: str, path: Path, raw: bytes, cwd: Path, sandbox: Sandbox | None) -> str | None:
    """The profile as text: itself when folded, else what its converter prints, run in the
    sandbox the profile was taken in: the binaries it names (perf's) are where that run saw
    its tree (sandbox.py, one path), not where the tree is."""
    if format not in CONVERTERS:
        return raw.decode("utf-8", errors="replace")
    if sandbox is None:
        done = capture(CONVERTERS[format](path), cwd=cwd, timeout_s=CONVERT_TIMEOUT_S)
        return done.text() if done.ok else None
    confined = sandbox.wrap(cwd, {})
    try:
        first, passed = moved_to(confined.handed)
        done = capture(
            [*first, *confined.argv, *CONVERTERS[format](sandbox.seen(cwd, path))],
            cwd=cwd,
            timeout_s=CONVERT_TIMEOUT_S,
            env=confined.env,
            pass_fds=passed,
        )
    finally:
        confined.close()
    return done.text() if done.ok else None


def _converter(format: str) -> str:
    return " ".join(CONVERTERS[format]("FILE")) + " failed" if format in CONVERTERS else "unread"


def profile_aside(config: Config, commit: str, env: dict[str, str]) -> tuple[Folded | None, str]:
    """A profile of `commit`, built and run in a worktree of its own (removed after, with its
    logs), without a session open: what `autoresearch profile --fresh` asks for."""
    repo = open_repo(config.repo_path, config.target.git_hooks)
    scratch = Path(tempfile.mkdtemp(prefix="autoresearch-profile-"))
    tree = scratch / "tree"
    logs = scratch
    try:
        add_detached_tree(repo, tree, commit)
        harness = Harness(config, env=env, stop=None)
        built = harness.build(tree, logs / "build.log")
        if built is not None and not built.ok:
            return None, f"the build failed ({built.describe()}); log: {logs / 'build.log'}"
        return take_profile(harness, tree, logs / "profile.log")
    finally:
        repo.run("worktree", "remove", "--force", str(tree))
        repo.run("worktree", "prune")
        shutil.rmtree(scratch, ignore_errors=True)
