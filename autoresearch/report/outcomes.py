"""How a review names outcomes: the counts that add up, the kept wins, and the groups of what
was not kept with why, in one vocabulary for `report`, the page, `pr`, `ideas` and agents."""

from __future__ import annotations

import math
import re

import pandas as pd

from ..journal.records import STATUSES
from ..statuses import Status

_SENTENCE_END = re.compile(r"(?<=[a-z0-9)][.])\s")

__all__ = [
    "NO_GAIN_RULES",
    "REASONS",
    "STATUS_FIRST",
    "clean",
    "first_sentence",
    "not_kept",
    "wins",
]

# Every status but the decision's own: the status says why, not the bench verdict before it.
STATUS_FIRST = tuple(s for s in STATUSES if s not in ("keep", "discard", "inconclusive"))
# Rules that discard for want of a gain: a slowdown they stop is filed as one.
NO_GAIN_RULES = ("below_threshold", "below_noise_threshold", "not_promising")
# Why experiments were not kept, in the words of a reviewer, by the rule (or status) that fired.
REASONS = {
    "significant_loss": "Slower",
    "worse_beyond_noise": "Slower",
    "below_threshold": "No gain worth claiming",
    "below_noise_threshold": "Worth another look: below a threshold the noise set",
    "within_noise": "Within the noise",
    "not_promising": "Worth another look: not promising within the run cap",
    "max_runs": "Not decided within the run budget",
    "unknown_comparison": "Could not be compared",
    "sentinel_budget": "Over a sentinel's budget",
    "sentinel_unresolved": "Sentinel not shown within budget",
    "cross_scale_disagreement": "Not confirmed at another scale",
    "holdout": "A win on the bench the hidden holdout did not bear out",
    "discard": "Discarded",
    "inconclusive": "Inconclusive",
    "checks_failed": "Broke correctness (checks failed)",
    "crash": "Crashed",
    "timeout": "Timed out",
    "apply_failed": "Did not apply",
    "scope_violation": "Out of scope",
    "tampered": "Tampered with the harness (changed what judges it)",
    "interrupted": "Interrupted",
    "baseline_failed": "The baseline failed (not judged)",
    "refused": "Refused before any bench run",
    "agent_failed": "The agent failed to propose",
    "recovered": "Recovered from the branch",
}


def wins(kept: pd.DataFrame) -> list[dict]:
    return [
        {
            "n": int(row.n),
            "title": row.title,
            "value": clean(row.value),
            "change_pct": clean(row.change_pct),
            "ci_low_pct": clean(row.ci_low_pct),
            "ci_high_pct": clean(row.ci_high_pct),
            "mechanism": _mechanism(row),
            "commit": row.commit,
            "parent": clean(getattr(row, "parent", None)),
            "profile": [],  # where its time moved (report/profiled.py), when profiled
            "profile_said": "",
            "earlier": clean(row.earlier),
            "holdout": _holdout_said(row),
        }
        for row in kept.itertuples()
    ]


def _holdout_said(row) -> str:
    """A keep's change on the hidden holdout, and whether it bore the win out."""
    verdict = getattr(row, "holdout_verdict", None)
    change = clean(getattr(row, "holdout_change_pct", None))
    if not isinstance(verdict, str) or change is None:
        return ""
    said = f"{change:+.1f}% on the holdout"
    return said if verdict == "win" else f"{said} (not a win there)"


# The columns the groups are made of: the rows not kept are copied with these alone.
_NOT_KEPT_FIELDS = [
    "n",
    "title",
    "status",
    "rule",
    "change_pct",
    "ci_low_pct",
    "ci_high_pct",
    "rollback_reason",
    "reason",
    "earlier",
]


def not_kept(
    frame: pd.DataFrame, lower_is_better: bool = True, listed: int | None = None
) -> list[dict]:
    """The experiments of `frame` that were not kept, grouped by why: the closed axes of the
    session. Each group's `count`, and its latest `listed` experiments (every one with None;
    `left`: how many earlier ones it leaves out): a season's groups hold tens of thousands."""
    groups = []
    rest = frame.loc[frame["status"] != Status.KEEP, _NOT_KEPT_FIELDS]
    # The status says why when the experiment ended outside the decision (checks failed, a
    # crash, out of scope): the bench's verdict before it is not the reason.
    rules = rest["rule"].where(~rest["status"].isin(STATUS_FIRST), rest["status"])
    # A discard for want of gain whose whole interval is on the slower side is a slowdown,
    # whichever rule stopped it first.
    slower = rest["ci_low_pct"] > 0 if lower_is_better else rest["ci_high_pct"] < 0
    moved = slower.fillna(False) & rules.isin(NO_GAIN_RULES)
    rules = rules.where(~moved, "significant_loss")
    # Its reason then says why it is in that group, before what stopped it.
    said = "slower (its whole interval): "
    rest = rest.assign(
        reason=rest["reason"].where(~moved, said + rest["reason"].fillna("")),
        rollback_reason=rest["rollback_reason"].where(
            ~moved | rest["rollback_reason"].isna(), said + rest["rollback_reason"]
        ),
    )
    reasons = rules.fillna(rest["status"]).map(lambda r: REASONS.get(r, r))
    for reason, whole in rest.groupby(reasons, sort=False):
        group = whole if listed is None else whole.tail(listed)
        columns = ("n", "title", "status", "change_pct", "rollback_reason", "reason", "earlier")
        experiments = [
            {
                "n": int(n),
                "title": title,
                "status": status,
                "change_pct": clean(change),
                "why": first_sentence(rollback or why or ""),
                "earlier": clean(earlier),
            }
            for n, title, status, change, rollback, why, earlier in zip(
                *(group[c].tolist() for c in columns), strict=True
            )
        ]
        groups.append(
            {
                "reason": reason,
                "count": len(whole),
                "experiments": experiments,
                "left": len(whole) - len(group),
            }
        )
    return sorted(groups, key=lambda g: -g["count"])


def _mechanism(row) -> str:
    """The mechanism in one line; a description that only repeats the title says nothing."""
    text = first_sentence(row.mechanism or row.description or "")
    title = str(row.title).rstrip(".…")
    return "" if text.rstrip(".").startswith(title[:60]) else text


def first_sentence(text: str, width: int = 200) -> str:
    text = " ".join(str(text).split())
    cut = _SENTENCE_END.search(text)
    text = text[: cut.start()] if cut else text
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def clean(value):
    """NaN -> None, numpy scalars -> Python: JSON and templates see plain values."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if hasattr(value, "item") else value
