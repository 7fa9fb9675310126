"""What a process's runs would leave behind if it died: stopped the moment it dies.

A bench host's worker process can be killed mid-job (SIGKILL, the OOM killer, its nanny): the
bench it started runs on, orphaned, beside the next job's runs on that machine. Confined, the
sandbox dies with its parent; unconfined, nothing would stop it until the next job on the same
clone looked. So each such process starts one watchdog: a small process in a session of its
own that holds the read end of a pipe whose write end only the watched process has. When the
watched process dies, however it dies, the kernel closes the write end, the watchdog's read
returns, and it stops every process that carries the watched process's token.

    python -m autoresearch.bench.orphans TOKEN      (its standard input: the pipe)
"""

from __future__ import annotations

import os
import sys

from .proc import kill_processes, spawn_watcher

__all__ = ["stop_orphans_at_exit"]

_WATCHED: dict[str, int] = {}  # token -> the pipe's write end, held for the life of the process


def stop_orphans_at_exit(token: str) -> None:
    """Once per token in this process: when this process dies, every process carrying `token`
    (TOKEN_ENV, which every run it starts carries) is killed."""
    if token in _WATCHED:
        return
    read, write = os.pipe()  # neither inheritable: no run this process starts holds the pipe
    try:
        # In a session of its own: not in the group a kill of the watched one's group takes.
        spawn_watcher([sys.executable, "-m", __name__, token], stdin=read)
    except OSError:
        os.close(write)
        raise
    finally:
        os.close(read)
    _WATCHED[token] = write


def _watch(token: str) -> None:
    """Wait for the watched process to die (the pipe's end of file), then stop its runs."""
    while True:
        try:
            if not os.read(0, 4096):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    kill_processes(token)


if __name__ == "__main__":
    _watch(sys.argv[1])
