"""Where a session ran: enough to tell two machines (or two Go toolchains) apart in a journal."""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path

from .proc import capture

__all__ = ["environment"]

TOOL_TIMEOUT_S = 10


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


def _version(command: list[str]) -> str | None:
    done = capture(command, cwd=Path.cwd(), timeout_s=TOOL_TIMEOUT_S)
    return done.text().strip() or None if done.ok else None
