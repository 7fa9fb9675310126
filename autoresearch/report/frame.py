"""The review's table of experiments: its columns, each column's type, and its rows read fast.

One row per experiment, in order (report/history.py fills it from either journal format).
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from typing import Any

import pandas as pd

__all__ = ["COLUMNS", "frame_rows", "typed"]

COLUMNS = [
    "n",
    "id",
    "retry_of",
    "earlier",  # "retry of #3 (inconclusive)": the attempt a retry followed
    "superseded",  # True for an attempt a later retry of the same hypothesis replaced
    "proposal",  # what the proposer noted (a sweep's knob and value), or None
    "proposer",  # queue, sweep, agent, or a plug-in's name
    "family",  # the axis the hypothesis explores, when its proposer named one
    "agent",  # True for a coding agent's proposal
    "agent_cost_usd",  # what that agent reported it cost; None: unknown, never zero
    "refusal",  # why the agent's proposal was refused before any run (empty, scope, ...)
    "parent",  # the best the experiment was measured against
    "segment",
    "status",
    "title",
    "description",
    "value",
    "change_pct",
    "ci_low_pct",
    "ci_high_pct",
    "p_value",
    "designed_for_pct",  # the win the decision's futility stops were built for
    "designed_power",  # how often they let such a win through
    "rule",
    "reason",
    "hypothesis",
    "mechanism",
    "rollback_reason",
    "next_action_hint",
    "commit",
    "started_at",
    "duration_s",
    "bench_runs",
    "bench_s",
    "checks_s",
    "checks_exit",
    "touched_files",
    "hosts_lost",  # the bench hosts that died while they measured it
    "sentinels_ok",
    "holdout_change_pct",  # the hidden holdout's verdict before a keep (decide/holdout_verdict.py)
    "holdout_verdict",
    "metrics",
]
NUMERIC = [
    "agent_cost_usd",
    "holdout_change_pct",
    "value",
    "change_pct",
    "ci_low_pct",
    "ci_high_pct",
    "p_value",
    "designed_for_pct",
    "designed_power",
    "duration_s",
    "bench_s",
    "checks_s",
]
TEXT = [
    "retry_of",
    "proposer",
    "family",
    "refusal",
    "title",
    "description",
    "rule",
    "reason",
    "hypothesis",
    "mechanism",
    "rollback_reason",
    "next_action_hint",
    "commit",
]


def typed(frame: pd.DataFrame) -> pd.DataFrame:
    """Numbers as floats, a missing one as NaN (never 0), whatever the journal held; retries
    linked to the attempts they followed."""
    for column in NUMERIC:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    # pandas reads a missing text (None) as NaN: a reason left out must not print as "nan".
    for column in TEXT:
        frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
    retried = set(frame["retry_of"].dropna())
    linked = frame[frame["id"].isin(retried)] if retried else frame.iloc[:0]
    earlier = {row.id: (int(row.n), row.status) for row in frame_rows(linked, "id", "n", "status")}
    frame["earlier"] = [
        f"retry of #{earlier[r][0]} ({earlier[r][1]})" if r in earlier else None
        for r in frame["retry_of"]
    ]
    frame["superseded"] = frame["id"].isin(retried)
    return frame


def frame_rows(frame: pd.DataFrame, *columns: str) -> Iterator[Any]:
    """The frame's rows as named tuples of `columns`, each value the Python one `itertuples`
    gives: `itertuples` over every column fetches string cells one at a time, seconds for a
    100,000-experiment session."""
    # Its fields are the caller's: mypy types a namedtuple of a literal field list only.
    row = collections.namedtuple("Row", columns)  # type: ignore[misc]
    return map(row._make, zip(*(frame[c].tolist() for c in columns), strict=True))
