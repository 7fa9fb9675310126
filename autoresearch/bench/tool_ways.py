"""What a confined run needs of the directories it otherwise does not see (your home, your
checkout): the tools it runs and what they read, by an allow-list.

A tool on PATH is shown by its program directory and, around it, the parts of its install a
program reads (`bin/`, `lib/`, `libexec/`, a virtualenv's `pyvenv.cfg`); its whole prefix
only when that prefix is a tool's own install (`~/.nvm/versions/node/v22`, `~/sdk/go`), not a
directory at the top of your home, where other programs' data and your credentials lie beside
the tools (`~/.local/share`, `~/.cargo/credentials.toml`). A toolchain's store of what it
fetched, which an offline build reads (Go's module cache, Cargo's registry, rustup's
toolchains, pyenv's versions), is shown where the variable that moves it says, or at its
default place. Whatever else a build needs from there, `[sandbox] read` names.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..files import read_bounded
from .environ import go_env_file
from .private_tmp import under

__all__ = ["PREFIX_PARTS", "STORES", "stores", "tool_ways"]

# What of a prefix at a home's top its tools read: their programs and libraries.
PREFIX_PARTS = ("bin", "sbin", "lib", "lib64", "libexec", "pyvenv.cfg")
MAX_PYVENV_BYTES = 64 * 1024


@dataclass(frozen=True)
class Store:
    """A toolchain's own directory: the variable that moves it, its place in a home without
    the variable ("": none), and the parts of it a build reads ("": all of it)."""

    variable: str
    default: str
    parts: tuple[str, ...] = ("",)


STORES = (
    Store("GOROOT", ""),
    Store("GOPATH", "go", ("bin", "pkg/mod")),
    Store("GOMODCACHE", "go/pkg/mod"),
    Store("CARGO_HOME", ".cargo", ("bin", "registry", "git", "config.toml", "config")),
    Store("RUSTUP_HOME", ".rustup", ("toolchains", "settings.toml", "update-hashes")),
    Store(
        "PYENV_ROOT",
        ".pyenv",
        ("bin", "libexec", "shims", "versions", "plugins", "pyenv.d", "version"),
    ),
    Store("UV_PYTHON_INSTALL_DIR", ".local/share/uv/python"),
    Store("NVM_DIR", ".nvm", ("nvm.sh", "versions", "alias")),
    Store("npm_config_cache", ".npm", ("_cacache",)),  # what `npm ci --offline` installs from
    Store("YARN_CACHE_FOLDER", ".cache/yarn"),
    Store("PNPM_HOME", ".local/share/pnpm"),
    Store("BUN_INSTALL", ".bun", ("bin", "install")),
    Store("DENO_DIR", ".cache/deno"),
    Store("SDKMAN_DIR", ".sdkman", ("bin", "candidates", "libexec")),
    Store("GRADLE_USER_HOME", ".gradle", ("caches", "wrapper")),
    Store("", ".m2", ("repository",)),
)


def stores(env: dict[str, str], home: Path) -> list[Path]:
    """Where the toolchains' stores are for `env`, each part a build reads (present or not:
    the sandbox shows what is there), and the settings they build by (`go env -w`'s file,
    Cargo's `config.toml`: not their credentials, which are files of their own)."""
    found: list[Path] = [go_env_file({**env, "HOME": str(home)})]
    for store in STORES:
        given = env.get(store.variable, "") if store.variable else ""
        bases = [Path(p) for p in given.split(os.pathsep) if p] if given else []
        if not bases and store.default:
            bases = [home / store.default]
        found += [base / part if part else base for base in bases for part in store.parts]
    return found


def tool_ways(
    path: str, reveal: tuple[Path, ...], hidden: tuple[Path, ...], home: Path
) -> list[Path]:
    """The ways to the tools a run is given, in the `hidden` directories: each PATH entry and
    the directory of each of `reveal` (a file its command names), as named and as resolved,
    and the parts of their installs around them (see the module's text). A prefix at the top
    of `home`, or of a hidden directory, is shown by its parts; a directory that *is* one of
    them, never (a program its command names there, alone)."""
    tops = list(dict.fromkeys(Path(os.path.realpath(h)) for h in (home, *hidden)))
    # Absolute ones only: a relative entry is found from the run's own directory, its tree.
    entries = [Path(e) for e in path.split(os.pathsep) if e.startswith("/")]
    files = [p for p in reveal if p.is_absolute()]
    files += [Path(os.path.realpath(p)) for p in files if p.exists()]
    # A program at the top of one (`~/bench-tool`) alone; never a file of data named there
    # (a script's `cat ~/notes.txt` names what the run is not to read).
    found: list[Path] = [p for p in files if p.parent in tops and _program(p)]
    entries += [p.parent for p in files if p.parent not in tops]
    seen: set[Path] = set()
    while entries:
        entry = entries.pop()
        for place in dict.fromkeys((entry, Path(os.path.realpath(entry)))):
            if place in seen or place in tops:
                continue
            seen.add(place)
            found.append(place)
            found += _install(place, tops, entries)
    return found


def _program(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _install(entry: Path, tops: list[Path], entries: list[Path]) -> list[Path]:
    """What a program in the directory `entry` reads of its install around it: a `bin/`'s
    prefix (`<prefix>/node_modules/.bin` -> `<prefix>`) whole when it is a tool's own, by its
    parts at the top of a home (where other programs' data lies beside it); nothing else for
    a directory of programs that is not a `bin/`. A virtualenv's base interpreter is added
    to `entries`."""
    modules = entry.name == ".bin" and entry.parent.name == "node_modules"
    if entry.name not in ("bin", "sbin") and not modules:
        return []
    prefix = entry.parent.parent if modules else entry.parent
    if prefix in tops or not any(under(prefix, top) for top in tops):
        return [] if prefix in tops else [prefix]
    entries += _base_interpreter(prefix)
    if prefix.parent in tops:
        return [prefix / part for part in PREFIX_PARTS]
    return [prefix]


def _base_interpreter(prefix: Path) -> list[Path]:
    """A virtualenv's base interpreter directory (`home =` in its `pyvenv.cfg`): its Python
    lives there, often in the home too (pyenv's, uv's)."""
    config = prefix / "pyvenv.cfg"
    if not config.is_file():
        return []
    try:
        text = read_bounded(config, MAX_PYVENV_BYTES, "virtualenv config").decode(
            "utf-8", "replace"
        )
    except UserError:
        return []
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip().startswith("/"):
            return [Path(value.strip())]
    return []
