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

    def _files(self) -> list[Path]:
        return sorted(p for p in self.directory.iterdir() if p.suffix in PATCH_SUFFIXES)

    def next(self, tried: set[str]) -> Hypothesis | None:
        for path in self._files():
            hypothesis = parse_patch_file(path)
            if hypothesis.sha256 not in tried:
                return hypothesis
        return None

    def pending(self, tried: set[str]) -> int:
        return sum(parse_patch_file(p).sha256 not in tried for p in self._files())


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
