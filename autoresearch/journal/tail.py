"""The journal read from its end: a session's last experiments without the rest.

`history --last 20` on a season's journal needs twenty records, not a hundred thousand: blocks
are read backwards, growing, until enough of the session's experiments are found. The records
are the ones a whole read gives: damaged lines and a torn last line are skipped, and of an
experiment seen twice in the part read (a copied line) the earlier copy counts.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from ..errors import JournalError
from .lines import gc_paused, parse_lines
from .records import ExperimentRecord
from .store import read_journal

__all__ = ["last_experiments"]

FIRST_BLOCK = 1 << 20


def last_experiments(path: Path, session: str, count: int) -> list[ExperimentRecord]:
    """The last `count` experiments of `session`, oldest first; all of them when `count` <= 0."""
    if count <= 0:
        return read_journal(path).for_session(session).experiments
    try:
        with gc_paused(), open(path, "rb") as handle:
            return _from_the_end(path, handle, session, count)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise JournalError(f"{path}: cannot read: {exc.strerror}") from None


def _from_the_end(path: Path, handle: BinaryIO, session: str, count: int) -> list[ExperimentRecord]:
    end = os.fstat(handle.fileno()).st_size
    handle.seek(end)
    found: dict[str, tuple[int, ExperimentRecord]] = {}  # id -> (offset of its line, record)
    carry = b""  # the start of a line that began before the block read last
    block = FIRST_BLOCK
    while end > 0:
        start = max(0, end - block)
        handle.seek(start)
        data = handle.read(end - start) + carry
        # A block that does not start the file starts inside a line: that part is carried on.
        cut = data.find(b"\n") + 1 if start > 0 else 0
        carry, data = data[:cut], data[cut:]
        last_newline = data.rfind(b"\n") + 1
        items, _, _ = parse_lines(path, data[:last_newline], start + cut, 0)
        for _, line_end, item in reversed(items):
            if isinstance(item, ExperimentRecord) and item.session == session:
                # Of two copies the earlier counts, as in a whole read; keep looking past it.
                found[item.id] = (line_end, item)
        if start == 0 or len(found) >= count:
            break
        end = start
        block *= 2
    ordered = sorted(found.values(), key=lambda pair: pair[0])
    return [record for _, record in ordered[-count:]]
