"""After a crash: finish the record of the experiment that was in flight, and clean the worktree.

Three cases, told apart by the journal and the branch tip:
- the record was written before the crash: only the marker is stale;
- the keep commit landed but its record was not written: write the keep record now;
- anything else: the experiment was interrupted; revert to the last kept commit and record it.
"""

from __future__ import annotations

from .experiment import parse_trailers, record_from_marker
from .journal import Journal
from .proc import kill_processes
from .progress import Progress
from .records import ExperimentRecord
from .state import SessionPaths, read_inflight
from .workspace import Workspace

__all__ = ["recover"]


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
    if not ws.is_clean():
        progress.warn(f"reverting uncommitted changes in {ws.path} to the last kept commit")
    ws.revert()
    paths.inflight.unlink(missing_ok=True)


def _record_for(marker: dict, ws: Workspace, journal: Journal) -> ExperimentRecord | None:
    fields = marker.get("fields") or {}
    exp_id = fields.get("id")  # None for a marker left by calibration: nothing to record
    if exp_id is None or any(r.id == exp_id for r in journal.read().experiments):
        return None
    tip = ws.tip()
    landed = parse_trailers(ws.tree.commit_message(tip)).get("Experiment-Id") == exp_id
    pending = marker.get("pending")
    if landed and pending:
        return ExperimentRecord.from_dict({**pending, "kept_commit": tip})
    return record_from_marker(marker, "interrupted")
