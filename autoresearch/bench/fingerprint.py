"""Where a session ran: enough to tell two machines (or two Go toolchains) apart in a journal."""

from __future__ import annotations

import os
import platform
import shutil
import socket
from pathlib import Path

from .proc import capture

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


def toolchains(cwd: Path, env: dict[str, str]) -> dict[str, str]:
    """The versions of the toolchains the bench finds on its PATH (`env` over the loop's own),
    asked in its tree: what measured, for the record and the PR."""
    path = {**os.environ, **env}.get("PATH")
    found = {}
    for name, command in TOOLCHAINS.items():
        if shutil.which(command[0], path=path) is None:
            continue
        done = capture(command, cwd=cwd, timeout_s=TOOL_TIMEOUT_S, env=env)
        text = (done.text() or done.err.decode("utf-8", "replace")).strip()
        if done.ok and text:
            found[name] = text.splitlines()[0][:200]
    return found


def _version(command: list[str]) -> str | None:
    done = capture(command, cwd=Path.cwd(), timeout_s=TOOL_TIMEOUT_S)
    return done.text().strip() or None if done.ok else None
