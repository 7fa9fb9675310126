"""The agent's prompt: what a strong engineer would want to know before the next try.

The objective and its noise, the scope and the checks, what was kept (with the cumulative diff's
stat), the last experiments with their evidence and why they ended, the closed axes and the
ideas backlog, and what to hand back. It must fit a character budget: older history is
summarised (one line each, then counts by status and family), never silently dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from markupsafe import Markup

from ...config import Config
from ...decide.hidden import shown_to_agents
from ...decide.percent import change_pct
from ...errors import UserError
from ...inert import quoted
from ...journal.records import ExperimentRecord
from ...process.capture import capture
from ...profiles import profile_summary
from ...progress import format_value
from ...report.ideas import CLOSED_RULES
from ...report.outcomes import STATUS_FIRST
from ...report.render import render_template
from ...statuses import Status
from ..base import Hypothesis, ProposalContext

__all__ = ["closed_axes", "render_prompt"]

BUILTIN = "agent_prompt.md.j2"
MIN_RECENT = 3  # experiments always shown in full, however tight the budget


def render_prompt(
    context: ProposalContext,
    config: Config,
    *,
    recent: int,
    budget_chars: int,
    pivot: str | None,
    hypothesis_path: Path,
    max_patch_kib: int,
    template: Path | None = None,
    measuring: Hypothesis | None = None,
) -> str:
    """The prompt, within `budget_chars`: the oldest history is summarised first."""
    records = [r for r in context.records if r.status != Status.INTERRUPTED or r.kept_commit]
    ideas = _ideas(config)
    shown = min(recent, len(records))
    detail = 2  # 2: older experiments one line each; 1: counts only; 0: the counts, shorter
    text = ""
    while True:
        data = _data(context, config, records, shown, detail, ideas, pivot)
        data |= {
            "hypothesis_path": str(hypothesis_path),
            "max_patch_kib": max_patch_kib,
            "measuring": measuring.title if measuring is not None else None,
        }
        text = _render(template, data)
        if len(text) <= budget_chars:
            return text
        if shown > MIN_RECENT:
            shown = max(MIN_RECENT, shown // 2)
        elif detail > 0:
            detail -= 1
        elif ideas:
            ideas = ideas[: len(ideas) // 2] + "\n[... the rest of ideas.md left out ...]"
            if len(ideas) < 200:
                ideas = ""
        else:  # the fixed parts alone are over the budget: cut, and say so
            marker = "\n\n[... prompt cut to its budget ...]\n"
            return text[: max(0, budget_chars - len(marker))] + marker


def closed_axes(records: Sequence[ExperimentRecord]) -> list[ExperimentRecord]:
    """Experiments whose idea is done as it is: rejected for a reason more runs will not change."""
    return [r for r in records if r.status != Status.KEEP and _reason(r) in CLOSED_RULES]


def _reason(record: ExperimentRecord) -> str:
    rule = record.rule
    return record.status if record.status in STATUS_FIRST or not rule else str(rule)


def _render(template: Path | None, data: dict[str, Any]) -> str:
    if template is None:
        return render_template(BUILTIN, None, p=data)
    return render_template(template.name, template.parent, p=data)


def _data(
    context: ProposalContext,
    config: Config,
    records: list[ExperimentRecord],
    shown: int,
    detail: int,
    ideas: str,
    pivot: str | None,
) -> dict[str, Any]:
    metric = config.metric
    unit = metric.unit
    older, recent = records[: len(records) - shown], records[len(records) - shown :]
    best_change = change_pct(context.baseline, context.best)
    return {
        "metric": context.metric,  # the session's: its fallback once a calibration chose it
        "direction": str(metric.direction),
        "better": str(metric.direction),
        "unit": unit,
        "tip": context.tip,
        "base": context.base or context.tip,
        "baseline": format_value(context.baseline, unit),
        "best": format_value(context.best, unit),
        "best_change": f"{best_change:+.1f}%" if best_change is not None else "",
        "noise": _pct(context.noise_pct),
        "threshold": _pct(context.threshold_pct),
        "sentinels": [{"name": s.name, "budget": f"{s.budget_pct:g}%"} for s in config.sentinel],
        "include": config.scope.include,
        "protect": config.protected_globs(),
        "checks": config.checks.command,
        "holdout": bool(config.holdout.command),
        "profile": _profile(config, context.tip),
        "equivalence": config.equivalence.command,
        "pivot": pivot,
        "kept": [_row(r) for r in records if r.status == Status.KEEP],
        "diffstat": _diffstat(context),
        "recent": [_row(r) for r in recent],
        "older": _older(older, detail),
        "closed": [_closed_line(r) for r in closed_axes(records)],
        "ideas": ideas,
    }


def _profile(config: Config, tip: str) -> dict[str, Any] | None:
    """The best's profile, when one was taken: where its time goes."""
    if not config.profile.command or not tip:
        return None
    from ...repo.state_dir import session_paths

    return profile_summary(session_paths(config).profile(tip), tip, config.profile.top)


def _pct(value: float | None) -> str:
    return "not measured yet" if value is None else f"{value:.1f}%"


def _row(record: ExperimentRecord) -> dict[str, Any]:
    evidence = record.evidence()
    change, low, high = evidence.change_pct, evidence.ci_low_pct, evidence.ci_high_pct
    text = ""
    if change is not None:
        text = f"{change:+.1f}%"
        if low is not None and high is not None:
            text += f" [95% CI {low:+.1f}%, {high:+.1f}%]"
    decided = record.decision.reason if record.decision is not None else ""
    why = record.asi.rollback_reason or record.error or decided
    why = shown_to_agents(record.rule, why)  # what the holdout measures stays hidden
    return {
        "n": record.n,
        "status": record.status,
        "title": record.title,
        "family": record.family,
        "change": text,
        "rule": record.rule,
        "why": _one_line(why, 240),
        "mechanism": _one_line(record.asi.mechanism or "", 200),
    }


def _older(records: list[ExperimentRecord], detail: int) -> str:
    """The older experiments, summarised as Markdown whose titles and families, the proposers'
    words, are quoted as data (inert.quoted)."""
    if not records:
        return ""
    statuses = Counter(r.status for r in records)
    counts = ", ".join(f"{status} {n}" for status, n in statuses.most_common())
    head = f"{len(records)} earlier experiments: {counts}."
    if detail == 0:
        return Markup(head)
    families = Counter(r.family for r in records if r.family)
    if families:
        said = ", ".join(f"{quoted(f)} {n}" for f, n in families.most_common())
        head += f" Families: {said}."
    if detail == 1:
        return Markup(head)
    lines = [f"- #{r.n} {r.status}: {quoted(_one_line(r.title, 100))}" for r in records]
    return Markup(head + "\n\n" + "\n".join(lines))


def _closed_line(record: ExperimentRecord) -> str:
    family = f" [{record.family}]" if record.family else ""
    row = _row(record)
    change = f" ({row['change']})" if row["change"] else ""
    return f"#{record.n} {record.title}{family}{change}: {_reason(record)}"


def _one_line(text: str, width: int) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _diffstat(context: ProposalContext) -> str:
    if not context.base or context.base == context.tip:
        return ""
    done = capture(["git", "diff", "--stat=100", context.base, context.tip], cwd=context.worktree)
    return done.text().rstrip() if done.ok else ""


def _ideas(config: Config) -> str:
    path = config.ideas_path
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise UserError(f"{path}: cannot read the ideas backlog: {exc.strerror}") from None
