"""What an agent reads of an experiment: one JSON object per try, and the session's last ones.

Light on purpose: `history` and the MCP tools answer from the journal's end, importing neither
the loop nor the statistics.
"""

from __future__ import annotations

from typing import Any

from ..config import Config
from ..decide.hidden import HIDDEN_REASON, shown_to_agents
from ..errors import UserError
from ..journal.draft import next_action
from ..journal.records import EXIT_CODES, ExperimentRecord
from ..journal.tail import last_experiments
from ..statuses import Rule, Status

__all__ = ["history_rows", "outcome"]


def outcome(record: ExperimentRecord, config: Config) -> dict[str, Any]:
    """What an agent needs of a try: one JSON object."""
    # The metric that decided it: the session's [metric] fallback when a calibration chose it.
    decided = record.decision.primary if record.decision is not None else None
    metric = decided or config.metric.name
    evidence = record.evidence(metric)
    refused = record.status in (
        Status.SCOPE_VIOLATION,
        Status.APPLY_FAILED,
        Status.REFUSED,
        Status.TAMPERED,
    )
    return {
        "id": record.id,
        "n": record.n,
        "status": record.status,
        "exit_code": EXIT_CODES.get(record.status, 1),
        "title": record.title,
        "metric": metric,
        "change_pct": evidence.change_pct,
        "ci_low_pct": evidence.ci_low_pct,
        "ci_high_pct": evidence.ci_high_pct,
        "baseline_median": evidence.baseline_median,
        "candidate_median": evidence.candidate_median,
        "rule": record.rule,
        "reason": shown_to_agents(record.rule, record.reason),
        "refused": record.error if refused else None,
        "sentinels": {
            name: {"ok": s.ok, "change_pct": s.change_pct} for name, s in record.sentinels.items()
        },
        "checks": record.checks.exit_code if record.checks is not None else None,
        "kept_commit": record.kept_commit,
        "touched_files": record.touched_files,
        "next_action_hint": record.asi.next_action_hint or next_action(record.status, record.rule),
    }


def without_holdout_figures(summary: dict[str, Any]) -> dict[str, Any]:
    """A review summary as an agent may read it: the hidden holdout's figures left out (its
    confirmation, the reasons of its discards)."""
    summary = dict(summary)
    if summary.get("confirmation"):
        summary["confirmation"] = {**summary["confirmation"], "holdout": None}
    from ..report.outcomes import REASONS  # the review's words: pandas, for the review only

    held = REASONS[Rule.HOLDOUT]
    summary["not_kept"] = [
        g if g["reason"] != held else
        {**g, "experiments": [{**e, "why": HIDDEN_REASON} for e in g["experiments"]]}
        for g in summary.get("not_kept", [])
    ]  # fmt: skip
    return summary


def best_profile_now(config: Config, fresh: bool, env: dict[str, str]) -> dict[str, Any]:
    """The best's profile (`profile`, the MCP server's `profile`): the stored one, or with
    `fresh` one taken now in a worktree of its own; `why` says why there is none."""
    from ..loop.best_profile import profile_commit
    from ..morning.status import session_status
    from ..profiles import profile_summary
    from ..repo.state_dir import session_paths

    if not config.profile.command:
        return {"profile": None, "why": "the config has no [profile] command"}
    status = session_status(config)
    commit = (status["best"] or {}).get("commit") or status["base_commit"]
    if commit is None:
        return {"profile": None, "why": "the session has not started: no best to profile"}
    if fresh:
        _, why = profile_commit(config, commit, env)
        if why:
            return {"profile": None, "why": why}
    found = profile_summary(session_paths(config).profile(commit), commit, config.profile.top)
    why = "" if found else f"none taken of {commit[:10]} yet (--fresh takes one)"
    return {"profile": found, "why": why}


def history_rows(config: Config, last: int) -> list[dict[str, Any]]:
    """The session's last experiments, compact, with their ASI: what to choose the next from."""
    if last < 0:
        raise UserError(f"last must be 0 (all of them) or more, not {last}")
    records = last_experiments(config.journal_path, config.session.name, last)
    rows = []
    for record in records:
        row = outcome(record, config)
        row.pop("exit_code")
        row |= {
            "family": record.family,
            "proposer": record.proposer,
            "hypothesis": record.asi.hypothesis,
            "mechanism": record.asi.mechanism,
            "rollback_reason": record.asi.rollback_reason
            and shown_to_agents(record.rule, record.asi.rollback_reason),
            "started_at": record.started_at,
        }
        rows.append(row)
    return rows
