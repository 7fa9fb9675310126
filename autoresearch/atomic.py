"""State files written whole or not at all, and the values JSON can hold.

What the loop writes beside a night (markers, outcomes, ideas, summaries) is read by another
process at any moment, and by the next run after a crash: a reader sees the old file or the new
one, never half; a full disk is a StateError naming the file, never a truncated state.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import StateError

__all__ = [
    "flock_within",
    "fresh_dir",
    "fresh_name",
    "json_safe",
    "read_json",
    "require_space",
    "write_json_atomic",
    "write_text_atomic",
]

MIN_FREE_BYTES = 64 * 1024


def json_safe(value: Any) -> Any:
    """What JSON can hold: non-finite floats as null (a missing number is null, never a crash
    of the record write), and strings as valid Unicode (a path read from a patch in another
    encoding carries its bytes as lone surrogates: shown with replacement characters). The
    parsers keep most of this out; this is the last line of defence."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return _valid_unicode(value)
    if isinstance(value, dict):
        return {_valid_unicode(str(k)): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def _valid_unicode(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        except UnicodeEncodeError:
            return text.encode("utf-8", "replace").decode("utf-8")
    return text


def fresh_name(directory: Path, stem: str, suffix: str = "") -> str:
    """`<stem>-<time>` (then `-2`, `-3`...) naming nothing in `directory` yet: a log directory,
    an agent's logs or a detached try, never one used before, even twice in one second."""
    base = f"{stem}-{time.strftime('%Y%m%dT%H%M%S')}"
    name, n = base, 1
    while (directory / f"{name}{suffix}").exists():
        n += 1
        name = f"{base}-{n}"
    return name


def fresh_dir(directory: Path, stem: str) -> Path:
    """A new directory named by fresh_name."""
    path = directory / fresh_name(directory, stem)
    path.mkdir(parents=True)
    return path


def require_space(path: Path, what: str) -> None:
    """A StateError when the file system holding `path` is full: a bench whose output could not
    be written is no verdict on the code it ran."""
    try:
        stat = os.statvfs(path if path.is_dir() else path.parent)
    except OSError:
        return
    if stat.f_bavail * stat.f_frsize < MIN_FREE_BYTES:
        raise StateError(
            f"{path}: the file system is full, so {what} could not be written; free space "
            "and run again to resume"
        )


def write_text_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` so that a reader sees the old or the new file, never half.
    A full disk is a StateError naming the file; the old file stays as it was."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise StateError(
            f"{path}: cannot write ({exc.strerror}); free space (or fix the file system) and "
            "run again to resume"
        ) from None


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    write_text_atomic(path, json.dumps(json_safe(data), ensure_ascii=False, allow_nan=False))


def read_json(path: Path) -> dict[str, Any] | None:
    """A state file written by write_json_atomic, or None; an unreadable one counts as none
    (it was never complete)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def flock_within(fd: int, seconds: float, keep_waiting: Callable[[], bool] = lambda: True) -> bool:
    """An exclusive flock on `fd`, waited for up to `seconds` while `keep_waiting()` says so
    (a blocking flock would wait for ever on a holder that hangs); whether it was taken."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if not keep_waiting() or time.monotonic() > deadline:
                return False
            time.sleep(0.005)
