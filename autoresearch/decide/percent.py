"""Changes as percentages: the arithmetic every report and decision shares, kept apart from the
statistics so that the light commands (status, state) need neither numpy nor scipy."""

from __future__ import annotations

import math

__all__ = ["change_pct", "ratio_pct"]


def change_pct(before: float | None, after: float | None) -> float | None:
    """`after` against `before` in percent; None when either is missing (or NaN) or before is 0."""
    if before is None or after is None or before == 0 or math.isnan(before) or math.isnan(after):
        return None
    return 100.0 * (after - before) / abs(before)


def ratio_pct(log_shift: float) -> float:
    """A shift of log values as a percent change: log(0.9) -> -10.0."""
    return 100.0 * math.expm1(log_shift)
