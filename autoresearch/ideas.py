"""`autoresearch ideas`: keep the ideas backlog in step with the journal.

The journal's part of ideas.md sits between two marker lines and is rewritten each time; every
other line of the file is a person's and is left exactly as it was.
"""

from __future__ import annotations

from pathlib import Path

from .report.summary import REASONS
from .state import write_text_atomic

__all__ = ["BEGIN", "END", "render_ideas", "update_ideas"]

BEGIN = "<!-- autoresearch:begin: written by `autoresearch ideas`, edits in here are replaced -->"
END = "<!-- autoresearch:end -->"
# Not kept for a reason that more runs will not change: do not retry without a new idea.
CLOSED_RULES = {
    "significant_loss",
    "below_threshold",
    "sentinel_budget",
    "checks_failed",
    "tampered",
    "discard",
    "worse_beyond_noise",
}


def render_ideas(summary: dict) -> str:
    """The journal's section of ideas.md."""
    lines = [BEGIN, "", f"## From the journal: {summary['name']}", ""]
    lines.append(f"### Kept ({len(summary['wins'])})")
    lines.append("")
    for w in summary["wins"]:
        change = f" ({w['change_pct']:+.1f}%)" if w["change_pct"] is not None else ""
        mechanism = f": {w['mechanism']}" if w["mechanism"] else ""
        earlier = f" ({w['earlier']})" if w.get("earlier") else ""
        lines.append(f"- #{w['n']} {w['title']}{earlier}{change}{mechanism}")
    closed, retry = [], []
    for group in summary["not_kept"]:
        for e in group["experiments"]:
            change = f" ({e['change_pct']:+.1f}%)" if e["change_pct"] is not None else ""
            why = f": {e['why']}" if e["why"] else ""
            earlier = f" ({e['earlier']})" if e.get("earlier") else ""
            line = f"- #{e['n']} {e['title']}{earlier}{change} [{group['reason'].lower()}]{why}"
            closed_reasons = {REASONS.get(r, r) for r in CLOSED_RULES}
            (closed if group["reason"] in closed_reasons else retry).append(line)
    lines += ["", f"### Worth another try ({len(retry)})", "", *retry]
    lines += ["", f"### Closed axes: do not retry as is ({len(closed)})", "", *closed]
    sweeps = (summary.get("sweeps") or []) + (summary.get("joint") or [])
    if sweeps:
        lines += ["", f"### Swept knobs ({len(sweeps)})", ""]
        lines += [f"- {k['line']} ({k['experiments']} experiments)" for k in sweeps]
    lines += ["", END]
    return "\n".join(lines) + "\n"


def update_ideas(path: Path, summary: dict) -> str:
    """Replace the journal's section of `path` (or append one); the rest of the file stays."""
    section = render_ideas(summary)
    text = path.read_text(encoding="utf-8") if path.exists() else "# Ideas\n\n"
    if BEGIN in text and END in text.split(BEGIN, 1)[1]:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].removeprefix("\n")
        updated = head + section + tail
    else:
        updated = text.rstrip("\n") + "\n\n" + section
    write_text_atomic(path, updated)
    return updated
