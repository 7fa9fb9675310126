"""Journal lines -> records: the tolerant parser the loop's reader and the review index share."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from pathlib import Path

# orjson, not json: a night's journal carries every run's samples, and parsing is most of what
# reading a long journal costs.
import orjson

from ..errors import JournalError, NewerSchemaError
from .records import record_from_dict

__all__ = [
    "BOM",
    "duplicate_warning",
    "gc_paused",
    "parse_lines",
    "record_key",
    "repeat_warning",
    "torn_line_warning",
]

BOM = b"\xef\xbb\xbf"  # an editor's UTF-8 byte order mark before line 1: not damage


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Parsing a long journal makes millions of lists and dicts that all survive; the cyclic
    collector would rescan them again and again for nothing, so it waits until the end. Then
    they are frozen (left out of every later collection): a loop that holds a long history
    would otherwise pay a full scan of it whenever the collector runs its oldest generation.
    The records hold no cycles, so nothing that freezing keeps would have been collected."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def parse_lines(path: Path, data: bytes, offset: int, lineno: int):
    """The complete lines of `data` (which starts at journal `offset`, line `lineno`) as
    (line number, end offset, record or warning); then the offset and line number after them.

    A line that is not a valid record is a warning naming it; a record of a newer schema stops
    everything with a JournalError, since skipping it would misreport the whole journal.
    """
    items = []
    position = len(BOM) if offset == 0 and data.startswith(BOM) else 0
    while (end := data.find(b"\n", position)) != -1:
        raw = data[position:end]
        if raw.strip():
            items.append((lineno, offset + end + 1, _parse_line(path, raw, lineno)))
        position, lineno = end + 1, lineno + 1
    return items, offset + position, lineno


def duplicate_warning(
    path: Path, seen: dict[tuple, int], kind: str, record: dict, lineno: int
) -> str | None:
    """An experiment id or a line seen before (a copied line, a journal concatenated with
    itself) is counted once; the later copy is reported."""
    key = record_key(kind, record)
    first = seen.setdefault(key, lineno)
    return None if first == lineno else repeat_warning(path, key, lineno, first)


def record_key(kind: str, record: dict) -> tuple:
    """What makes two records one: an experiment's id, another record's time."""
    return (kind, record.get("session"), record.get("id" if kind == "experiment" else "at"))


def repeat_warning(path: Path, key: tuple, lineno: int, first: int) -> str:
    what = f"experiment {key[2]}" if key[0] == "experiment" else f"{key[0]} line"
    return f"{path}:{lineno}: {what} repeats line {first}, skipped"


def torn_line_warning(path: Path, rest: bytes, lineno: int) -> str | None:
    """A last line without its newline: a crash cut it, or a writer is still writing it."""
    return f"{path}:{lineno}: torn last line skipped (not valid JSON)" if rest.strip() else None


def _parse_line(path: Path, raw: bytes, lineno: int):
    where = f"{path}:{lineno}"
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return f"{where}: damaged line skipped (not valid JSON)"
    if not isinstance(data, dict):
        return f"{where}: not a JSON object, skipped"
    try:
        return record_from_dict(data, where)
    except NewerSchemaError:
        raise
    except JournalError as exc:
        return f"{exc}, skipped"
