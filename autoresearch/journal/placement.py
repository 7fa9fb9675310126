"""Where an experiment's runs happened and how they were fenced, as values, with their one
codec to and from the journal's JSON (the record's `confinement` and `cluster`, the format they
have always had; what an older record lacks reads as unknown).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .evidence import fields_in, values

__all__ = ["Confinement", "HostFacts", "LostHost", "StaleWin"]


@dataclass(frozen=True)
class Confinement:
    """How the candidate's build, bench and checks were confined (bench/sandbox.py): the tool,
    where the tree was seen, what they could write, and the rest of the fence; or, with the
    tool `none`, why they ran unconfined."""

    tool: str  # "bwrap" | "none"
    why: str | None = None  # the reason they were not confined (tool "none")
    tree_seen_at: str | None = None
    writable: list[str] = field(default_factory=list)
    network: bool | None = None
    pid_namespace: bool | None = None
    capabilities: str | None = None
    unix_sockets: bool | None = None
    user_namespace: bool | None = None

    @classmethod
    def unconfined(cls, why: str) -> Confinement:
        return cls(tool="none", why=why)

    def to_dict(self) -> dict[str, Any]:
        if self.tool == "none":
            return {"tool": self.tool, "why": self.why}
        found = values(self)
        del found["why"]
        return found

    @classmethod
    def from_dict(cls, found: Mapping[str, Any]) -> Confinement:
        given = fields_in(cls, found)
        given["tool"] = str(given.get("tool") or "none")
        return cls(**given)


@dataclass(frozen=True)
class StaleWin:
    """A win a host measured against a best that had moved by the time it landed: never kept
    on that evidence, measured again on the new best."""

    parent: str
    host: str
    change_pct: float | None
    ci_pct: list[float | None]

    def to_dict(self) -> dict[str, Any]:
        return values(self)


@dataclass(frozen=True)
class LostHost:
    """A bench host that died while it measured the experiment (its runs measured again on
    another): which (None: the executor could not tell), when, and what was said of it."""

    host: str | None
    at: str
    why: str

    def to_dict(self) -> dict[str, Any]:
        return values(self)


@dataclass(frozen=True)
class HostFacts:
    """A bench host's part in an experiment: the patch it was sent, the host and worker that
    measured it, that machine's facts, when, the wins measured against a best that had moved
    (`stale`), and the best it was kept on when the keeps since touched none of its files."""

    patch: str | None = None
    host: str | None = None
    worker: str | None = None
    environment: dict[str, Any] | None = None
    started_at: str | None = None
    ended_at: str | None = None
    stale: list[StaleWin] = field(default_factory=list)
    kept_on: str | None = None
    lost: list[LostHost] = field(default_factory=list)  # the hosts that died running it

    def to_dict(self) -> dict[str, Any]:
        """What is known: the patch once sent; the rest, the stale wins among it, once a host's
        result has landed."""
        found = values(self)
        found["stale"] = [s.to_dict() for s in self.stale]
        if self.host is None and not self.stale:
            del found["stale"]
        found["lost"] = [lost.to_dict() for lost in self.lost]
        if not self.lost:
            del found["lost"]
        return {k: v for k, v in found.items() if v is not None}

    @classmethod
    def from_dict(cls, found: Mapping[str, Any]) -> HostFacts:
        given = fields_in(cls, found)
        given["stale"] = [
            StaleWin(
                parent=str(s.get("parent") or ""),
                host=str(s.get("host") or ""),
                change_pct=s.get("change_pct"),
                ci_pct=list(s.get("ci_pct") or [None, None]),
            )
            for s in found.get("stale") or []
            if isinstance(s, Mapping)
        ]
        given["lost"] = [
            LostHost(
                host=str(lost["host"]) if lost.get("host") else None,
                at=str(lost.get("at") or ""),
                why=str(lost.get("why") or ""),
            )
            for lost in found.get("lost") or []
            if isinstance(lost, Mapping)
        ]
        return cls(**given)
