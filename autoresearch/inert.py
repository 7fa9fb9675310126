"""Text from a run, a patch or an agent, shown as text: the terminal control characters it may
carry (escape sequences that set a window's title, clear the screen, move the cursor or
rewrite what an earlier line said) are written out visibly (`\\x1b`), never obeyed."""

from __future__ import annotations

import re
from typing import Any, TextIO

__all__ = ["InertStream", "inert"]

# C0 controls but tab and newline, DEL, and the C1 controls (U+0080-U+009F: U+009B is a CSI).
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def inert(text: str) -> str:
    """`text` with every terminal control character written out as its escape."""
    return _CONTROLS.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"


class InertStream:
    """A text stream that writes what it is given through `inert` (the CLI's stdout and
    stderr: a title, a log tail or an agent's words reach your terminal as text); anything
    else asked of it is the wrapped stream's."""

    def __init__(self, stream: TextIO):
        self._stream = stream
        self.encoding = stream.encoding

    def write(self, text: str) -> int:
        self._stream.write(inert(text))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
