"""What an agent is told of the hidden holdout's verdict: that it judged, never what it measured.

Its own module, with nothing heavy imported: `history` and `state` answer an agent in a fraction
of a second, and the statistics (decide/holdout_verdict.py) are not needed to say this.
"""

from __future__ import annotations

from typing import TypeVar

from ..statuses import Rule

__all__ = ["HIDDEN_REASON", "shown_to_agents"]

HIDDEN_REASON = "a win on the bench that the hidden holdout workload did not bear out"

# A record may have no reason at all: that stays None unless the holdout's text replaces it.
_Reason = TypeVar("_Reason", bound=str | None)


def shown_to_agents(rule: str | None, reason: _Reason) -> _Reason | str:
    """An experiment's reason as an agent may read it (its prompt, `history`, MCP): a holdout
    discard's without the holdout's metric or figures."""
    return HIDDEN_REASON if rule == Rule.HOLDOUT else reason
