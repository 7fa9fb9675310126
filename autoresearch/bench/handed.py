"""The descriptors a run is handed, each at a number fixed for every run.

A descriptor the loop opens for a run gets whatever number the loop's own state left free at
that moment: one more in a calibration than in an experiment, one less on a bench host. A run
reads those numbers from its environment and from /proc (its own, bwrap's): they would tell it
which phase it is in. So each is moved, in the child alone, to a number reserved for it: the
child starts as a shell that moves them there and then replaces itself with the run (`exec`),
so that no process of it is left to be seen, and the loop's own descriptors are never touched.
"""

from __future__ import annotations

__all__ = ["ARGS_FD", "CHANNEL_FD", "RESERVED", "SECCOMP_FD", "moved_to"]

# High numbers, below every soft limit of open files in use (1,024 and up); 255 is bash's own.
SECCOMP_FD = 250  # bwrap's seccomp program (seccomp.py)
ARGS_FD = 251  # bwrap's own arguments (sandbox.py): its command line then says nothing
CHANNEL_FD = 252  # the METRIC channel (channel.py), in every measured run
RESERVED = (SECCOMP_FD, ARGS_FD, CHANNEL_FD)


def moved_to(fds: dict[int, int]) -> tuple[list[str], tuple[int, ...]]:
    """What starts a child with `fds` (a reserved number -> the descriptor to hand there) at
    their numbers: the argv to put before its own, and the descriptors to pass it."""
    if not fds:
        return [], ()
    unknown = sorted(set(fds) - set(RESERVED))
    if unknown:
        raise ValueError(f"not a reserved descriptor number: {unknown}")
    clash = sorted(set(fds.values()) & set(RESERVED))
    if clash:  # the loop holds that many descriptors: a reserved number is one of them
        raise ValueError(f"descriptor {clash[0]} is to be handed but is a reserved number")
    moves = " ".join(f"{number}<&{fd} {fd}<&-" for number, fd in sorted(fds.items()))
    return ["bash", "-c", f'exec {moves}; exec "$@"', "handed"], tuple(fds.values())
