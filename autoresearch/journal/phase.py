"""One phase of an experiment as the record holds it (the record's `phases`: apply, build,
bench, checks... by name, in the order they ran): when it started and ended and how long it
took, with its codec to and from the journal's JSON (the format it has always had)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .field_types import OBJECT, OPTIONAL_NUMBER, OPTIONAL_TEXT

__all__ = ["Phase", "phase_checks", "phases_from_dict"]


@dataclass(frozen=True)
class Phase:
    started_at: str
    # None while it runs: a record made from the in-flight marker of a loop that stopped in it.
    ended_at: str | None = None
    duration_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"started_at": self.started_at}
        if self.ended_at is not None:
            found |= {"ended_at": self.ended_at, "duration_s": self.duration_s}
        return found

    @classmethod
    def from_dict(cls, found: Mapping[str, Any]) -> Phase:
        """A phase whose shape the record has checked; what it lacks is unknown."""
        return cls(
            started_at=found.get("started_at") or "",
            ended_at=found.get("ended_at"),
            duration_s=found.get("duration_s"),
        )


def phase_checks(phases: object) -> list[tuple[str, Any, Any]]:
    """The parts of a line's `phases` to check before they are read (records.py): each an
    object, its times text and its duration a number."""
    found: list[tuple[str, Any, Any]] = []
    for name, phase in phases.items() if isinstance(phases, dict) else ():
        found.append((f"phases.{name}", phase, OBJECT))
        if isinstance(phase, dict):
            found += [
                (f"phases.{name}.started_at", phase.get("started_at"), OPTIONAL_TEXT),
                (f"phases.{name}.ended_at", phase.get("ended_at"), OPTIONAL_TEXT),
                (f"phases.{name}.duration_s", phase.get("duration_s"), OPTIONAL_NUMBER),
            ]
    return found


def phases_from_dict(found: Mapping[str, Any]) -> dict[str, Phase]:
    """A record's `phases`, each read as a `Phase`."""
    return {name: Phase.from_dict(phase) for name, phase in found.items()}
