"""Knobs: a numeric value in a file, found by a pattern with one capture group.

A knob knows its grid (the values a search steps through), whether it is an integer, its scale
and its resolution; it reads its value from a file's text and writes a patch that moves it.
Both searches (sweep.py, one knob at a time; joint.py, several at once) build on it.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from typing import Any

from ..config import Config
from ..errors import ConfigError
from ..repo.globs import matches_any
from .base import ProposerError

__all__ = ["Knob", "knob_from_table", "moved", "patch_of"]

KNOB_KEYS: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "file": str,
    "pattern": str,
    "values": list,
    "min": (int, float),
    "max": (int, float),
    "scale": str,
    "step": (int, float),
    "integer": bool,
    "resolution": (int, float),
    "mechanism": str,
}
SCALES = ("log2", "linear")
LINEAR_STEPS = 8  # the default grid of a linear knob: this many steps from min to max


@dataclass(frozen=True)
class Knob:
    name: str
    file: str
    pattern: re.Pattern
    grid: tuple[float, ...]  # the values stepped through before bisecting
    integer: bool
    resolution: float
    log: bool  # bisect geometrically (log2 scale) rather than arithmetically
    mechanism: str | None = None
    listed: bool = False  # its values were listed (not a range): only those are allowed

    def read(self, text: str) -> tuple[float, re.Match]:
        match = self.pattern.search(text)
        if match is None:
            raise ProposerError(
                f"knob {self.name}: pattern {self.pattern.pattern!r} no longer matches {self.file}"
            )
        try:
            value = float(match.group(1))
        except ValueError:
            raise ProposerError(
                f"knob {self.name}: {match.group(1)!r} in {self.file} is not a number"
            ) from None
        return value, match

    def show(self, value: float) -> str:
        return str(int(value)) if self.integer else f"{value:g}"

    def between(self, a: float, b: float, measured: set[float]) -> float | None:
        """An untried value between `a` and `b`: their midpoint (geometric on a log2 scale),
        or the nearest untried value to it; None once the gap is closed."""
        low, high = min(a, b), max(a, b)
        if self.integer:
            inside = [v for v in range(int(low) + 1, int(high)) if v not in measured]
            if not inside:
                return None
            mid = math.sqrt(low * high) if self.log and low > 0 else (low + high) / 2
            return float(min(inside, key=lambda v: (abs(v - mid), v)))
        if high - low <= self.resolution:
            return None
        mid = math.sqrt(low * high) if self.log and low > 0 else (low + high) / 2
        return None if mid in measured else mid


def knob_from_table(table: Any, config: Config, where: str) -> Knob:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: must be a table")
    for key, value in table.items():
        if key not in KNOB_KEYS:
            raise ConfigError(f"{where}: unknown key '{key}' (known: {', '.join(KNOB_KEYS)})")
        if not isinstance(value, KNOB_KEYS[key]) or isinstance(value, bool) != (key == "integer"):
            raise ConfigError(f"{where}: '{key}' has the wrong type ({type(value).__name__})")
    for key in ("name", "file", "pattern"):
        if not table.get(key):
            raise ConfigError(f"{where}: '{key}' is required")
    try:
        pattern = re.compile(table["pattern"])
    except re.error as exc:
        raise ConfigError(f"{where}: 'pattern' is not a regular expression: {exc}") from None
    if pattern.groups != 1:
        raise ConfigError(f"{where}: 'pattern' must have exactly one capture group (the value)")
    if not matches_any(table["file"], config.scope.include) or matches_any(
        table["file"], config.protected_globs()
    ):
        raise ConfigError(f"{where}: '{table['file']}' is outside [scope] include or protected")
    grid, integer, log = _grid(table, where)
    return Knob(
        name=table["name"],
        file=table["file"],
        pattern=pattern,
        grid=grid,
        integer=integer,
        resolution=float(table.get("resolution", 1 if integer else 0)),
        log=log,
        mechanism=table.get("mechanism"),
        listed="values" in table,
    )


def _grid(table: dict, where: str) -> tuple[tuple[float, ...], bool, bool]:
    if "values" in table:
        values = table["values"]
        if len(values) < 2 or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            for v in values
        ):
            raise ConfigError(f"{where}: 'values' must list at least two numbers")
        integer = table.get("integer", all(isinstance(v, int) for v in values))
        log = table.get("scale") == "log2"
        return tuple(sorted(float(v) for v in set(values))), integer, log
    if "min" not in table or "max" not in table:
        raise ConfigError(f"{where}: give 'values', or 'min' and 'max' (and 'scale')")
    low, high = float(table["min"]), float(table["max"])
    scale = table.get("scale", "log2")
    if scale not in SCALES:
        raise ConfigError(f"{where}: 'scale' must be one of {', '.join(SCALES)}")
    if not (math.isfinite(low) and math.isfinite(high)) or low >= high:
        raise ConfigError(f"{where}: 'min' must be below 'max'")
    integer = table.get("integer", isinstance(table["min"], int) and isinstance(table["max"], int))
    if scale == "log2":
        if low <= 0:
            raise ConfigError(f"{where}: a log2 scale needs 'min' > 0")
        grid, value = [], low
        while value <= high * (1 + 1e-9):
            grid.append(round(value) if integer else value)
            value *= 2
        if grid[-1] < high:
            grid.append(high)
        return tuple(sorted(set(map(float, grid)))), integer, True
    step = float(table.get("step", (high - low) / LINEAR_STEPS))
    if step <= 0:
        raise ConfigError(f"{where}: 'step' must be > 0")
    count = math.floor((high - low) / step + 1e-9)
    grid = [low + k * step for k in range(count + 1)] + [high]
    grid = [round(v) if integer else v for v in grid]
    return tuple(sorted(set(map(float, grid)))), integer, False


def patch_of(path: str, old: str, new: str) -> bytes:
    """A git-style unified diff of one file; line endings as the file has them."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
    )
    text = f"diff --git a/{path} b/{path}\n" + "".join(lines)
    return text.encode("utf-8", "surrogateescape")


def moved(knobs: list[tuple[Knob, float]], read) -> bytes:
    """One patch moving each knob to its value; `read(file)` gives a file's text at the best.
    Knobs in the same file are replaced together, from the end so earlier offsets hold."""
    by_file: dict[str, list[tuple[Knob, float]]] = {}
    for knob, value in knobs:
        by_file.setdefault(knob.file, []).append((knob, value))
    patch = b""
    for file, changes in by_file.items():
        text = read(file)
        spans = sorted(
            ((knob.read(text)[1].span(1), knob.show(value)) for knob, value in changes),
            reverse=True,
        )
        new_text = text
        for (start, end), shown in spans:
            new_text = new_text[:start] + shown + new_text[end:]
        if new_text != text:
            patch += patch_of(file, text, new_text)
    return patch
