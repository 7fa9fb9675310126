"""Text from a run, a patch or an agent, made inert wherever it lands: one renderer per place.

Every string a candidate or an agent controls (a title, a mechanism, a reason, bench output,
a profile's frame) is data. Where it lands it could act: in a terminal, escape sequences set
the window's title or rewrite earlier lines; in Markdown (the PR, the report) and in a commit
message, `fixes #12` closes an issue on merge, `@someone` pings a person, a line of backticks
closes the code fence around bench output and what follows renders as the PR's own text (a
fake "Safety review"), a newline starts a heading or a trailer; in an agent's prompt, it reads
as an instruction. Each renderer here leaves the text readable and takes away its power:

- `inert`: the terminal's control characters written out visibly (`\\x1b`), never obeyed;
- `markdown`: one line of Markdown text: the control characters written out, the line breaks
  made spaces, Markdown's and HTML's characters escaped, and every issue reference, closing
  and mention broken by an invisible WORD JOINER (U+2060), which GitHub's parsers do not see
  through and a reader does not see (a closing keyword closes nothing without a reference);
- `fenced`: a block of output in a code fence longer than any run of backticks it holds;
  `code`: a code span on one line, the same way;
- `commit_line`: one line of a commit message, defused as Markdown text is but not escaped;
- `quoted`: a string in an agent's prompt, as a JSON string literal: one line, quoted, after
  the prompt's own words saying that what is quoted is data.
"""

from __future__ import annotations

import json
import re
from typing import Any, TextIO

__all__ = [
    "JOINER",
    "InertStream",
    "code",
    "commit_line",
    "fenced",
    "inert",
    "markdown",
    "quoted",
]

# C0 controls but tab and newline, DEL, and the C1 controls (U+0080-U+009F: U+009B is a CSI).
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
JOINER = "\u2060"  # WORD JOINER: invisible, and no parser's word boundary
# What GitHub acts on in a PR's text and a commit message: a reference to an issue or pull
# request (#12, GH-12, owner/repo#12, their URLs), a closing keyword before one, a mention.
_REFERENCE = re.compile(r"(#|GH-|gh-)(?=\d)")
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_URL_REFERENCE = re.compile(r"/(issues|pull|discussions)/(?=\d)")
# Markdown's (CommonMark, GFM's tables, strikethrough and math) and HTML's characters where
# they act anywhere in a line; `_` only where it can open or close emphasis (not inside a word:
# `time_ms` stays as it is); and what acts only at the start of a line (a heading, a quote, a
# list item), there.
_MARKDOWN = re.compile(r"([\\`*\[<|~&$])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_LINE_START = re.compile(r"^(\s*)([#>=]|[-+](?=\s))")
_ORDERED = re.compile(r"^(\s*\d+)([.)])(?=\s)")


def inert(text: str) -> str:
    """`text` with every terminal control character written out as its escape."""
    return _CONTROLS.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"


def _defused(text: str) -> str:
    """References, closing keywords and mentions broken by an invisible joiner."""
    text = _REFERENCE.sub(lambda m: m.group(1) + JOINER, text)
    text = _URL_REFERENCE.sub(lambda m: f"/{m.group(1)}/{JOINER}", text)
    return _MENTION.sub("@" + JOINER, text)


def _one_line(text: str) -> str:
    return re.sub(r"[\r\n\t]+", " ", text)


def markdown(value: object) -> str:
    """`value` as one line of Markdown text that says what it says and does nothing else."""
    text = _MARKDOWN.sub(lambda m: "\\" + m.group(), _one_line(inert(str(value))))
    text = _ORDERED.sub(lambda m: m.group(1) + "\\" + m.group(2), text)
    return _defused(_LINE_START.sub(lambda m: m.group(1) + "\\" + m.group(2), text))


def fenced(text: str, info: str = "") -> str:
    """`text` (bench output, a log's tail) as a fenced code block nothing in it can close."""
    body = _defused(inert(text)).rstrip("\n")
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}"


def code(value: object) -> str:
    """`value` as a Markdown code span on one line, whose backticks nothing in it can close."""
    text = _defused(_one_line(inert(str(value))))
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    tick = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{tick}{pad}{text}{pad}{tick}"


def commit_line(value: object) -> str:
    """`value` as one line of a commit message: no trailer, no reference, no mention."""
    return _defused(_one_line(inert(str(value))))


def quoted(value: object) -> str:
    """`value` in an agent's prompt: a JSON string literal, one line, its quotes its own."""
    return json.dumps(inert(str(value)), ensure_ascii=False)


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
