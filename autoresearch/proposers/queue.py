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

import contextlib
import json
import re
from pathlib import Path

from ..config import Config
from ..errors import ConfigError, UserError
from ..files import read_bounded
from .base import Hypothesis, ProposalContext

__all__ = ["QueueProposer", "parse_patch_file", "read_hypothesis"]

PATCH_SUFFIXES = (".patch", ".diff")
_DIFF_START = re.compile(rb"^(?:diff --git |--- (?:a/|/dev/null))", re.M)
_HEADER_KEY = re.compile(r"^([A-Za-z][A-Za-z_-]*):\s?(.*)$")
_FIELDS = {
    "title": "title",
    "subject": "title",
    "hypothesis": "hypothesis",
    "mechanism": "mechanism",
    "expected-effect": "expected_effect",
    "expected_effect": "expected_effect",
    "expected": "expected_effect",
    "family": "family",  # the axis it explores: groups it in the review and the ideas
}


class QueueProposer:
    """Options: `dir`, the directory of patch files (relative to the config file)."""

    name = "queue"

    @classmethod
    def check_options(cls, options: dict, config: Config, where: str) -> None:
        for key, value in options.items():
            if key != "dir":
                raise ConfigError(f"{where}: the queue proposer has no option '{key}' (only dir)")
            if not isinstance(value, str):
                raise ConfigError(f"{where}: 'dir' must be a string")

    @classmethod
    def from_options(cls, options: dict, config: Config) -> QueueProposer:
        return cls(config.resolve(options.get("dir", "hypotheses")))

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
        try:
            listed = sorted(p for p in self.directory.iterdir() if p.suffix in PATCH_SUFFIXES)
        except OSError as exc:
            raise UserError(
                f"{self.directory}: cannot list the hypotheses: {exc.strerror}"
            ) from None
        for path in listed:
            key = (path, _stamp(path), _stamp(path.with_suffix(".json")))
            if key not in self._parsed:
                self._parsed[key] = read_hypothesis(path)
            if self._parsed[key].sha256 not in tried:
                found.append(self._parsed[key])
        return found

    def next(self, context: ProposalContext) -> Hypothesis | None:
        untried = self._untried(context.tried)
        return untried[0] if untried else None

    def pending(self, context: ProposalContext) -> int:
        return len(self._untried(context.tried))


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def read_hypothesis(path: Path) -> Hypothesis:
    """The file's hypothesis, or one that carries why it cannot be tried: one bad file in the
    queue is a record, never the end of the night."""
    try:
        return parse_patch_file(path)
    except UserError as exc:
        raw = b""
        with contextlib.suppress(UserError):
            raw = read_bounded(path, what="patch file")
        return Hypothesis(title=path.stem, patch=raw, source=str(path), problem=str(exc))


def parse_patch_file(path: Path) -> Hypothesis:
    """A hypothesis from a patch file and its header block or sidecar JSON."""
    data = read_bounded(path, what="patch file")
    match = _DIFF_START.search(data)
    header, patch = (data[: match.start()], data[match.start() :]) if match else (data, b"")
    # The reasoning is prose: a stray byte in it costs a replacement character, not the patch.
    fields = _parse_header(header.decode("utf-8", errors="replace"))
    sidecar = path.with_suffix(".json")
    if sidecar.exists() or sidecar.is_symlink():
        raw = read_bounded(sidecar, limit=1024 * 1024, what="sidecar")
        try:
            extra = json.loads(raw.decode("utf-8-sig"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
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
        family=fields.get("family"),
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
        if field and match:
            fields[field] = match.group(2).strip()
    return fields
