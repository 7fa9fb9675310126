"""An experiment's way out and back: its marker, its line in the progress, and what a driver
that died left in flight, sent again.

An executor whose slots are not the driver's own thread (`resumes_flights`) gives each
experiment out a marker of its own under the state's `flights/`; the next night sends each one
its dead driver left again, under its own number. The local executor's one marker is
`inflight.json`, which recovery turns into the record of an interrupted experiment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..journal.draft import Draft
from ..journal.placement import HostFacts
from ..proposers import Hypothesis
from ..repo.state_dir import read_inflight
from .executor import EXPERIMENT, Flight
from .lifecycle import Candidate
from .proposing import proposal_context
from .second_look import second_look_count
from .session import Session

__all__ = ["announce", "flight_marker", "resumed_flights"]


def flight_marker(session: Session, n: int, own: bool) -> Path:
    """Where experiment `n`'s draft is mirrored while it is out: a marker of its `own`, or the
    session's one."""
    return session.paths.flights / f"{n:04d}.json" if own else session.paths.inflight


def announce(session: Session, hypothesis: Hypothesis, n: int) -> None:
    """Experiment n of N: N counted once, at the run's first experiment, from what the
    proposers have and the second looks pending, within the budget (progress.Plan)."""
    pending = session.proposer.pending(proposal_context(session))
    looks = second_look_count(session.paths, session.attempts, session.config.budget.retries)
    budget_left = session.config.budget.max_experiments - session.tally.done
    of, grew = session.plan.count(n, pending, looks, budget_left)
    if grew:
        session.progress.info(grew)
    session.progress.experiment(n, of, hypothesis.title)


def resumed_flights(session: Session) -> list[Flight]:
    """Experiments a dead driver left in flight, to send again under their own numbers (the
    ones recorded since, or whose patch is gone, forgotten)."""
    recorded = {r.id for records in session.attempts.values() for r in records}
    found = []
    for path in sorted(session.paths.flights.glob("*.json")):
        marker = read_inflight(path) or {}
        fields = marker.get("fields") or {}
        patch = _patch_of(session, fields)
        if fields.get("id") in recorded or patch is None:
            path.unlink()
            continue
        hypothesis = Hypothesis(
            title=fields.get("title") or patch.stem,
            patch=patch.read_bytes(),
            hypothesis=(fields.get("asi") or {}).get("hypothesis"),
            mechanism=(fields.get("asi") or {}).get("mechanism"),
            expected_effect=(fields.get("asi") or {}).get("expected_effect"),
            source=fields.get("source"),
            proposer=fields.get("proposer"),
            proposal=fields.get("proposal"),
            family=fields.get("family"),
        )
        if hypothesis.sha256 in session.tried:
            path.unlink()
            continue
        draft = Draft(marker=path, fields=fields, phases=marker.get("phases") or {})
        session.progress.info(
            f"{fields['id']} was in flight when the driver stopped: sending it again"
        )
        session.tally.next_n = max(session.tally.next_n, int(fields.get("n", 0)) + 1)
        candidate = Candidate(hypothesis, draft, patch, fields.get("touched_files") or [])
        # The hosts already lost under it stay in its record, and count toward its limit.
        facts = HostFacts.from_dict(fields.get("cluster") or {})
        found.append(
            Flight(
                EXPERIMENT,
                parent=session.ws.tip(),
                candidate=candidate,
                facts=HostFacts(lost=facts.lost),
                losses=len(facts.lost),
            )
        )
    return found


def _patch_of(session: Session, fields: dict[str, Any]) -> Path | None:
    """The patch the experiment saved (lifecycle.save_patch), found by its number and hash."""
    n, sha = fields.get("n"), str(fields.get("patch_sha256") or "")
    if not isinstance(n, int) or not sha:
        return None
    path = session.paths.patches / f"{n:04d}-{sha[:12]}.patch"
    return path if path.is_file() else None
