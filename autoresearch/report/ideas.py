"""`autoresearch ideas`: keep the ideas backlog in step with the journal.

The journal's part of ideas.md sits between two marker lines and is rewritten each time; every
other line of the file is a person's and is left exactly as it was.
"""

from __future__ import annotations

from pathlib import Path

from ..atomic import write_text_atomic
from ..errors import UserError
from ..statuses import Rule, Status
from .outcomes import REASONS

__all__ = ["BACKLOG", "BEGIN", "END", "add_idea", "backlog", "render_ideas", "update_ideas"]

BEGIN = "<!-- autoresearch:begin: written by `autoresearch ideas`, edits in here are replaced -->"
END = "<!-- autoresearch:end -->"
# Each list's latest: a season's section stays a backlog to read (an agent's prompt carries the
# file), not every one of its thousands of experiments; `report --all` lists those.
IDEAS_LISTED = 100
BACKLOG = "## Backlog"  # the person's (or agent's) ideas: `autoresearch ideas add`
# Not kept for a reason that more runs will not change: do not retry without a new idea. The
# rules that close an axis, the statuses that do, and the words older journals and pi's logs use.
CLOSED_RULES = {
    *(rule.value for rule in Rule if rule.closes_axis),
    Status.CHECKS_FAILED.value,
    Status.TAMPERED.value,
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
    closed: list[str] = []
    retry: list[str] = []
    for group in summary["not_kept"]:
        for e in group["experiments"]:
            change = f" ({e['change_pct']:+.1f}%)" if e["change_pct"] is not None else ""
            why = f": {e['why']}" if e["why"] else ""
            earlier = f" ({e['earlier']})" if e.get("earlier") else ""
            line = f"- #{e['n']} {e['title']}{earlier}{change} [{group['reason'].lower()}]{why}"
            closed_reasons = {REASONS.get(r, r) for r in CLOSED_RULES}
            (closed if group["reason"] in closed_reasons else retry).append(line)
    lines += ["", f"### Worth another look ({len(retry)})", "", *_latest(retry)]
    lines += ["", f"### Closed axes: do not retry as is ({len(closed)})", "", *_latest(closed)]
    sweeps = (summary.get("sweeps") or []) + (summary.get("joint") or [])
    if sweeps:
        lines += ["", f"### Swept knobs ({len(sweeps)})", ""]
        lines += [f"- {k['line']} ({k['experiments']} experiments)" for k in sweeps]
    lines += ["", END]
    return "\n".join(lines) + "\n"


def _latest(lines: list[str]) -> list[str]:
    """A list's latest IDEAS_LISTED lines, the earlier ones counted."""
    left = len(lines) - IDEAS_LISTED
    if left <= 0:
        return lines
    return [f"- … {left} earlier: `autoresearch report --all` lists every one", *lines[left:]]


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


def add_idea(path: Path, text: str) -> None:
    """Append `- text` to the backlog section of ideas.md (made when missing); the rest stays."""
    idea = " ".join(text.split())
    if not idea:
        raise UserError("an empty idea: autoresearch ideas add 'TEXT'")
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else ["# Ideas"]
    at = _backlog_end(lines)
    if at is None:  # no backlog yet: before the journal's section, or at the end
        at = lines.index(BEGIN) if BEGIN in lines else len(lines)
        block = ["", BACKLOG, "", f"- {idea}", ""]
        lines[at:at] = block if at < len(lines) else block[:-1]
    else:
        lines.insert(at, f"- {idea}")
    write_text_atomic(path, "\n".join(lines) + "\n")


def backlog(path: Path) -> list[str]:
    """The ideas outside the journal's section: every list item a person or an agent wrote."""
    if not path.exists():
        return []
    found, inside = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() == BEGIN:
            inside = True
        elif line.strip() == END:
            inside = False
        elif not inside and line.lstrip().startswith(("- ", "* ")):
            found.append(line.strip())
    return found


def _backlog_end(lines: list[str]) -> int | None:
    """Where a new item of the backlog section goes: after its last item."""
    if BACKLOG not in lines:
        return None
    start = lines.index(BACKLOG) + 1
    end = start
    for i in range(start, len(lines)):
        if lines[i].startswith("#") or lines[i].strip() == BEGIN:
            break
        if lines[i].strip():
            end = i + 1
    return end
