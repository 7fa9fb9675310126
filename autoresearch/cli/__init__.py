"""The command line: parse arguments, load the config, call the library. Nothing else lives here.

One module per group of commands (session.py, init.py, agents.py, review.py), each with its command
functions, its `COMMANDS` and `add_parsers`; this module assembles them and is the one place
where a `UserError` becomes `error: ...` and exit code 1.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from ..bench.environ import pin_blas_threads
from ..errors import UserError
from ..inert import InertStream
from ..loop.signals import install_stop_handlers
from . import agents, init, night, review
from .common import EXIT_FAILED, EXIT_USER_ERROR

__all__ = ["COMMANDS", "EXIT_FAILED", "EXIT_USER_ERROR", "TRACEBACK_ENV", "build_parser", "main"]

TRACEBACK_ENV = "AUTORESEARCH_TRACEBACK"
LONG_RUNNING = (
    "run",
    "confirm",
    "try",
)  # a signal asks them for a clean stop, from the first moment
# Commands whose standard streams carry a protocol, not text for a terminal (MCP's JSON-RPC on
# stdin and stdout): every other command's output goes through `inert`.
RAW_OUTPUT = ("mcp",)
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    **night.COMMANDS,
    **init.COMMANDS,
    **agents.COMMANDS,
    **review.COMMANDS,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autoresearch",
        description="Unattended performance-optimization loops: apply a hypothesis, measure it, "
        "keep it or revert it, and journal why.",
        epilog=f"Set {TRACEBACK_ENV}=1 to see the traceback behind an error.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for group in (night, init, agents, review):
        group.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The console script: one place where a UserError becomes `error: ...` and exit 1."""
    pin_blas_threads()  # before any command imports numpy
    args = build_parser().parse_args(argv)
    if args.command in LONG_RUNNING:
        install_stop_handlers()
    if args.command not in RAW_OUTPUT:
        sys.stdout, sys.stderr = InertStream(sys.stdout), InertStream(sys.stderr)
    try:
        return COMMANDS[args.command](args)
    except UserError as exc:
        if os.environ.get(TRACEBACK_ENV):
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    # Before OSError, of which it is one: `autoresearch history | head`: the reader has what
    # it wanted.
    except BrokenPipeError:
        if sys.__stdout__ is not None:  # None only when started with no stdout at all
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.__stdout__.fileno())
        return 0
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        if os.environ.get(TRACEBACK_ENV):
            traceback.print_exc()
        print(f"error: {full_disk(exc)}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


def full_disk(exc: OSError) -> str:
    """What a full disk is said as, wherever it was met: the file, the file system it is on
    (its mount point) and what to do; nothing was half written (atomic.py)."""
    path = Path(exc.filename or ".").resolve()
    mount = next((p for p in (path, *path.parents) if os.path.ismount(p)), Path("/"))
    try:
        stat = os.statvfs(mount)
        left = f", {stat.f_bavail * stat.f_frsize:,} bytes free"
    except OSError:
        left = ""
    return (
        f"{exc.filename or 'a file'}: the file system mounted at {mount} is full{left} "
        f"({exc.strerror}): free space there, and run again to resume"
    )
