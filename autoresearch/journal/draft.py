"""An experiment in flight: its record grows phase by phase, persisted so a crash loses nothing.

The in-flight marker is the draft record. If the loop dies, the next run finds the marker and
writes the record from it (interrupted, or keep when the commit had already landed).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..atomic import write_json_atomic
from ..statuses import Rule, Status
from .records import Asi, ExperimentRecord

__all__ = [
    "NEXT_ACTION",
    "Draft",
    "next_action",
    "now_iso",
    "parse_trailers",
    "record_from_marker",
    "result_trailer",
]

# What to try next, by how an experiment ended.
NEXT_ACTION = {
    "keep": "build on this change; re-measure neighbouring settings of the same knob",
    "discard": "closed axis unless a new mechanism changes the picture; do not retry as is",
    "inconclusive": "effect below the noise threshold: retry with more runs, or combine it",
    "crash": "the patched bench fails: read the bench log and fix the patch",
    "timeout": "the patched bench hangs or is far slower: look for a deadlock or a blow-up",
    "checks_failed": "the change breaks correctness: fix it so the checks pass, then retry",
    "apply_failed": "the patch does not apply to the session tip: rebase it",
    "scope_violation": "touch only the configured scope; the harness and manifests are protected",
    "tampered": "the candidate changed what judges it (the other tree, the harness, git "
    "state or your checkout) while it ran: never keep it; find what the code writes outside "
    "its own tree",
    "interrupted": "the experiment was cut short; it runs again once on resume",
    "baseline_failed": "the current best failed during this experiment (a flaky bench or "
    "machine), so the candidate was not judged; it runs again once",
    "refused": "the proposal broke a rule the loop checks before benching (see the reason): "
    "the next one must not",
    "agent_failed": "the agent crashed, timed out or reported an error before proposing: read "
    "its log",
}
# A discard whose rule more runs could change is not a closed axis: not promising within the
# cap (the second look takes it up again), or under a threshold the noise raised (a near miss
# a quieter machine or more runs may show; the loop does not retry it by itself).
WORTH_ANOTHER_LOOK = {
    Rule.NOT_PROMISING: (
        "worth another look: not shown within this run budget; the second look measures it "
        "again, or combine it with another change"
    ),
    Rule.BELOW_NOISE_THRESHOLD: (
        "worth another look: under the threshold this bench's noise sets; a quieter machine, "
        "more runs or a combination may show it (the loop does not retry it by itself)"
    ),
}

# An inconclusive whose primary metric was shown a win: what it waits for is a sentinel, not
# more of the primary's runs (the generic hint sent the reader after a noise the win was not).
SENTINEL_UNRESOLVED = (
    "the primary metric's win was shown; a sentinel was not shown within its budget (see the "
    "reason): the second look measures it again, `autoresearch retry ID` on a quieter machine "
    "does too, and a sentinel the change cannot touch may take a wider budget_pct"
)


def next_action(status: str, rule: str | None = None) -> str:
    """What to try next after an experiment that ended so (one vocabulary: the record's hint,
    `history`, the agent's prompt and ideas.md say the same)."""
    known = {r.value: r for r in Rule}
    if status == Status.DISCARD and rule in known and not known[rule].closes_axis:
        return WORTH_ANOTHER_LOOK.get(known[rule], WORTH_ANOTHER_LOOK[Rule.NOT_PROMISING])
    if status == Status.INCONCLUSIVE and rule == Rule.SENTINEL_UNRESOLVED:
        return SENTINEL_UNRESOLVED
    return NEXT_ACTION[status]


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass
class Draft:
    """The growing record of one experiment, mirrored to the in-flight marker."""

    marker: Path
    fields: dict[str, Any]
    phases: dict[str, dict[str, Any]] = field(default_factory=dict)
    pgid: int | None = None  # the bench or checks running now, for a restart to kill
    _current: str | None = None
    _phase_started: float = 0.0
    _started: float = field(default_factory=time.monotonic)

    @property
    def started_at(self) -> float:
        """When the draft began (time.monotonic)."""
        return self._started

    def phase(self, name: str) -> None:
        """Close the running phase and open `name`; the marker records where we are."""
        self._close_phase()
        self._current = name
        self._phase_started = time.monotonic()
        self.phases[name] = {"started_at": now_iso()}
        self.save()

    def _close_phase(self) -> None:
        if self._current is not None:
            entry = self.phases[self._current]
            entry["ended_at"] = now_iso()
            entry["duration_s"] = round(time.monotonic() - self._phase_started, 3)
            self._current = None

    def save(self, pending: dict[str, Any] | None = None) -> None:
        write_json_atomic(
            self.marker,
            {
                "fields": self.fields,
                "phases": self.phases,
                "phase": self._current,
                "pgid": self.pgid,
                "updated_at": now_iso(),
                "pending": pending,
            },
        )

    def running(self, pgid: int) -> None:
        """Note the process group now running, so that a restart after a crash can stop it."""
        self.pgid = pgid
        self.save()

    def finish(self, status: str, reason: str | None = None, **more: Any) -> ExperimentRecord:
        """The final record; `reason` explains a non-keep and becomes the rollback reason."""
        self._close_phase()
        asi = dict(self.fields.get("asi") or {})
        rule = (more.get("decision") or {}).get("rule")
        asi.setdefault("next_action_hint", next_action(status, rule))
        if status != Status.KEEP:
            asi["rollback_reason"] = reason
        if reason and not asi.get("result"):
            asi["result"] = reason
        data = {
            **self.fields,
            **more,
            "status": status,
            "ended_at": now_iso(),
            "duration_s": round(time.monotonic() - self._started, 3),
            "phases": self.phases,
            "asi": Asi.from_dict(asi),
        }
        return ExperimentRecord.from_dict(data)

    def note(self, **values: Any) -> None:
        """Add fields the record will carry (touched files, ASI result...)."""
        for key, value in values.items():
            if key == "asi":
                self.fields["asi"] = {**(self.fields.get("asi") or {}), **value}
            else:
                self.fields[key] = value


def record_from_marker(marker: dict[str, Any], status: str, **more: Any) -> ExperimentRecord:
    """The record of an experiment that only its in-flight marker remembers."""
    fields = dict(marker.get("fields") or {})
    asi = dict(fields.get("asi") or {})
    phase = marker.get("phase") or "unknown"
    if status == Status.INTERRUPTED:
        asi["rollback_reason"] = f"the loop stopped during the {phase} phase"
        asi["next_action_hint"] = NEXT_ACTION["interrupted"]
    data = {
        **fields,
        "status": status,
        "ended_at": marker.get("updated_at") or now_iso(),
        "duration_s": fields.get("duration_s", 0.0),
        "phases": marker.get("phases") or {},
        "asi": Asi.from_dict(asi),
        **more,
    }
    return ExperimentRecord.from_dict(data)


def parse_trailers(message: str) -> dict[str, str]:
    """`Key: value` trailers of a commit message's last paragraph."""
    paragraphs = [p for p in message.strip().split("\n\n") if p.strip()]
    if not paragraphs:
        return {}
    trailers = {}
    for line in paragraphs[-1].splitlines():
        key, sep, value = line.partition(": ")
        if sep and key and " " not in key:
            trailers[key] = value.strip()
    return trailers


def result_trailer(summary: dict[str, Any]) -> str:
    return json.dumps(summary, sort_keys=True, separators=(",", ":"), allow_nan=False)
