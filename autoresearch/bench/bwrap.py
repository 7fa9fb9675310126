"""What this machine's bubblewrap can do: where it is, whether it can make a sandbox here, and
which of its protections the kernel takes (a user namespace of its own, the seccomp filter)."""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path

from ..process.capture import capture
from .seccomp import run_filter_fd

__all__ = ["BWRAP_ENV", "NESTED_ID", "bwrap", "bwrap_problem", "privileges", "socket_filter"]

BWRAP_ENV = "AUTORESEARCH_BWRAP"
NESTED_ID = "1000"  # who root is inside an agent's sandbox (see privileges)


def bwrap() -> str:
    """The bubblewrap binary: `AUTORESEARCH_BWRAP` when set (another install), else `bwrap`."""
    return os.environ.get(BWRAP_ENV) or "bwrap"


@functools.cache
def privileges(nested: bool = False) -> list[str]:
    """What a confined run keeps of its user's powers: no capability at all (root's included:
    one could remount the read-only file system writable, or write anywhere past a
    permission), in a user namespace of its own, where this machine allows user namespaces;
    else the capabilities dropped alone. The target's runs cannot make another namespace; a
    `nested` one (an agent CLI whose own sandbox makes one) can, which the kernel allows a
    process without capabilities only when it is not root inside: root's runs are mapped to an
    ordinary id there (NESTED_ID), still owning what root owns outside."""
    if not nested:
        flags = ["--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    else:
        ids = ["--uid", NESTED_ID, "--gid", NESTED_ID] if os.geteuid() == 0 else []
        flags = ["--unshare-user", *ids, "--cap-drop", "ALL"]
    probe = [bwrap(), "--die-with-parent", *flags, "--ro-bind", "/", "/", "--", "true"]
    works = shutil.which(bwrap()) is not None and capture(probe, cwd=Path("/"), timeout_s=30).ok
    return flags if works else ["--cap-drop", "ALL"]


@functools.cache
def socket_filter() -> bool:
    """Whether bwrap here loads the filter that refuses Unix sockets and reaching into another
    process (seccomp.py): this machine's architecture has one and the kernel takes it."""
    fd = run_filter_fd()
    if fd is None:
        return False
    try:
        probe = [bwrap(), "--die-with-parent", "--seccomp", str(fd), "--ro-bind", "/", "/"]
        return capture([*probe, "--", "true"], cwd=Path("/"), timeout_s=30, pass_fds=(fd,)).ok
    finally:
        os.close(fd)


@functools.cache
def bwrap_problem() -> str | None:
    """Why bubblewrap cannot confine runs on this machine, or None when it can."""
    if shutil.which(bwrap()) is None:
        return f"{bwrap()} is not installed (the Debian package `bubblewrap`)"
    probe = [bwrap(), "--die-with-parent", *privileges(), "--unshare-pid", "--unshare-net"]
    probe += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "true"]
    done = capture(probe, cwd=Path("/"), timeout_s=30)
    if not done.ok:
        return f"bwrap cannot make a sandbox here ({done.why()}; are user namespaces off?)"
    return None
