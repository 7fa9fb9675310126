"""Confinement of the target's code: each build, bench, sentinel and checks run of an arm inside
a bubblewrap sandbox where only that arm's own worktree, its own caches and a private /tmp can
be written.

What a candidate could otherwise do with the user's full rights (write into the baseline's tree
so that the best measures slow, leave a daemon behind, change the repository's hooks or config,
rewrite the journal) it cannot do here: the rest of the file system is mounted read-only, the
run has its own pid namespace (nothing it starts outlives it: bwrap is the namespace's init and
dies with the run's process group), and no network unless `[sandbox] network = true`. The
guard (repo/guard.py) still inspects afterwards what it can see; confinement is the first line.

Caches a toolchain needs to write (`[sandbox] caches`, e.g. `GOCACHE = "go-build"`) are one
directory per arm, beside the arm's tree (`<state>/caches/<arm>/<name>`), so that a candidate's
build cannot leave an entry the baseline's build would pick up.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..atomic import write_text_atomic
from ..errors import UserError
from ..files import gitdir_of
from ..journal.placement import Confinement
from ..statuses import SandboxMode
from .bwrap import bwrap, bwrap_problem, privileges, socket_filter
from .covers import Shown, can_hide, covered_whole, hidden_homes, home_dir, resolved, shown_only
from .environ import no_vcs_stamp, offline_switches
from .fetched import fetched_dir
from .handed import ARGS_FD, SECCOMP_FD
from .private_tmp import named_paths, named_under_tmp, private_tmp, private_tmp_mounts, under
from .seccomp import run_filter_fd
from .tool_ways import stores, tool_ways

if TYPE_CHECKING:
    from ..config import Config

__all__ = [
    "Confined",
    "Sandbox",
    "keeps_out",
    "sandbox_for",
    "unconfined_warning",
]

# Every confined run gets a cache directory of its arm's own as XDG_CACHE_HOME: the toolchains
# that follow it (go's build cache, pip, ...) work confined without a setting, cold at first.
DEFAULT_CACHE_ENV, DEFAULT_CACHE = "XDG_CACHE_HOME", "xdg"
# Toolchains that take their cache from a variable of their own before XDG_CACHE_HOME: one the
# user pinned outside the sandbox's writable paths (GOCACHE=~/.cache/go-build) would be read-only
# in there and fail the build ("read-only file system"), so it moves to the arm's own directory.
PINNED_CACHES = (
    "GOCACHE",
    "GOTMPDIR",
    "PIP_CACHE_DIR",
    "CCACHE_DIR",
    "SCCACHE_DIR",
    "npm_config_cache",
    "CARGO_TARGET_DIR",
    "ZIG_GLOBAL_CACHE_DIR",
)


@dataclass
class Confined:
    """How one run is started confined: the argv before its command, its environment, and the
    descriptors the child is handed (bwrap's arguments, the seccomp program), each at its
    reserved number (handed.py), closed here once it started."""

    argv: list[str]
    env: dict[str, str]
    handed: dict[int, int] = field(default_factory=dict)

    def close(self) -> None:
        for fd in self.handed.values():
            os.close(fd)


@dataclass(frozen=True)
class Sandbox:
    """How runs are confined: `[sandbox]` in the config, resolved against this machine."""

    network: bool = False
    writable: tuple[Path, ...] = ()  # shared by both arms: only what the user chose to share
    caches: dict[str, str] = field(default_factory=dict)  # env var -> per-arm directory name
    seeds: dict[str, Path] = field(default_factory=dict)  # env var -> what a new cache copies
    # The harness's own scripts in the tree (the bench's, the checks'): read-only to the run,
    # so that a timed program cannot rewrite the rest of a script bash is still reading.
    harness: tuple[str, ...] = ()
    # Whether the run may make user namespaces of its own: an agent CLI runs its commands in a
    # sandbox it makes itself (Codex's); the target's runs never need one.
    nested: bool = False
    # Whether the run may make Unix sockets (seccomp.py): an agent CLI talks to its own parts
    # over them; a target's run may not, unless `[sandbox] unix_sockets = true`.
    unix_sockets: bool = False
    # Directories the run does not see (your home, your checkout): an empty tmpfs over each,
    # and again, read-only, only the ways to what the run needs (covers.shown_only): your
    # repository, its writable paths, the tools on its PATH and the stores of what their
    # toolchains fetched (tool_ways.py), what `reveal` names (its commands) and `read` (what
    # `[sandbox] read` names).
    hide: tuple[Path, ...] = ()
    reveal: tuple[Path, ...] = ()
    read: tuple[Path, ...] = ()
    # Variables pointed into the run's own HOME (a cache): variable -> the place there.
    relocate: dict[str, str] = field(default_factory=dict)
    # Paths the run does not see at all (the holdout's files): a directory covered by an
    # empty tmpfs, a file by /dev/null. Only the holdout's own runs go without.
    secret: tuple[Path, ...] = ()
    # Paths under /tmp a run needs although its /tmp is private (the holdout's own files,
    # for its runs): mounted again, read-only.
    shown: tuple[Path, ...] = ()
    # What every run reads although it lies where runs see nothing (what `[bench] fetch`
    # left in the session's state): mounted again, read-only, over what covers it.
    fetched: tuple[Path, ...] = ()
    # Whether both arms' runs see their tree at one path (`seen_at`), with what is around it
    # hidden (`_around`): nothing in a path, the mount table or git tells a run which arm it
    # is in. The target's runs; an agent edits its own scratch tree, with git.
    one_path: bool = False
    # With one_path: the repository's git directory stays in sight (`[sandbox] git`, for a
    # build that reads its version from git).
    git: bool = False
    # A profile's run: its profiler may read the program it samples (py-spy), which a target's
    # other runs may not do to any process (seccomp.py).
    tracing: bool = False

    def wrap(self, cwd: Path, env: dict[str, str]) -> Confined:
        """The bwrap argv that runs a command confined to `cwd`, the environment the command
        needs in there (its per-arm caches, a private TMPDIR) and the descriptors it inherits;
        the caller closes them (`Confined.close`) once the run started."""
        cwd = cwd.resolve()
        seen = self.seen_at(cwd)
        given = {**os.environ, **env}
        argv, handed, env = self._isolated(given, env)
        argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        if self.one_path:  # no process's memory or settings written through /proc
            argv += ["--remount-ro", "/proc"]
        common = _git_common_dir(cwd)  # one read of the tree's `.git` per run
        repository = _repository_paths(common)
        binds, extra = self._writable(cwd, given)
        # First what the run does not see (every mount after it may lie under it), last its
        # tmpfs made read-only. Its /tmp's own directory stays: Codex's sandbox binds /tmp
        # again by the path the mount table names.
        needed = [*repository, *self.shown, *self.read]
        needed += [] if self.one_path else [private_tmp(cwd)]  # for an agent's own sandbox
        # What is bound later at its own place, writable or again: not bound twice.
        later = [dest for source, dest in binds.items() if source == dest]
        # The private /tmp made (emptied) first: the views show its directory when it exists.
        tmp = private_tmp_mounts(cwd, [*repository, *self.shown], given.get("PATH", ""))
        views = self._hidden(needed, later + [p for p in self.fetched if p.is_dir()], given)
        argv += [arg for view in views for arg in view.first]
        argv += tmp
        covers = self._around(cwd, common)
        argv += [arg for cover in covers for arg in ("--tmpfs", str(cover))]
        if self.git and common is not None and covers and under(common, cwd.parent):
            argv += ["--ro-bind", str(common), str(common)]  # a bench host's clone, shown
        for source, dest in binds.items():
            argv += ["--bind", str(source), str(dest)]
        for path in self.fetched:
            argv += ["--ro-bind", str(path), str(path)] if path.is_dir() else []
        argv += self._fixed(cwd, common, bool(covers))
        argv += [arg for cover in covers for arg in ("--remount-ro", str(cover))]
        # A secret in sight only: a cover made in a hidden directory would show its name.
        argv += covered_whole(
            tuple(p for p in self.secret if all(v.sees(p.resolve()) for v in views))
        )
        argv += [arg for view in reversed(views) for arg in view.last]
        argv += ["--chdir", str(seen), "--"]
        # bwrap's arguments through a descriptor: its command line, which the run can read
        # (/proc/1/cmdline is bwrap's), then names none of the paths it mounted.
        handed[ARGS_FD] = _arguments(argv)
        return Confined(
            [bwrap(), "--args", str(ARGS_FD)], {**_seen_in(env, cwd, seen), **extra}, handed
        )

    def _isolated(
        self, given: dict[str, str], env: dict[str, str]
    ) -> tuple[list[str], dict[int, int], dict[str, str]]:
        """The namespaces, privileges and system calls of a run (bwrap's first arguments, the
        descriptors they need) and its environment with what they imply."""
        argv = ["--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        argv += privileges(self.nested)
        handed: dict[int, int] = {}
        # A target's run may not reach into another process (its bench script: seccomp.py),
        # nor write one's memory through /proc, but for a profile's (`tracing`).
        walled = self.one_path and not self.tracing
        refuse = {"unix": not self.unix_sockets, "tracing": walled}
        if any(refuse.values()) and socket_filter() and (fd := run_filter_fd(**refuse)):
            argv += ["--seccomp", str(SECCOMP_FD)]
            handed[SECCOMP_FD] = fd
        if not self.network:
            argv.append("--unshare-net")
            env = {**offline_switches(given), **env}
        if self.one_path and not self.git:  # git out of sight: Go stamps nothing
            env = {**env, **no_vcs_stamp({**given, **env})}
        return argv, handed, env

    def _fixed(self, cwd: Path, common: Path | None, covered: bool) -> list[str]:
        """The tree's `.git` (a linked worktree's `gitdir:` file) and the harness's scripts
        read-only over the writable tree: a run can neither point the tree at another
        repository nor rewrite the script that reports its metrics."""
        argv = []
        for rel in (".git", *self.harness):
            fixed = cwd / rel
            if fixed.exists() and not fixed.is_symlink() and under(fixed.resolve(), cwd):
                linked = rel == ".git" and covered and fixed.is_file()  # a worktree's
                source = (self._neutral_git(cwd, common) if linked else None) or fixed
                argv += ["--ro-bind", str(source), str(self.seen_at(cwd) / rel)]
        return argv

    def _hidden(self, needed: list[Path], later: list[Path], given: dict[str, str]) -> list[Shown]:
        """How the run sees each hidden directory: only the ways to what it needs (`needed`,
        its tools and their stores, and what is bound `later` at its own place)."""
        every = tuple(dict.fromkeys(Path(os.path.realpath(h)) for h in self.hide))
        every = tuple(h for h in every if can_hide(h))
        # One allow-list each: a hidden directory inside another is hidden by the outer's, and
        # none of them is a way to anything (your home is no tool's prefix).
        outer = tuple(h for h in every if not any(o != h and under(h, o) for o in every))
        if not outer:
            return []
        home = home_dir()
        tools = tool_ways(given.get("PATH", ""), self.reveal, every, home or Path("/"))
        needed = resolved([*needed, *tools, *(stores(given, home) if home else [])])
        return [shown_only(directory, needed, tuple(later), every) for directory in outer]

    def _neutral_git(self, cwd: Path, common: Path | None) -> Path | None:
        """With the repository hidden (git unusable in the run), the tree's `.git` as one file
        both arms share: a linked worktree's own names its arm's worktree directory. None:
        git stays in sight (`[sandbox] git`), and the real one is bound."""
        if self.git or common is None:
            return None
        neutral = cwd.parent / "tree.git"
        text = f"gitdir: {common}/worktrees/{cwd.parent.name}\n"
        if not neutral.exists() or neutral.read_text() != text:
            write_text_atomic(neutral, text)
        return neutral

    def seen_at(self, cwd: Path) -> Path:
        """Where a run in the tree `cwd` sees it: with `one_path`, the same place for both
        arms (`<state>/tree`, the state directory's own name for it), else where it is."""
        return cwd.parent / "tree" if self.one_path else cwd

    def seen(self, cwd: Path, path: Path) -> Path:
        """`path`, in the tree `cwd`, where a run in that tree sees it."""
        cwd = cwd.resolve()
        return Path(_seen_path(str(path.resolve()), cwd, self.seen_at(cwd)))

    def _around(self, cwd: Path, common: Path | None) -> list[Path]:
        """What a run with `one_path` does not see, each covered by an empty read-only tmpfs:
        the directory its tree lives in (the other arm, the session's state and in-flight
        marker, the names of both trees) and, unless `git`, the repository's git directory
        (its branch, its worktrees, whether its tree holds changes: what tells the
        candidate's tree from the best's)."""
        if not self.one_path:
            return []
        found = [cwd.parent, *([common] if common is not None and not self.git else [])]
        # One cover each: the outer of two nested paths hides the inner already.
        return [p for p in found if not any(o != p and under(p, o) for o in found)]

    def _writable(
        self, cwd: Path, given: dict[str, str]
    ) -> tuple[dict[Path, Path], dict[str, str]]:
        """What a run in `cwd` may write (its tree, the shared paths, its arm's caches: each
        source -> where the run sees it) and the variables that point it at its caches and
        /tmp."""
        caches = self._arm_caches(cwd, given)
        seen = self.seen_at(cwd)
        shown = {name: seen.parent / "caches" / path.name for name, path in caches.items()}
        if not self.one_path:
            shown = caches
        binds = {cwd: seen, **{p: p for p in self._shared()}}
        binds |= {caches[name]: shown[name] for name in caches}
        extra = {"TMPDIR": "/tmp", **{name: str(path) for name, path in shown.items()}}
        if "HOME" in shown:
            extra |= {var: str(shown["HOME"] / at) for var, at in self.relocate.items()}
        return binds, extra

    def _arm_caches(self, cwd: Path, env: dict[str, str]) -> dict[str, Path]:
        """The arm's own cache directories (variable -> path), each made on first use: what
        a run may write beside its tree."""
        cwd = cwd.resolve()
        writable = [cwd, *self._shared()]
        caches = {
            DEFAULT_CACHE_ENV: DEFAULT_CACHE,
            **self._pinned({**os.environ, **env}, writable),
            **self.caches,
        }
        made = {}
        for name, directory in caches.items():
            made[name] = path = cache_dir(cwd, directory)
            _make_cache(path, self.seeds.get(name))
        return made

    def _shared(self) -> list[Path]:
        return [p.resolve() for p in self.writable if p.exists()]

    @staticmethod
    def _pinned(env: dict[str, str], writable: list[Path]) -> dict[str, str]:
        """The pinned toolchain caches of `env` the run could not write, each to be an arm's
        own directory instead (`env-<VAR>`)."""
        moved = {}
        for name in PINNED_CACHES:
            value = env.get(name)
            path = Path(os.path.expanduser(value)).resolve() if value else None
            if path is not None and not any(under(path, root) for root in writable):
                moved[name] = f"env-{name}"
        return moved

    def describe(self, cwd: Path) -> Confinement:
        """How a run in `cwd` was confined, for the record."""
        cwd = cwd.resolve()
        return Confinement(
            tool="bwrap",
            tree_seen_at=str(self.seen_at(cwd)),
            writable=[
                str(cwd),
                f"/tmp (private: {private_tmp(cwd)})",
                *(str(p) for p in self.writable),
                str(cache_dir(cwd, DEFAULT_CACHE)),
                *(str(cache_dir(cwd, d)) for d in self.caches.values()),
            ],
            network=self.network,
            pid_namespace=True,
            capabilities="none",
            unix_sockets=self.unix_sockets or not socket_filter(),
            user_namespace="--unshare-user" in privileges(self.nested),
        )


def _arguments(argv: list[str]) -> int:
    """A descriptor holding `argv` as bwrap's `--args` reads them: each ended by a NUL."""
    fd = os.memfd_create("autoresearch-bwrap-args", 0)
    os.write(fd, b"".join(os.fsencode(arg) + b"\0" for arg in argv))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _seen_in(env: dict[str, str], cwd: Path, seen: Path) -> dict[str, str]:
    """`env` with each path into the tree (a profile's output file) as the run sees it."""
    return {name: _seen_path(value, cwd, seen) for name, value in env.items()}


def _seen_path(value: str, cwd: Path, seen: Path) -> str:
    """`value`, a path into the tree `cwd`, as a run that sees the tree at `seen` names it;
    anything else as it is."""
    tree = str(cwd)
    if seen == cwd or not (value == tree or value.startswith(tree + "/")):
        return value
    return str(seen) + value[len(tree) :]


def _make_cache(path: Path, seed: Path | None) -> None:
    """An arm's cache, the first time: a copy of `seed` (a warm start), or empty."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if seed is not None and seed.is_dir():
        partial = path.with_name(path.name + ".copying")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(seed, partial, symlinks=True)
        partial.rename(path)  # whole or not at all: a copy cut short is made again
    else:
        path.mkdir()


def arm_caches(cwd: Path) -> Path:
    """Where the caches of the arm whose tree is `cwd` live: beside its tree."""
    return cwd.parent / "caches" / cwd.name


def cache_dir(cwd: Path, name: str) -> Path:
    """An arm's own cache directory: beside its tree, never shared with the other arm."""
    return arm_caches(cwd) / name


def unconfined_warning(why: str) -> str:
    """What the user is told once per run when the target's code runs unconfined."""
    return (
        f"runs are not confined: {why}. The candidate's build, bench and checks run with your "
        "rights beside the baseline: it could write into the baseline's tree, your repository's "
        "git directory (hooks, config, refs) and the journal, and leave processes behind; the "
        "tamper guard inspects afterwards what it can see; nor are [holdout] files hidden "
        "from it or an agent. Install bubblewrap, or set [sandbox] required = true to refuse "
        "to run unconfined"
    )


def sandbox_for(config: Config) -> tuple[Sandbox | None, str | None]:
    """The sandbox runs of this config get, and why they are unconfined when they are; a
    UserError when they must be confined and cannot be."""
    s = config.sandbox
    if s.mode == SandboxMode.OFF:
        return None, '[sandbox] mode = "off"'
    problem = bwrap_problem()
    if problem is not None:
        if s.required or s.mode == SandboxMode.BWRAP:
            why = "required = true" if s.required else 'mode = "bwrap"'
            raise UserError(
                f"{config.path}: runs must be confined ([sandbox] {why}), but {problem}"
            )
        return None, problem
    writable = tuple(config.resolve(os.path.expanduser(p)) for p in s.writable)
    # As named, not resolved: a link on the way is made again in the run's view.
    read = tuple(Path(os.path.abspath(config.base_dir / os.path.expanduser(p))) for p in s.read)
    seeds = {k: config.resolve(os.path.expanduser(v)) for k, v in s.cache_seeds.items()}
    from ..config import script_path  # the config's module builds on this package

    harness = tuple(
        script
        for command in (config.bench.command, config.bench.sentinel_command, config.checks.command)
        if (script := script_path(command))
    )
    commands = (
        config.bench.command,
        config.bench.build,
        config.bench.sentinel_command,
        config.checks.command,
        config.profile.command,
    )
    named = named_paths(commands, tuple(config.resolve(script) for script in harness))
    fetched = fetched_dir(config)
    sandbox = Sandbox(
        network=s.network,
        unix_sockets=s.unix_sockets,
        writable=writable,
        caches=dict(s.caches),
        seeds=seeds,
        harness=harness,
        secret=tuple(config.holdout_files),
        shown=named_under_tmp(named),
        fetched=(fetched,) if fetched is not None else (),
        # Your home and your checkout, beside the arms' trees: your keys and credentials, what
        # you keep in the checkout (untracked files, the package an editable install points
        # an interpreter at), the journal and the queue are not a run's to read; the ways to
        # what it needs stay (the tools on its PATH and their stores, the interpreter its
        # script names in the project's .venv, the repository, what `read` names).
        hide=hidden_homes(config.repo_path),
        reveal=named,
        read=read,
        one_path=True,
        git=s.git,
    )
    return sandbox, None


def keeps_out(config: Config, path: Path) -> bool:
    """Whether the runs of this config are confined and none of them can write under `path`
    (your checkout: what changes there while they run is then yours, repo/seal.py)."""
    sandbox, _ = sandbox_for(config)
    if sandbox is None:
        return False
    path = path.resolve()
    shared = [p.resolve() for p in sandbox.writable]  # a path you gave the runs lets them in
    return not any(under(path, p) or under(p, path) for p in shared)


def _worktree_admin_dir(tree: Path) -> Path | None:
    """A linked worktree's own directory in the repository (`.git/worktrees/<name>`: its
    index and HEAD)."""
    return gitdir_of(tree / ".git")


def _git_common_dir(cwd: Path) -> Path | None:
    """The .git directory a worktree's `.git` file points to (or the tree's own `.git`)."""
    dotgit = cwd / ".git"
    if dotgit.is_dir():
        return dotgit
    admin = _worktree_admin_dir(cwd)
    # <common>/worktrees/<name>: the common directory is two levels up.
    return admin.parent.parent if admin is not None else None


def _repository_paths(common: Path | None) -> list[Path]:
    """What git needs to read in a run's tree: the repository the tree belongs to (`common`,
    its git directory, not your checkout around it: its journal and untracked files are not a
    run's to read), and the object stores it borrows from (`objects/info/alternates`: a
    `git clone --shared`)."""
    if common is None:
        return []
    found = [common]
    try:
        lines = (common / "objects" / "info" / "alternates").read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        if line.strip() and not line.startswith("#"):
            store = Path(line.strip())
            store = store if store.is_absolute() else (common / "objects" / store)
            if store.exists():
                found.append(store.resolve())
    return found
