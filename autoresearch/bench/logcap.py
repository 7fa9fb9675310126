"""A run's output into its log file, capped: the head and the tail kept, the cut said.

A bench that prints 300 MB a run would fill the disk in a night (and the review would read
none of it). Up to `cap` bytes the log is written as it comes; past that, the first half of
the cap stays on disk, the last half is kept in memory as it streams, and when the run ends
the file is the head, one line saying how many bytes were cut, and the tail: the METRIC lines
a bench prints last are still there.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import deque
from pathlib import Path

__all__ = ["DEFAULT_CAP", "CappedLog"]

DEFAULT_CAP = 8 * 1024 * 1024
CHUNK = 64 * 1024


class CappedLog:
    """Reads a pipe in a thread and writes it to `path`, capped at about `cap` bytes."""

    def __init__(self, path: Path, cap: int = DEFAULT_CAP):
        self.path = path
        self.cap = max(cap, 2 * CHUNK)
        self.cut = 0
        self._file = open(path, "wb")  # noqa: SIM115 (closed by finish())
        self._written = 0
        self._tail: deque[bytes] = deque()
        self._tail_bytes = 0
        self._over = False
        self._closed = False
        self._lock = threading.Lock()  # a straggler still writing after finish() gave up
        self._thread: threading.Thread | None = None

    def start(self, pipe_fd: int) -> None:
        self._thread = threading.Thread(target=self._relay, args=(pipe_fd,), daemon=True)
        self._thread.start()

    def finish(self, timeout_s: float = 10.0) -> None:
        """Wait for the writers' end of the pipe to close (the run's processes are gone),
        then lay the file out: head, the cut, tail."""
        if self._thread is not None:
            self._thread.join(timeout_s)
        with self._lock, contextlib.suppress(OSError):
            self._closed = True
            if self._over:
                self._file.truncate(self.cap // 2)
                self._file.seek(self.cap // 2)
                self._file.write(
                    f"\n[autoresearch: {self.cut:,} bytes of output cut here; a run's log "
                    f"keeps its first and last {self.cap // 2:,} bytes]\n".encode()
                )
                self._file.write(b"".join(self._tail))
            self._file.close()

    def _relay(self, fd: int) -> None:
        try:
            while chunk := os.read(fd, CHUNK):
                with self._lock:
                    if self._closed:  # the run is over; whatever still prints is dropped
                        continue
                    self._take(chunk)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _take(self, chunk: bytes) -> None:
        if not self._over:
            room = self.cap - self._written
            self._file.write(chunk[:room])
            self._written += min(room, len(chunk))
            if len(chunk) <= room:
                return
            chunk = chunk[room:]
            self._over = True
            # What is on disk past the head half is the start of the tail.
            self._file.flush()
            with open(self.path, "rb") as f:
                f.seek(self.cap // 2)
                self._keep(f.read())
        self._keep(chunk)

    def _keep(self, data: bytes) -> None:
        self._tail.append(data)
        self._tail_bytes += len(data)
        excess = self._tail_bytes - self.cap // 2
        while excess > 0:
            first = self._tail[0]
            if len(first) <= excess:
                self._tail.popleft()
                dropped = len(first)
            else:
                self._tail[0] = first[excess:]
                dropped = excess
            self._tail_bytes -= dropped
            self.cut += dropped
            excess -= dropped
