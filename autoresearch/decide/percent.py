"""Changes as percentages: the arithmetic every report and decision shares, kept apart from the
statistics so that the light commands (status, state) need neither numpy nor scipy."""

from __future__ import annotations

import math

__all__ = ["CONTRIBUTION", "change_pct", "interval_side", "ratio_pct"]

# A kept change's contribution to the final tip (the tip without it against the tip), by the
# side its interval lies on: what finalize, report and the PR call it.
CONTRIBUTION = {"better": "contributes", "worse": "costs", "either": "dead weight"}


def change_pct(before: float | None, after: float | None) -> float | None:
    """`after` against `before` in percent; None when either is missing (or NaN) or before is 0."""
    if before is None or after is None or before == 0 or math.isnan(before) or math.isnan(after):
        return None
    return 100.0 * (after - before) / abs(before)


def ratio_pct(log_shift: float) -> float:
    """A shift of log values as a percent change: log(0.9) -> -10.0."""
    return 100.0 * math.expm1(log_shift)


def interval_side(low: float | None, high: float | None, direction: str) -> str | None:
    """Which side of no change a change's interval lies on: "better" or "worse" when all of it
    does, "either" when it holds no change, None when unknown. `direction`: the metric's."""
    if low is None or high is None:
        return None
    if low <= 0 <= high:
        return "either"
    lower_better = direction == "lower"
    return "better" if (high < 0) == lower_better else "worse"
