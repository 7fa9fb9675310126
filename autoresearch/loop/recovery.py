"""After a crash: finish the record of the experiment that was in flight, and clean the worktree.

Three cases, told apart by the journal and the branch tip:
- the record was written before the crash: only the marker is stale;
- the keep commit landed but its record was not written: write the keep record now;
- anything else: the experiment was interrupted; revert to the last kept commit and record it.

Then the branch and the journal are reconciled: every commit of the session branch that carries
an `Experiment-Id` trailer has its record, written from the trailers when the journal lost it
(a damaged line, a truncated or deleted journal). The branch is the source of truth for code.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..bench.proc import kill_processes
from ..journal.decision import Decision
from ..journal.draft import parse_trailers, record_from_marker
from ..journal.evidence import Evidence
from ..journal.records import Asi, ExperimentRecord
from ..journal.store import Journal
from ..progress import Progress
from ..repo.state_dir import SessionPaths, read_inflight
from ..repo.workspace import Workspace
from ..statuses import Rule, Status

__all__ = [
    "KeptCommit",
    "kept_commits",
    "landed_keep",
    "next_experiment_number",
    "reconcile_branch",
    "recover",
]

_NUMBERED = re.compile(r"(?:^|-)(\d{4,})(?:-|\.patch$|$)")


def recover(
    ws: Workspace, journal: Journal, paths: SessionPaths, progress: Progress, token: str
) -> None:
    marker = read_inflight(paths.inflight)
    # Every process a dead loop of this session started carries its token, wherever it went.
    killed = kill_processes(token)
    if killed:
        progress.warn(f"stopped {killed} process(es) left running by a dead loop")
    if marker is not None:
        record = _record_for(marker, ws, journal)
        if record is not None:
            journal.append(record)
            progress.warn(f"recovered experiment {record.id} ({record.title!r}) as {record.status}")
    # A cluster's experiments in flight: one whose keep commit landed gets its record here;
    # the others are sent again by the next night (flights.py).
    for path in sorted(paths.flights.glob("*.json")):
        flight = read_inflight(path)
        record = landed_keep(flight, ws) if flight else None
        if record is not None:
            if record.id not in recorded_ids(journal):
                journal.append(record)
                progress.warn(f"recovered experiment {record.id} ({record.title!r}) as keep")
            path.unlink()
    if not ws.is_clean():
        progress.warn(f"reverting uncommitted changes in {ws.path} to the last kept commit")
    ws.revert()
    paths.inflight.unlink(missing_ok=True)


def _record_for(marker: dict[str, Any], ws: Workspace, journal: Journal) -> ExperimentRecord | None:
    fields = marker.get("fields") or {}
    exp_id = fields.get("id")  # None for a marker left by calibration: nothing to record
    if exp_id is None or exp_id in recorded_ids(journal):
        return None
    return landed_keep(marker, ws) or record_from_marker(marker, Status.INTERRUPTED)


def landed_keep(marker: dict[str, Any], ws: Workspace) -> ExperimentRecord | None:
    """The keep record of an experiment whose commit is the branch tip, from its marker."""
    exp_id = (marker.get("fields") or {}).get("id")
    tip = ws.tip()
    pending = marker.get("pending")
    if (
        exp_id
        and pending
        and parse_trailers(ws.tree.commit_message(tip)).get("Experiment-Id") == exp_id
    ):
        return ExperimentRecord.from_dict({**pending, "kept_commit": tip})
    return None


class KeptCommit:
    """A commit of the session branch that an experiment kept, as its trailers describe it."""

    def __init__(self, sha: str, parent: str, message: str, trailers: dict[str, str]):
        self.sha, self.parent, self.message, self.trailers = sha, parent, message, trailers

    @property
    def exp_id(self) -> str:
        return self.trailers["Experiment-Id"]

    @property
    def n(self) -> int:
        match = re.search(r"(\d+)$", self.exp_id)
        return int(match.group(1)) if match else 0


def kept_commits(ws: Workspace, session: str) -> list[KeptCommit]:
    """The branch's kept commits, oldest first: first parents from the tip for as long as they
    carry this session's `Experiment-Id`."""
    out = ws.tree.run("log", "--first-parent", "--format=%H %P%x00%B%x1e", ws.tip()).out
    found = []
    for entry in out.split("\x1e"):
        head, _, message = entry.strip("\n").partition("\x00")
        if not head:
            continue
        sha, *parents = head.split()
        trailers = parse_trailers(message)
        if not trailers.get("Experiment-Id", "").startswith(f"{session}-") or not parents:
            break
        found.append(KeptCommit(sha, parents[0], message, trailers))
    return found[::-1]


def reconcile_branch(
    ws: Workspace, journal: Journal, session: str, progress: Progress
) -> list[ExperimentRecord]:
    """Write a keep record for every kept commit the journal has no record of."""
    recorded = recorded_ids(journal)
    written = []
    for commit in kept_commits(ws, session):
        if commit.exp_id in recorded:
            continue
        record = _record_from_trailers(commit, session)
        journal.append(record)
        written.append(record)
        progress.warn(
            f"the journal had no record of kept commit {commit.sha[:10]} ({record.id}, "
            f"{record.title!r}): recovered it from the commit's trailers"
        )
    return written


def recorded_ids(journal: Journal) -> set[str]:
    """The ids of the session's experiments the journal holds (from its summary)."""
    return {attempt.id for attempt in journal.digest().attempts or []}


def next_experiment_number(
    paths: SessionPaths, numbers: list[int], commits: list[KeptCommit]
) -> int:
    """One more than any experiment number the session has used: in the journal, on the
    branch, or in the state directory's patches and logs (which a damaged journal line does
    not erase), so that ids never repeat."""
    used = [0, *numbers, *(c.n for c in commits)]
    for folder in (paths.patches, paths.logs):
        if folder.is_dir():
            for entry in folder.iterdir():
                match = _NUMBERED.search(entry.name)
                if match and not entry.name.startswith(("calibration", "confirmation")):
                    used.append(int(match.group(1)))
    marker = read_inflight(paths.inflight) or {}
    n = (marker.get("fields") or {}).get("n")
    if isinstance(n, int):
        used.append(n)
    return max(used) + 1


def _record_from_trailers(commit: KeptCommit, session: str) -> ExperimentRecord:
    try:
        result = json.loads(commit.trailers.get("Result") or "{}")
    except json.JSONDecodeError:
        result = {}
    result = result if isinstance(result, dict) else {}
    title = commit.message.strip().splitlines()[0] if commit.message.strip() else commit.exp_id
    fields = dict(
        line.split(": ", 1)
        for line in commit.message.splitlines()
        if line.startswith(("Mechanism: ", "Hypothesis: "))
    )
    found = result.get("ci_pct")
    ci = found if isinstance(found, list) else [None, None]
    metric = str(result.get("metric") or "")

    def number(key: str, value: Any = None) -> float | None:
        found = result.get(key) if value is None else value
        return found if isinstance(found, int | float) else None

    evidence = Evidence(
        baseline_median=number("baseline"),
        candidate_median=number("candidate"),
        change_pct=number("change_pct"),
        ci_low_pct=number("", ci[0]),
        ci_high_pct=number("", ci[-1]),
        p_better=number("p_value"),
        threshold_pct=number("threshold_pct"),
    )
    return ExperimentRecord(
        session=session,
        id=commit.exp_id,
        n=commit.n,
        status=Status.KEEP,
        title=title,
        proposer="unknown",
        source=None,
        patch_sha256=str(result.get("patch_sha256") or ""),
        touched_files=[],
        parent_commit=commit.parent,
        kept_commit=commit.sha,
        started_at="",
        ended_at="",
        duration_s=0.0,
        decision=Decision(
            Status.KEEP,
            Rule.RECOVERED,
            "recovered from the commit's Result trailer; the full evidence was lost",
            primary=metric or None,
            metrics={metric: evidence} if metric else {},
        ),
        asi=Asi(
            hypothesis=fields.get("Hypothesis"),
            mechanism=fields.get("Mechanism"),
            result="kept; its journal line was lost, this record comes from the commit trailers",
        ),
    )
