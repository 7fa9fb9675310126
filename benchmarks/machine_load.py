"""The load the benchmarks measure under besides a quiet machine: another job keeping one
core busy, as on a shared machine at night or in CI."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def a_core_busy(busy: bool = True) -> Iterator[None]:
    """One core kept busy by another process for the time of the block (nothing when not
    `busy`), stopped at its end whatever happened."""
    if not busy:
        yield
        return
    other = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        other.kill()
        other.wait()
