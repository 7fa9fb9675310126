"""Where a session stands: experiments by status, baseline against best, the one in flight."""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

from ..config import Config
from ..decide.headline import headline, session_metric
from ..decide.percent import change_pct
from ..journal.digest import counts_said, hosts_lost_said, session_digest
from ..journal.records import is_headline
from ..profiles import profile_lines, profile_summary
from ..progress import format_value
from ..repo.state_dir import SessionLock, read_inflight, session_paths
from ..statuses import Status

__all__ = ["format_status", "session_status"]


def session_status(config: Config) -> dict[str, Any]:
    """A plain dict (also the `status --json` output) read from the journal's summary and the
    state dir."""
    paths = session_paths(config)
    history = session_digest(config.journal_path, config.session.name)
    primary = session_metric(config.metric, history.calibrations)  # its fallback, if chosen
    by_status, retried = history.outcomes()
    kept = history.last_kept
    base_commit = history.sessions[0]["base_commit"] if history.sessions else None
    tip = kept["commit"] if kept else base_commit
    # The same figure `report` and `pr` show: one measurement behind baseline and best.
    head = headline(history.calibrations, history.confirmations, tip, primary, base_commit)
    baseline = head["baseline"]
    best = _best(kept, head["best"], baseline)
    running = SessionLock(paths.lock).is_held_elsewhere()
    return {
        "session": config.session.name,
        "branch": config.branch,
        "base_commit": base_commit,
        "journal": str(config.journal_path),
        "running": running,
        "experiments": history.experiments,
        # As the review counts them: a hypothesis measured again once, by its last outcome.
        "by_status": by_status,
        "retried": retried,
        "metric": primary,
        "unit": config.metric.unit,
        "baseline": baseline,
        "best": best,
        # The headline's own estimate: a confirmation's paired change, else the medians' ratio.
        "change_pct": head["change_pct"] if kept else change_pct(baseline, baseline),
        "figure": head["note"],
        "noise_pct": _last_noise(history, primary),
        # The smallest change the loop claims now: the last calibration's threshold.
        "threshold_pct": history.calibrations[-1].get("threshold_pct")
        if history.calibrations
        else None,
        "budget": {
            "max_experiments": config.budget.max_experiments,
            "experiments_left": max(0, config.budget.max_experiments - history.experiments),
            "max_hours_per_run": config.budget.max_hours,
        },
        "in_flight": _in_flight(read_inflight(paths.inflight), running),
        # Where the best's time goes: its profile's top frames (profiles.py), when taken.
        "profile": profile_summary(paths.profile(tip), tip, config.profile.top)
        if tip and config.profile.command
        else None,
        "confirmation": _last_confirmation(history),
        "agent": _agent_spend(history.agent),
        "hosts_lost": history.hosts_lost,
        "warnings": history.warnings,
    }


def _best(
    kept: dict[str, Any] | None, value: float | None, baseline: float | None
) -> dict[str, Any] | None:
    """The best as status names it: the last keep, else the baseline, else none yet."""
    if kept:
        return {"value": value, "commit": kept["commit"], "id": kept["id"], "title": kept["title"]}
    if baseline is not None:
        return {"value": baseline, "commit": None, "id": None, "title": "baseline"}
    return None


def _in_flight(marker: dict[str, Any] | None, running: bool) -> dict[str, Any] | None:
    """The experiment in flight, from its marker; orphaned when no loop holds the session."""
    if not marker:
        return None
    fields = marker.get("fields") or {}
    return {
        "id": fields.get("id"),
        "title": fields.get("title"),
        "phase": marker.get("phase"),
        "since": marker.get("updated_at"),
        "orphaned": not running,
    }


def _agent_spend(agent: Counter) -> dict[str, Any] | None:
    """The coding agents' proposals and what they cost; unknown cost is counted, not zero."""
    if not agent["proposals"]:
        return None
    return {
        "proposals": agent["proposals"],
        "cost_usd": round(agent["cost_usd"], 6),
        "unknown_cost": agent["unknown_cost"],
        "refused": agent[Status.REFUSED],
        "failed": agent[Status.AGENT_FAILED],
        "kept": agent[Status.KEEP],
    }


def _last_confirmation(history) -> dict[str, Any] | None:
    """The session's own (a branch `finalize` measured is not its headline)."""
    own = [c for c in history.confirmations if is_headline(c)]
    if not own:
        return None
    c = own[-1]
    keys = ("at", "tip_commit", "runs_per_arm", "change_pct", "ci_low_pct", "ci_high_pct")
    return {key: c[key] for key in keys}


def _last_noise(history, primary: str) -> float | None:
    values = [c["noise_pct"].get(primary) for c in history.calibrations]
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def format_status(status: dict[str, Any]) -> str:
    unit = status["unit"]
    state = "running" if status["running"] else "not running"
    lines = [f"session '{status['session']}' on {status['branch']}: {state}"]
    lines.append("(another: --session NAME; every session here: autoresearch sessions)")
    lines.append(f"journal: {status['journal']}")
    counts = counts_said(status["by_status"], status["retried"]) or "none yet"
    lines.append(f"experiments: {status['experiments']} ({counts})")
    lines.append(f"baseline: {status['metric']} = {format_value(status['baseline'], unit)}")
    best = status["best"]
    if best and best["id"]:
        change = status["change_pct"]
        value = best["value"]
        measured = "not measured yet" if value is None else format_value(value, unit)
        said = f" ({change:+.2f}%)" if change is not None else ""
        lines.append(
            f"best:     {measured}{said} "
            f"at {(best['commit'] or '')[:10]} by {best['id']} {best['title']!r}"
        )
    agent = status.get("agent")
    if agent:
        unknown = f" + {agent['unknown_cost']} of unknown cost" if agent["unknown_cost"] else ""
        lines.append(
            f"agent: {agent['proposals']} proposals, ${agent['cost_usd']:.2f} spent{unknown}; "
            f"{agent['kept']} kept, {agent['refused']} refused, {agent['failed']} failed"
        )
    if status.get("hosts_lost"):
        lines.append(f"bench hosts lost: {hosts_lost_said(status['hosts_lost'])}")
    confirmation = status["confirmation"]
    if confirmation and confirmation["change_pct"] is not None:
        lines.append(
            f"confirmed: {confirmation['change_pct']:+.2f}% "
            f"(95% CI [{confirmation['ci_low_pct']:+.2f}%, {confirmation['ci_high_pct']:+.2f}%], "
            f"{confirmation['runs_per_arm']} runs each, tip {confirmation['tip_commit'][:10]})"
        )
    if best and best["id"]:
        lines.append(f"          ({status['figure']})")
    if status["noise_pct"] is not None:
        lines.append(f"noise:    {status['noise_pct']:.2f}% (robust CV of the baseline runs)")
    flight = status["in_flight"]
    if flight:
        note = (
            "left by a run that died; the next `run` records it as interrupted"
            if flight["orphaned"]
            else f"phase {flight['phase']} since {flight['since']}"
        )
        lines.append(f"in flight: {flight['id']} {flight['title']!r}: {note}")
    lines += profile_lines(status.get("profile"))
    lines += [f"warning: {w}" for w in status["warnings"]]
    return "\n".join(lines)
