"""A coding agent's run as the record holds it (the record's `agent`): the preset and command,
how the run ended, what it cost as far as the CLI said, where its log and prompt are, and why
its proposal was refused, as values, with their one codec to and from the journal's JSON (the
format it has always had; what an older record lacks reads as unknown).

The agent proposer makes one when a run ends; the loop records it with the experiment, and the
spend, the retention of logs, the review and the tests read it back by attribute.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .evidence import fields_in
from .field_types import OPTIONAL_NUMBER, OPTIONAL_OBJECT

__all__ = ["AgentRun", "Usage", "agent_checks"]


@dataclass(frozen=True)
class Usage:
    """What one agent run cost, as far as it said. None is unknown, never zero."""

    cost_usd: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    turns: int | None = None
    error: str | None = None  # the CLI said it failed (an API error, a turn limit)
    denied: tuple[str, ...] = ()  # tool calls the CLI refused the model ("Edit src/x.go")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "denied": list(self.denied)}

    @classmethod
    def from_dict(cls, found: object) -> Usage:
        if not isinstance(found, Mapping):
            return cls()
        given = fields_in(cls, found)
        given["denied"] = tuple(str(d) for d in given.get("denied") or ())
        return cls(**given)


@dataclass(frozen=True)
class AgentRun:
    """One run of a coding agent for one proposal.

    `confinement` says how the agent ran ({"tool": "bwrap", "network": true, "home": "its
    own"}, or {"tool": "none"}); `cli` the CLI's version against the series it was tested with
    ({"version", "tested", "note"}); `refusal` the kind of guard that refused the proposal
    ("size", "scope", "reach", "stale", ...) or how the run failed ("crash", "timeout").
    """

    preset: str
    command: str = ""
    exit_code: int | None = None
    timed_out: bool = False
    interrupted: bool = False
    duration_s: float | None = None
    usage: Usage = field(default_factory=Usage)
    log: str | None = None
    confinement: dict[str, str | bool] = field(default_factory=dict)
    cli: dict[str, str | None] | None = None
    prompt: str | None = None
    prompt_chars: int | None = None
    pivot: bool = False  # the prompt asked for another direction (the session had stalled)
    tail: str | None = None
    prepared_ahead: bool = False  # proposed while the bench measured the one before
    refusal: str | None = None

    @property
    def confined(self) -> bool:
        return self.confinement.get("tool") == "bwrap"

    def refused(self, kind: str) -> AgentRun:
        return replace(self, refusal=kind)

    def to_dict(self) -> dict[str, Any]:
        found = {**asdict(self), "usage": self.usage.to_dict()}
        if self.refusal is None:  # written only for a refused or failed proposal
            del found["refusal"]
        return found

    @classmethod
    def from_dict(cls, found: Mapping[str, Any]) -> AgentRun:
        given = fields_in(cls, found)
        given["preset"] = str(given.get("preset") or "command")
        given["command"] = str(given.get("command") or "")
        given["usage"] = Usage.from_dict(given.get("usage"))
        given["confinement"] = dict(given.get("confinement") or {})
        for flag in ("timed_out", "interrupted", "pivot", "prepared_ahead"):
            given[flag] = bool(given.get(flag))
        return cls(**given)


def agent_checks(agent: object) -> list[tuple[str, Any, Any]]:
    """The parts of a line's `agent` to check before it is read (records.py): its usage an
    object of numbers, which the spend adds up."""
    if not isinstance(agent, dict):
        return []  # the record checks `agent` itself is an object or null
    usage = agent.get("usage")
    found: list[tuple[str, Any, Any]] = [("agent.usage", usage, OPTIONAL_OBJECT)]
    if isinstance(usage, dict):
        found += [
            (f"agent.usage.{k}", usage.get(k), OPTIONAL_NUMBER)
            for k in ("cost_usd", "input_tokens", "output_tokens", "turns")
        ]
    return found
