"""Sizes in metric names: `writepack_100k_ms`, `sum64_4b_ns_op`, `get_1kib_ns_op`,
`parse_16B_mb_s` are each one member of a family measured at several sizes.

A size is one `_`-separated part of the name: digits (with a decimal point or not) and an
optional multiplier or byte unit, in any case (`100k`, `1m`, `4B`, `1KiB`, `16mb`, `2g`). When a
name has several such parts, the last one is its size. Names of one family differ only there.
"""

from __future__ import annotations

import re

__all__ = ["scale_parts", "scale_value"]

_SIZE = re.compile(r"(\d+(?:\.\d+)?)(k|m|g|b|kb|kib|mb|mib|gb|gib)?", re.IGNORECASE)
_MULTIPLIERS = {
    "": 1,
    "b": 1,
    "k": 1e3,
    "kb": 1e3,
    "kib": 2**10,
    "m": 1e6,
    "mb": 1e6,
    "mib": 2**20,
    "g": 1e9,
    "gb": 1e9,
    "gib": 2**30,
}


def scale_parts(name: str) -> tuple[str, str, str] | None:
    """(before, size, after) with `before + size + after == name`, or None without a size.
    `before` ends with `_` and `after` starts with one (or is empty)."""
    parts = name.split("_")
    for i in range(len(parts) - 1, -1, -1):
        if _SIZE.fullmatch(parts[i]) and (i > 0 or len(parts) > 1):
            before = "_".join(parts[:i]) + ("_" if i else "")
            after = ("_" if i < len(parts) - 1 else "") + "_".join(parts[i + 1 :])
            return before, parts[i], after
    return None


def scale_value(size: str) -> float:
    """`100k` -> 100000, `1KiB` -> 1024, `4B` -> 4: for ordering a family."""
    match = _SIZE.fullmatch(size)
    if match is None:
        return float("inf")
    return float(match.group(1)) * _MULTIPLIERS[(match.group(2) or "").lower()]
