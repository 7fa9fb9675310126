"""The session's proposers, one per `[[proposer]]` table, found by kind (plugins.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..plugins import proposer_class
from .base import Proposer

if TYPE_CHECKING:
    from ..config import Config

__all__ = ["make_proposers"]


def make_proposers(config: Config) -> list[Proposer]:
    """One proposer per `[[proposer]]` table, in order."""
    made = []
    for i, table in enumerate(config.proposer):
        where = f"{config.path}: proposer[{i}]"
        options = {k: v for k, v in table.items() if k != "kind"}
        kind = str(table.get("kind", "queue"))
        made.append(proposer_class(kind, where).from_options(options, config))
    return made
