"""The morning review: the journal as a table, a summary of it, and its renderings.

Exported lazily (PEP 562): the loop reads `report.scales` while it starts, and should not wait
for pandas, which the table and the summary need.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "History": "history",
    "load_history": "history",
    "render_json": "render",
    "render_markdown": "render",
    "render_pr": "render",
    "render_text": "render",
    "summarize": "summary",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
