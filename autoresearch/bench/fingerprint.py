"""Where a session ran: enough to tell two machines (or two Go toolchains) apart in a journal."""

from __future__ import annotations

import contextlib
import os
import platform
import re
import shutil
import socket
from pathlib import Path

from ..errors import UserError
from ..files import read_bounded
from ..process.capture import capture

__all__ = ["environment", "toolchains"]

TOOL_TIMEOUT_S = 10
# What a bench is built and run with, as `<tool> --version` says it (`java -version` prints on
# stderr); the first line of each, for the tools on the bench's PATH.
TOOLCHAINS = {
    "go": ["go", "version"],
    "rustc": ["rustc", "--version"],
    "cargo": ["cargo", "--version"],
    "python": ["python3", "--version"],
    "java": ["java", "-version"],
    "cc": ["cc", "--version"],
    "node": ["node", "--version"],
}


def environment() -> dict[str, str | int | None]:
    """Host, CPU count, OS, Python, Go and git versions; a missing tool is null."""
    return {
        "host": socket.gethostname(),
        "cpu_count": os.cpu_count(),
        "os": platform.platform(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "go": _version(["go", "version"]),
        "git": _version(["git", "--version"]),
    }


# What picks a toolchain's version besides the binary PATH finds: version managers' variables
# (rustup, pyenv, Go's toolchain switch, ...) and the pin files they read in the tree.
VERSION_VARIABLES = ("RUSTUP_TOOLCHAIN", "PYENV_VERSION", "GOTOOLCHAIN", "JAVA_HOME", "ASDF_DIR")
PIN_FILES = (
    "rust-toolchain",
    "rust-toolchain.toml",
    ".python-version",
    ".tool-versions",
    ".nvmrc",
    ".node-version",
    ".java-version",
    ".sdkmanrc",
    "go.mod",
    "go.work",
)
# By what picks the versions: asked once per process.
_ASKED: dict[tuple[object, ...], dict[str, str]] = {}


# The words that say a command (or the script it runs) uses a toolchain.
USES = {
    "go": ("go",),
    "rustc": ("cargo", "rustc"),
    "cargo": ("cargo",),
    "python": ("python", "python3", "pytest", "pip", "uv"),
    "java": ("java", "mvn", "gradle", "gradlew"),
    "cc": ("cc", "gcc", "clang", "cmake", "make", "g++", "c++", "ninja"),
    "node": ("node", "npm", "npx", "yarn", "pnpm", "vitest", "bun"),
}
MAX_SCRIPT_BYTES = 256 * 1024
MAX_READ_BYTES = 16 * 1024 * 1024  # a script or pin file bigger than this is not read


def toolchains(cwd: Path, env: dict[str, str], commands: tuple[str, ...] = ()) -> dict[str, str]:
    """The versions of the toolchains the bench finds on its PATH (`env` over the loop's own)
    and runs (`commands`, and the scripts in the tree they name, say it), asked in its tree:
    what measured, for the record and the PR. Asked again only when a binary, a version
    manager's variable or a pin file in the tree has changed (a keep that bumps
    rust-toolchain.toml is measured with the new one, and said so)."""
    merged = {**os.environ, **env}
    used = _used(cwd, commands)
    found = {}
    for name, command in TOOLCHAINS.items():
        where = shutil.which(command[0], path=merged.get("PATH"))
        if where is not None and name in used:
            found[name] = where
    key = _version_key(cwd, merged, found)
    if key not in _ASKED:
        _ASKED[key] = _ask(cwd, env, found)
    return dict(_ASKED[key])


def _used(cwd: Path, commands: tuple[str, ...]) -> set[str]:
    """The toolchains whose words `commands` or the scripts they run in `cwd` say."""
    text = " ".join(commands)
    for word in " ".join(commands).split():
        script = cwd / word.removeprefix("./")
        if "/" in word or "." in word:
            with contextlib.suppress(OSError, ValueError, UserError):
                if script.resolve().is_relative_to(cwd.resolve()):
                    read = read_bounded(script, MAX_READ_BYTES, "script")
                    text += " " + read[:MAX_SCRIPT_BYTES].decode("utf-8", "replace")
    words = set(re.findall(r"[\w.+-]+", text))
    words |= {w.rsplit("/", 1)[-1] for w in re.findall(r"[\w./+-]+", text)}
    return {name for name, says in USES.items() if words & set(says)}


def _ask(cwd: Path, env: dict[str, str], found: dict[str, str]) -> dict[str, str]:
    versions = {}
    for name in found:
        done = capture(TOOLCHAINS[name], cwd=cwd, timeout_s=TOOL_TIMEOUT_S, env=env)
        text = (done.text() or done.err.decode("utf-8", "replace")).strip()
        if done.ok and text:
            versions[name] = text.splitlines()[0][:200]
    return versions


def _version_key(cwd: Path, env: dict[str, str], found: dict[str, str]) -> tuple[object, ...]:
    binaries: list[tuple[str, str, int | None, int | None]] = []
    for name, where in sorted(found.items()):
        try:
            stat = os.stat(where)
            binaries.append((name, os.path.realpath(where), stat.st_mtime_ns, stat.st_size))
        except OSError:
            binaries.append((name, where, None, None))
    pins = []
    for name in PIN_FILES:
        try:
            pins.append((name, read_bounded(cwd / name, MAX_READ_BYTES, "pin file")))
        except UserError:
            continue
    variables = tuple((name, env.get(name)) for name in VERSION_VARIABLES)
    return (env.get("PATH"), tuple(binaries), tuple(pins), variables)


def _version(command: list[str]) -> str | None:
    done = capture(command, cwd=Path.cwd(), timeout_s=TOOL_TIMEOUT_S)
    return done.text().strip() or None if done.ok else None
