"""A directory of patch files, taken in name order, each carrying its reasoning.

The reasoning (ASI) sits in a header block before the diff:

    Title: Raise L0CompactionThreshold from 2 to 8
    Hypothesis: fewer L0 compactions during the bulk write
    Mechanism: compactions start later and merge more files at once
    Expected-Effect: -10% pebble_writepack_100k_ms

    diff --git a/engine.go b/engine.go
    ...

or in a sidecar `<name>.json` with the keys title, hypothesis, mechanism, expected_effect.
`git format-patch` output works too: its Subject line is the title.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..errors import UserError
from .base import Hypothesis

__all__ = ["QueueProposer", "parse_patch_file"]

PATCH_SUFFIXES = (".patch", ".diff")
_DIFF_START = re.compile(r"^(?:diff --git |--- (?:a/|/dev/null))", re.M)
_HEADER_KEY = re.compile(r"^([A-Za-z][A-Za-z_-]*):\s?(.*)$")
_FIELDS = {
    "title": "title",
    "subject": "title",
    "hypothesis": "hypothesis",
    "mechanism": "mechanism",
    "expected-effect": "expected_effect",
    "expected_effect": "expected_effect",
    "expected": "expected_effect",
}


class QueueProposer:
    name = "queue"

    def __init__(self, directory: Path):
        if not directory.is_dir():
            raise UserError(f"{directory}: hypothesis directory not found ([proposer] dir)")
        self.directory = directory
        # Parsed files by (path, stamps of the patch and its sidecar): the directory is listed
        # afresh each time, so patches added during the night are seen, but an unchanged file
        # is not read and hashed again for every experiment.
        self._parsed: dict[tuple, Hypothesis] = {}

    def _untried(self, tried: set[str]) -> list[Hypothesis]:
        found = []
        for path in sorted(p for p in self.directory.iterdir() if p.suffix in PATCH_SUFFIXES):
            key = (path, _stamp(path), _stamp(path.with_suffix(".json")))
            if key not in self._parsed:
                self._parsed[key] = parse_patch_file(path)
            if self._parsed[key].sha256 not in tried:
                found.append(self._parsed[key])
        return found

    def next(self, tried: set[str]) -> Hypothesis | None:
        untried = self._untried(tried)
        return untried[0] if untried else None

    def pending(self, tried: set[str]) -> int:
        return len(self._untried(tried))


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_mtime_ns, stat.st_size


def parse_patch_file(path: Path) -> Hypothesis:
    """A hypothesis from a patch file and its header block or sidecar JSON."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    match = _DIFF_START.search(text)
    header, patch = (text[: match.start()], text[match.start() :]) if match else (text, "")
    fields = _parse_header(header)
    sidecar = path.with_suffix(".json")
    if sidecar.is_file():
        try:
            extra = json.loads(sidecar.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise UserError(f"{sidecar}: not valid JSON: {exc}") from None
        if not isinstance(extra, dict):
            raise UserError(f"{sidecar}: must hold a JSON object")
        for key, value in extra.items():
            field = _FIELDS.get(key.lower())
            if field and isinstance(value, str):
                fields[field] = value
    title = fields.get("title") or path.stem
    title = re.sub(r"^\[PATCH[^\]]*\]\s*", "", title)
    return Hypothesis(
        title=title,
        patch=patch,
        hypothesis=fields.get("hypothesis"),
        mechanism=fields.get("mechanism"),
        expected_effect=fields.get("expected_effect"),
        source=str(path),
    )


def _parse_header(header: str) -> dict[str, str]:
    """`Key: value` lines; indented lines continue the previous value."""
    fields: dict[str, str] = {}
    current: str | None = None
    for line in header.splitlines():
        if current and line[:1] in (" ", "\t") and line.strip():
            fields[current] += " " + line.strip()
            continue
        match = _HEADER_KEY.match(line)
        field = _FIELDS.get(match.group(1).lower()) if match else None
        current = field
        if field:
            fields[field] = match.group(2).strip()
    return fields
