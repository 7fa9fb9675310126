"""Log retention: a night writes a log per bench run; what a review can still use is kept.

Kept: the logs of every kept experiment, of the last `keep_logs` experiments (an agent's
prompt, output and diff with them), of the session's first calibration (the baseline's raw
output in the PR), of its last calibration and its last confirmation (the final state's raw
output). Everything else under `logs/` goes. The records
keep their tails, so a pruned log costs the full output, never the record's evidence.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ..journal.store import Journal
from ..repo.state_dir import SessionPaths
from ..statuses import Status

__all__ = [
    "PruneResult",
    "enforce_log_budget",
    "logs_bytes",
    "prune_logs",
    "prune_session_logs",
]

RECENT_S = 3600.0


@dataclass(frozen=True)
class PruneResult:
    removed: list[Path]
    freed_bytes: int
    kept: int


def prune_logs(
    paths: SessionPaths, journal: Journal, keep_last: int, dry_run: bool = False
) -> PruneResult:
    """Remove the log directories the retention rule does not keep. Reads the journal's
    summary, and whole only the records whose logs stay."""
    if not paths.logs.is_dir():
        return PruneResult([], 0, 0)
    digest = journal.digest()
    attempts = digest.attempts or []
    chosen = [a for a in attempts if a.status == Status.KEEP]
    if keep_last > 0:
        chosen += attempts[-keep_last:]
    keep = {a.id for a in chosen}
    # An agent's prompt, output and diff live beside the experiment they became.
    for attempt in dict.fromkeys(chosen):
        record = journal.record(attempt)
        if record is not None and record.agent is not None and record.agent.log:
            keep.add(Path(record.agent.log).parent.name)
    keep |= _dirs_of(digest.calibrations[:1] + digest.calibrations[-1:])
    keep |= _dirs_of(digest.confirmations[-1:])
    known = {a.id for a in attempts}
    removed, freed, kept = [], 0, 0
    for entry in sorted(paths.logs.iterdir()):
        if not entry.is_dir() or entry.name in keep or _in_flight(entry, known):
            kept += 1
            continue
        freed += sum(f.stat().st_size for f in entry.rglob("*") if f.is_file())
        removed.append(entry)
        if not dry_run:
            shutil.rmtree(entry, ignore_errors=True)
    return PruneResult(removed, freed, kept)


def _dirs_of(records: list[dict]) -> set[str]:
    """The log directory names a calibration's or confirmation's bench logs live in."""
    return {Path(log).parent.name for record in records for log in record.get("bench_logs", [])}


def _in_flight(entry: Path, known: set[str]) -> bool:
    """An experiment directory the journal does not know yet: the one running now, or one a
    crash left for recovery. Calibrations and confirmations are always recorded."""
    if entry.name.startswith("agent-"):  # a proposal being made now is at most an hour old
        return time.time() - entry.stat().st_mtime < RECENT_S
    return not entry.name.startswith(("calibration-", "confirmation-")) and entry.name not in known


def prune_session_logs(session) -> None:  # run: an open session.Session
    """Apply the log retention rule ([session] keep_logs) once the run is over."""
    keep = session.config.session.keep_logs
    if keep:
        result = prune_logs(session.paths, session.journal, keep)
        if result.removed:
            session.progress.info(
                f"pruned the logs of {len(result.removed)} experiment(s), "
                f"{result.freed_bytes / 1e6:.1f} MB (session.keep_logs = {keep})"
            )


def logs_bytes(paths: SessionPaths) -> int:
    """What the session's logs take on disk."""
    if not paths.logs.is_dir():
        return 0
    total = 0
    for entry in paths.logs.rglob("*"):
        with contextlib.suppress(OSError):
            if entry.is_file():
                total += entry.stat().st_size
    return total


def enforce_log_budget(session) -> None:  # session: an open session.Session
    """Between experiments: when the logs pass `session.max_logs_mb`, the retention rule runs
    now instead of at the end of the run, keeping fewer recent experiments until they fit."""
    budget = session.config.session.max_logs_mb * 1e6
    if logs_bytes(session.paths) <= budget:
        return
    for keep in dict.fromkeys((session.config.session.keep_logs or 50, 10, 1)):
        result = prune_logs(session.paths, session.journal, keep)
        if result.removed:
            session.progress.warn(
                f"the session's logs passed session.max_logs_mb = "
                f"{session.config.session.max_logs_mb:g}: pruned the logs of "
                f"{len(result.removed)} experiment(s) ({result.freed_bytes / 1e6:.1f} MB), "
                f"keeping the last {keep} and every keep"
            )
        if logs_bytes(session.paths) <= budget:
            return
