"""One phase of an experiment as the record holds it (the record's `phases`: apply, build,
bench, checks... by name, in the order they ran): when it started and ended and how long it
took, with its codec to and from the journal's JSON (the format it has always had)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Phase", "phases_from_dict"]


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
        duration = found.get("duration_s")
        return cls(
            started_at=str(found.get("started_at") or ""),
            ended_at=found.get("ended_at"),
            duration_s=None if duration is None else float(duration),
        )


def phases_from_dict(found: Mapping[str, Any]) -> dict[str, Phase]:
    """A record's `phases`, each read as a `Phase` (an entry of another shape is left out)."""
    return {name: Phase.from_dict(v) for name, v in found.items() if isinstance(v, Mapping)}
