"""A seccomp filter that keeps a confined run from making a Unix socket, and from reaching
into another process.

A container engine's socket (`/var/run/docker.sock`), the user's bus or an agent's are files
the sandbox's read-only file system still shows, and connecting to one needs no write: a
candidate could ask the engine to run anything outside the sandbox. Connecting cannot be
filtered by path (seccomp sees the address only as a pointer), so the filter refuses the
socket itself: `socket(AF_UNIX, ...)` fails with EPERM. A pair of connected sockets between
the run's own processes (`socketpair`, asyncio's self-pipe) is still made; so is every other
family (the network namespace decides where those reach).

A target's run may not reach into another process either: the workload is the bench
script's child, as the same user in the same namespaces, and could attach to the script
(`ptrace`), read or write its memory (`process_vm_readv`, `process_vm_writev`) or copy its
descriptors (`pidfd_getfd`): the loop's METRIC channel among them. Those fail with EPERM too,
but in a profile's run (`tracing`), where a profiler (py-spy) reads the program it samples.

bwrap loads the program from a file descriptor (`--seccomp FD`): classic BPF over
`struct seccomp_data` (nr at offset 0, arch at 4, the first argument's low word at 16 on these
little-endian machines). Machines other than x86-64 and arm64 get no filter (`run_filter`
returns None and the record says so).
"""

from __future__ import annotations

import os
import platform
import struct

__all__ = ["run_filter", "run_filter_fd"]

# <linux/filter.h>, <linux/seccomp.h>, <linux/audit.h>
_LD_W_ABS, _JEQ_K, _RET_K = 0x20, 0x15, 0x06
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_EPERM, _AF_UNIX = 1, 1
_X32 = 0x40000000  # x86-64's x32 syscalls: the same numbers with this bit set
# audit arch -> the numbers of socket(2) there; i386's socketcall(2) is handled apart.
_ARCHES = {
    "x86_64": (0xC000003E, (41, _X32 | 41)),
    "aarch64": (0xC00000B7, (198,)),
}
# audit arch -> ptrace, process_vm_readv, process_vm_writev and pidfd_getfd there (x32's own).
_TRACING = {
    0xC000003E: (101, 310, 311, 438, _X32 | 521, _X32 | 539, _X32 | 540, _X32 | 438),
    0xC00000B7: (117, 270, 271, 438),
}
_I386, _I386_SOCKET, _I386_SOCKETCALL, _SYS_SOCKET = 0x40000003, 359, 102, 1
_I386_TRACING = (26, 347, 348, 438)
# (label, code, k, where to go when true, when false): None goes on to the next instruction.
_Op = tuple[str | None, int, int, str | None, str | None]


def run_filter(machine: str | None = None, unix: bool = True, tracing: bool = True) -> bytes | None:
    """The program for this machine's architecture: refusing Unix sockets (`unix`) and the
    calls that reach into another process (`tracing`); None where its numbers are unknown or
    it would refuse nothing."""
    found = _ARCHES.get(machine or platform.machine())
    if found is None or not (unix or tracing):
        return None
    arch, sockets = found
    native: list[_Op] = [(None, _JEQ_K, n, "deny", None) for n in _TRACING[arch] if tracing]
    compat: list[_Op] = [(None, _JEQ_K, n, "deny", None) for n in _I386_TRACING if tracing]
    if unix:
        native += [(None, _JEQ_K, n, "family", None) for n in sockets]
        compat += [
            (None, _JEQ_K, _I386_SOCKET, "family", None),
            # socketcall(SYS_SOCKET, args): the family is behind a pointer, so every socket
            # made through it is refused (i386 libcs call socket(2) itself since Linux 4.3).
            (None, _JEQ_K, _I386_SOCKETCALL, None, "allow"),
            (None, _LD_W_ABS, 16, None, None),
            (None, _JEQ_K, _SYS_SOCKET, "deny", "allow"),
        ]
    return _assemble(
        [
            (None, _LD_W_ABS, 4, None, None),  # arch
            (None, _JEQ_K, arch, None, "compat"),
            (None, _LD_W_ABS, 0, None, None),  # nr
            *native,
            (None, _JEQ_K, 0, "allow", "allow"),  # whatever else: allowed
            # Another architecture: i386 on an x86-64 kernel, or one whose numbers differ.
            ("compat", _JEQ_K, _I386, None, "allow"),
            (None, _LD_W_ABS, 0, None, None),
            *compat,
            (None, _JEQ_K, 0, "allow", "allow"),
            ("family", _LD_W_ABS, 16, None, None),  # the first argument's low word
            (None, _JEQ_K, _AF_UNIX, "deny", "allow"),
            ("deny", _RET_K, _RET_ERRNO | _EPERM, None, None),
            ("allow", _RET_K, _RET_ALLOW, None, None),
        ]
    )


def _assemble(program: list[_Op]) -> bytes:
    """sock_filter structs, each jump counted from the instruction after it to its label."""
    at = {label: i for i, (label, *_) in enumerate(program) if label is not None}
    out = b""
    for i, (_, code, k, true, false) in enumerate(program):
        jt = at[true] - i - 1 if true else 0
        jf = at[false] - i - 1 if false else 0
        out += struct.pack("=HBBI", code, jt, jf, k)
    return out


def run_filter_fd(unix: bool = True, tracing: bool = True) -> int | None:
    """A fresh descriptor holding the program, for bwrap to read once (`--seccomp FD`): the
    caller passes it to the child and closes it. None where there is no program."""
    program = run_filter(unix=unix, tracing=tracing)
    if program is None:
        return None
    fd = os.memfd_create("autoresearch-seccomp", 0)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
