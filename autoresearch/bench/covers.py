"""What a confined run does not see: a path covered whole (a directory by an empty tmpfs, a
file by /dev/null), or a directory of which it sees only the ways to what it needs, by an
allow-list (your home, your checkout beside the trees made from it): not even the names of
the rest."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .private_tmp import under

__all__ = [
    "Shown",
    "can_hide",
    "covered_whole",
    "hidden_homes",
    "home_dir",
    "resolved",
    "shown_only",
]

HOMES = Path("/home")  # every user's home: the runs see them only the ways through
RUNTIME = Path("/run/user")  # every user's runtime directory: the same


@dataclass(frozen=True)
class Shown:
    """How a run sees a directory it sees only the ways through: the mounts to make first
    and those to make last, and what of it is bound again."""

    hidden: Path | None  # None: nothing is
    first: list[str] = field(default_factory=list)
    last: list[str] = field(default_factory=list)
    bound: tuple[Path, ...] = ()

    def sees(self, path: Path) -> bool:
        """Whether a run sees `path` (a path the caller resolved)."""
        if self.hidden is None or not under(path, self.hidden):
            return True
        return any(under(path, b) for b in self.bound)


def can_hide(directory: Path) -> bool:
    """Whether a run can be shown only the ways through `directory`: not `/` (the file system
    itself), nor what a run's private /tmp hides whole, nor what is not a directory."""
    return directory != Path("/") and not under(directory, Path("/tmp")) and directory.is_dir()


def shown_only(
    hidden: Path, needed: list[Path], later: tuple[Path, ...] = (), tops: tuple[Path, ...] = ()
) -> Shown:
    """bwrap arguments that show of the directory `hidden` only the ways to `needed`: an
    empty tmpfs over it (the names of what it holds are gone too), each needed path under it
    bound again read-only at its place (a link on the way made again, and what it leads to
    shown), then, once every later mount is made under it, the tmpfs made read-only. A path
    that *is* `hidden`, or one of the other hidden directories (`tops`: your home inside
    `/home`), does not uncover it. `needed` as named and as resolved (`resolved`). What the
    caller binds `later` at its own place (a writable tree) is not bound here: two mounts stacked on
    one place, read-only under writable, read as read-only to a tool that looks its path up
    in the mount table (Codex's sandbox does)."""
    hidden = Path(os.path.realpath(hidden))
    if not can_hide(hidden):
        return Shown(None)
    closed = {hidden, *tops}
    first = ["--tmpfs", str(hidden)]
    links: dict[Path, str] = {}
    binds: list[Path] = []
    todo = [n for n in resolved(needed) if n not in closed and under(n, hidden)]
    while todo:
        path = todo.pop()
        way = _first_link(hidden, path)
        if way is None:
            if os.path.exists(path):
                binds.append(path)
        elif way not in links:
            links[way] = os.readlink(way)
            # One hop at a time: a link on the way of the link's own target is made too.
            target = Path(os.path.normpath(way.parent / links[way])) / path.relative_to(way)
            if under(target, hidden) and target not in closed:
                todo.append(target)
    binds = [p for p in binds if not any(under(p, bound) for bound in later)]
    binds = [p for p in dict.fromkeys(binds) if not any(o != p and under(p, o) for o in binds)]
    for path in sorted(binds):
        first += ["--ro-bind", str(path), str(path)]
    for link, to in links.items():
        if not any(under(link, bound) for bound in binds):  # else it is there already
            first += ["--symlink", to, str(link)]
    return Shown(hidden, first, ["--remount-ro", str(hidden)], (*binds, *later))


def resolved(paths: list[Path]) -> list[Path]:
    """Each absolute path as named and as resolved (a home reached through a link names its
    stores by the link), once: what `shown_only` is handed, asked once for all the views."""
    named = [p for n in dict.fromkeys(paths) if n.is_absolute() for p in (n, _real(n))]
    return list(dict.fromkeys(named))


def _real(path: Path) -> Path:
    real = os.path.realpath(path)
    return path if real == str(path) else Path(real)


def _first_link(hidden: Path, path: Path) -> Path | None:
    """The first link on the way from `hidden` down to `path`, or None."""
    at = hidden
    for part in path.relative_to(hidden).parts:
        at = at / part
        if at.is_symlink():
            return at
    return None


def covered_whole(paths: tuple[Path, ...]) -> list[str]:
    """bwrap arguments that cover each of `paths` whole, last, over every bind before them."""
    argv: list[str] = []
    for path in paths:
        if path.is_dir():
            argv += ["--tmpfs", str(path)]
        elif path.exists():
            argv += ["--ro-bind", "/dev/null", str(path)]
    return argv


def hidden_homes(checkout: Path) -> tuple[Path, ...]:
    """What runs see only the ways through: your home, every user's (`/home`), the users'
    runtime directories (`/run/user`: their agents' sockets, a registry login) and your
    `checkout`. A home that is `/` (a container's) hides nothing by itself: the others
    still are."""
    home = home_dir()
    found = [home] if home is not None else []
    found += [d for d in (HOMES, RUNTIME) if d.is_dir()]
    return (*(Path(os.path.realpath(d)) for d in found), checkout)


def home_dir() -> Path | None:
    """Your home, resolved; None when there is none to hide (unset with no passwd entry, or
    `/`)."""
    try:
        home = Path(os.path.realpath(Path.home()))
    except RuntimeError:
        return None
    return home if can_hide(home) else None
