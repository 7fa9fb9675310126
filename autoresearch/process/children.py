"""The children this process starts on purpose beside a target's run, which the run's clean-up
must not take for its orphans.

A run's clean-up (bench/proc.py) kills what its command left behind, and an orphan of it is
reparented to this process (a subreaper): a new child of this process since the run began.
A git call or an agent that another thread starts meanwhile (an agent preparing the next
proposal while the bench runs) is a new child too, and is not the bench's. Each such child is
noted here as it starts, under the lock a clean-up's scan of /proc holds: a child started
mid-scan waits for the scan to end, so that no scan sees it unnamed.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Protocol, TypeVar

__all__ = ["forget", "named", "start_named"]


class _Started(Protocol):
    @property
    def pid(self) -> int: ...


_P = TypeVar("_P", bound=_Started)

_NAMED: set[int] = set()
_LOCK = threading.Lock()


def start_named(start: Callable[[], _P]) -> _P:
    """Start a child with `start` and name it, in one step no clean-up's scan can split."""
    with _LOCK:
        child = start()
        _NAMED.add(child.pid)
    return child


def forget(pid: int) -> None:
    """The child is reaped: its pid may be the kernel's to give to another process now."""
    with _LOCK:
        _NAMED.discard(pid)


@contextlib.contextmanager
def named() -> Iterator[frozenset[int]]:
    """The children named now, with none started until the block ends: a scan of /proc."""
    with _LOCK:
        yield frozenset(_NAMED)
