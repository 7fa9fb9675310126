"""The environment of the loop's own processes, and the user's, which the target's commands get.

numpy and scipy each load an OpenBLAS whose pool starts a thread per core, and an idle pool
thread spins for a while before it sleeps: some 0.2 s of a core for every `autoresearch`
process, for statistics on arrays of tens of numbers, taken from the bench on a busy machine.
The command line pins the pool to one thread before anything imports numpy, unless the user
chose a size, and says so in `PINNED_ENV`, which the processes it starts (a cluster's workers,
another `autoresearch`) inherit with the pin. A bench, build, check or agent gets the
environment as the user set it: `target_environ` leaves out what was pinned.
"""

from __future__ import annotations

import os

__all__ = ["BLAS_THREADS_ENV", "PINNED_ENV", "pin_blas_threads", "target_environ"]

BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"
PINNED_ENV = "AUTORESEARCH_PINNED_ENV"  # the variables set for autoresearch's processes alone


def pin_blas_threads() -> None:
    """One BLAS thread for this process and the autoresearch processes it starts; the user's
    own setting, when there is one, stands."""
    if BLAS_THREADS_ENV in os.environ:
        return
    os.environ[BLAS_THREADS_ENV] = "1"
    os.environ[PINNED_ENV] = BLAS_THREADS_ENV


def target_environ() -> dict[str, str]:
    """os.environ as the user set it: what was pinned for autoresearch's processes left out."""
    pinned = {PINNED_ENV, *os.environ.get(PINNED_ENV, "").split(",")}
    return {key: value for key, value in os.environ.items() if key not in pinned}
