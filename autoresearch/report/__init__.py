"""The morning review: the journal as a table, a summary of it, and its renderings."""

from .history import History, load_history
from .render import render_json, render_markdown, render_pr, render_text
from .summary import summarize

__all__ = [
    "History",
    "load_history",
    "render_json",
    "render_markdown",
    "render_pr",
    "render_text",
    "summarize",
]
