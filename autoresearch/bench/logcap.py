"""A run's output into its log file, capped: the head and the tail kept, the cut said.

A bench that prints 300 MB a run would fill the disk in a night (and the review would read
none of it). Up to `cap` bytes the log is written as it comes; past that, the first half of
the cap stays on disk, the last half is kept in memory as it streams, and when the run ends
the file is the head, one line saying how many bytes were cut, and the tail: the METRIC lines
a bench prints last are still there.

A run's standard output and its errors are two pipes, whatever the run (a run whose output
was a file where another's is a pipe could tell which it is): each is relayed a line at a time,
so that a line of one is never cut by the other in the log, and the output alone can be
copied as well (what the equivalence check compares).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import deque
from pathlib import Path

__all__ = ["DEFAULT_CAP", "CappedLog"]

DEFAULT_CAP = 8 * 1024 * 1024
CHUNK = 64 * 1024
MAX_COPY = 64 * 1024 * 1024  # of a run's output copied apart: the equivalence check reads it


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
        self._threads: list[threading.Thread] = []

    def start(self, out_fd: int, err_fd: int, copy: Path | None = None) -> None:
        """Relay the run's output and errors, each a line at a time; the output also into
        `copy` (up to MAX_COPY bytes) when given."""
        for fd, to in ((out_fd, copy), (err_fd, None)):
            thread = threading.Thread(target=self._relay, args=(fd, to), daemon=True)
            thread.start()
            self._threads.append(thread)

    def finish(self, timeout_s: float = 10.0) -> None:
        """Wait for the writers' ends of the pipes to close (the run's processes are gone),
        then lay the file out: head, the cut, tail."""
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
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

    def _relay(self, fd: int, copy: Path | None) -> None:
        pending = b""
        copied = open(copy, "wb") if copy is not None else None  # noqa: SIM115 (closed below)
        room = MAX_COPY
        try:
            while chunk := os.read(fd, CHUNK):
                if copied is not None and room > 0:
                    copied.write(chunk[:room])
                    room -= min(room, len(chunk))
                pending += chunk
                # Whole lines; a line longer than a chunk goes as it is (a progress bar).
                cut = pending.rfind(b"\n") + 1 if len(pending) < CHUNK else len(pending)
                if cut:
                    self._write(pending[:cut])
                    pending = pending[cut:]
        except OSError:
            pass
        finally:
            if pending:
                self._write(pending)
            if copied is not None:
                copied.close()
            with contextlib.suppress(OSError):
                os.close(fd)

    def _write(self, data: bytes) -> None:
        with self._lock:
            if not self._closed:  # the run is over; whatever still prints is dropped
                self._take(data)

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
