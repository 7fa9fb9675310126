"""The load the benchmarks measure under besides a quiet machine: another job keeping one
core busy, as on a shared machine at night or in CI."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def cores_busy(count: int) -> Iterator[None]:
    """`count` cores kept busy, each by a process of its own in this one's session, for the
    time of the block; all stopped at its end whatever happened."""
    others = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for other in others:
            other.kill()
            other.wait()


def a_core_busy(busy: bool = True) -> contextlib.AbstractContextManager[None]:
    """One core kept busy by another process for the time of the block (nothing when not
    `busy`)."""
    return cores_busy(1 if busy else 0)
