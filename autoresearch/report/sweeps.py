"""Knob sweeps in review: for each knob, what was measured at which value, and where it ended;
for a joint search, each point it measured and the best one."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..statuses import Status
from .frame import frame_rows

__all__ = ["joint_summaries", "show_value", "sweep_summaries"]


def _proposed(df: pd.DataFrame) -> pd.DataFrame:
    """The rows a proposer described (a sweep's or a search's point): a season's other
    100,000 rows are not walked one by one."""
    if "proposal" not in df or df.empty:
        return df.iloc[:0]
    return df[[isinstance(p, dict) for p in df["proposal"].tolist()]]


def sweep_summaries(df: pd.DataFrame) -> list[dict[str, Any]]:
    """One entry per swept knob: its rows (value, change, status), the best value and the
    commit it is best at, and the values measured there that were slower."""
    knobs: dict[str, list[dict[str, Any]]] = {}
    for row in frame_rows(
        _proposed(df), "proposal", "n", "change_pct", "status", "parent", "commit"
    ):
        proposal = row.proposal if isinstance(row.proposal, dict) else None
        if not proposal or "knob" not in proposal or not _present(proposal.get("value")):
            continue
        knobs.setdefault(proposal["knob"], []).append(
            {
                "n": int(row.n),
                "from": proposal.get("from"),
                "value": proposal.get("value"),
                "change_pct": _clean(row.change_pct),
                "status": row.status,
                "parent": row.parent,
                "commit": row.commit,
                "range": proposal.get("range"),
            }
        )
    return [_summary(name, rows) for name, rows in knobs.items()]


def joint_summaries(df: pd.DataFrame) -> list[dict[str, Any]]:
    """One entry per joint search (by sampler): its trials (what moved, change, status) and the
    best point it kept."""
    searches: dict[str, list[dict[str, Any]]] = {}
    for row in frame_rows(
        _proposed(df), "proposal", "n", "change_pct", "status", "commit", "parent"
    ):
        proposal = row.proposal if isinstance(row.proposal, dict) else None
        if not proposal or proposal.get("search") != "joint":
            continue
        knobs = proposal.get("knobs") or {}
        moves = [
            f"{name} {show_value(v.get('from'))} → {show_value(v.get('value'))}"
            for name, v in knobs.items()
            if v.get("from") != v.get("value")
        ]
        searches.setdefault(str(proposal.get("sampler", "tpe")), []).append(
            {
                "n": int(row.n),
                "trial": proposal.get("trial"),
                "moves": ", ".join(moves),
                "point": {name: v.get("value") for name, v in knobs.items()},
                "start": {name: v.get("from") for name, v in knobs.items()},
                "change_pct": _clean(row.change_pct),
                "status": row.status,
                "commit": row.commit,
                "parent": row.parent,
            }
        )
    out = []
    for sampler, rows in searches.items():
        kept = [r for r in rows if r["status"] == Status.KEEP]
        best = kept[-1]["point"] if kept else rows[0]["start"]
        at = (kept[-1]["commit"] if kept else rows[-1]["parent"]) or ""
        shown = ", ".join(f"{name} {show_value(v)}" for name, v in best.items())
        out.append(
            {
                "search": f"joint {sampler.upper()} search",
                "rows": rows,
                "best": best,
                "experiments": len(rows),
                "kept": len(kept),
                "line": f"joint {sampler.upper()} search: {shown} is best at {at[:10]}",
            }
        )
    return out


def _present(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _summary(name: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    kept = [r for r in rows if r["status"] == Status.KEEP]
    best = kept[-1]["value"] if kept else rows[0]["from"]
    # Where the knob's search last stood: the best it was measured against last.
    last_parent = rows[-1]["parent"]
    at_best = [r for r in rows if r["parent"] == last_parent and r["status"] != Status.KEEP]
    slower = [r for r in at_best if (r["change_pct"] or 0) > 0]
    return {
        "knob": name,
        "rows": rows,
        "best": best,
        "at": kept[-1]["commit"] if kept else last_parent,
        "slower": [{"value": r["value"], "change_pct": r["change_pct"]} for r in slower],
        "experiments": len(rows),
        "kept": len(kept),
        "line": _line(name, best, kept, last_parent, slower) + _edge(kept, rows[-1].get("range")),
    }


def _line(name, best, kept, parent, slower) -> str:
    """ "l0: 8 is best at 1a2b3c4d5e; 6 (+2.1%) and 12 (+7.9%) slower"."""
    at = (kept[-1]["commit"] if kept else parent) or ""
    text = f"{name}: {show_value(best)} is best at {at[:10]}"
    if slower:
        shown = [f"{show_value(r['value'])} ({r['change_pct']:+.1f}%)" for r in slower]
        text += "; " + (" and ".join(shown) if len(shown) < 3 else ", ".join(shown)) + " slower"
    return text


def _edge(kept: list[dict[str, Any]], bounds) -> str:
    """The gains led to the edge of the range searched: the optimum may lie beyond it. (A
    start at the edge says nothing: zstd level 1 or no filter are edges of their own.)"""
    if not kept or not bounds or len(bounds) != 2:
        return ""
    best, start = kept[-1]["value"], kept[-1]["from"]
    if best == bounds[1] and best > start:
        return "; the gains led to the top of the range searched: a larger max may find more"
    if best == bounds[0] and best < start:
        return "; the gains led to the bottom of the range searched: a smaller min may find more"
    return ""


def show_value(value) -> str:
    """A knob's value as the config would write it: 8, 0.25."""
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _clean(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(value)
