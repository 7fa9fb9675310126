"""Proposers by name: the `autoresearch.proposers` entry-point group.

A third-party package adds a proposer by declaring, in its own pyproject.toml,

    [project.entry-points."autoresearch.proposers"]
    mykind = "mypackage.module:MyProposer"

where `MyProposer.from_options(options, config)` builds it from its `[[proposer]]` table (with
`kind` removed) and raises ConfigError naming what is wrong. The built-ins are declared the same
way in this project's pyproject.toml, and found in the table below (a source tree that was
never installed has no metadata to read).

The lookup loads a kind's class by name (importlib), so that the config's checks can ask a
proposer about its options without the config importing the proposers built on it. A built-in
kind is this package's own whatever else is installed: a package added to the environment
cannot stand in for the proposer the config names, and a config of built-in kinds reads no
other distribution's metadata (every command checks the config; the read costs 15-20 ms).
"""

from __future__ import annotations

import functools
import importlib
import sys
from typing import Any

from .errors import ConfigError

__all__ = ["ENTRY_POINT_GROUP", "available", "proposer_class"]

ENTRY_POINT_GROUP = "autoresearch.proposers"
BUILT_IN = {
    "queue": "autoresearch.proposers.queue:QueueProposer",
    "sweep": "autoresearch.proposers.sweep:SweepProposer",
    "agent": "autoresearch.proposers.agent.proposer:AgentProposer",
}


def available() -> dict[str, str]:
    """kind -> "module:attribute": the built-ins and the installed entry points' other kinds."""
    return dict(_installed(tuple(sys.path)))


@functools.lru_cache(maxsize=8)
def _installed(path: tuple[str, ...]) -> dict[str, str]:
    """Reading every distribution's metadata costs some 15 ms, and every config check asks:
    read once per import path (a package installed into it meanwhile is found by the next
    process, as a new console script would)."""
    from importlib.metadata import entry_points

    found = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return {**found, **BUILT_IN}


def proposer_class(kind: str, where: str) -> Any:
    target = BUILT_IN.get(kind) or available().get(kind)
    if target is None:
        known = ", ".join(sorted(available()))
        raise ConfigError(f"{where}: no proposer kind '{kind}' (installed: {known})")
    module, _, attribute = target.partition(":")
    try:
        return getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{where}: proposer '{kind}' ({target}) did not load: {exc}") from None
