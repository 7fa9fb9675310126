"""The one figure behind every headline: a session's baseline and best, from one source.

When a confirmation measured the session's base against its current tip, both arms side by
side, it is that source for everything: the change, both values, every other metric and the raw
output. Otherwise the base's calibration and the tip's last calibration are, measured at
different times; the figure says so, and a last calibration much noisier than the session's
usual is flagged rather than quietly promoted to "best".
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from .percent import change_pct

__all__ = ["NOISY_FACTOR", "baseline_calibration", "headline", "session_metric"]

# A journal line, whole (a dict) or as its record (a dataclass): both are read alike.
Line = TypeVar("Line")

NOISY_FACTOR = 2.0  # a calibration this many times noisier than the session's median is flagged


def baseline_calibration(calibrations: Sequence[Line], base: str | None) -> Line | None:
    """The calibration that stands for the session's baseline: the last one of its base commit
    (a run stopped before the night, say for noise, and run again measures the base again: the
    night went on with the later figure), else the first. Records or dicts."""
    at_base = [c for c in calibrations if _field(c, "commit") == base]
    return at_base[-1] if at_base else (calibrations[0] if calibrations else None)


def session_metric(metric: Any, calibrations: Iterable[Any]) -> str:
    """The metric a session decides on: `[metric] fallback` once one of its calibrations
    switched to it (their `decides_on`), for the rest of the session whatever later ones find,
    so that its records never change metric under it; else the primary. `metric` is the
    config's [metric], a spec or the journal's dict of it; `calibrations` records or dicts."""
    fallback = _field(metric, "fallback")
    if fallback and any(_field(c, "decides_on") == fallback for c in calibrations):
        return str(fallback)
    return str(_field(metric, "name"))


def _field(item: Any, key: str) -> Any:
    """A field of a journal line, read whole (a dict) or as its record (a dataclass)."""
    return item.get(key) if isinstance(item, Mapping) else getattr(item, key, None)


def headline(
    calibrations: list[dict[str, Any]],
    confirmations: list[dict[str, Any]],
    tip: str | None,
    metric: str,
    base: str | None = None,
) -> dict[str, Any]:
    """Baseline and best of the session whose base is `base` and current tip is `tip` (records
    as dicts)."""
    confirmed = next(
        (
            c
            for c in reversed(confirmations)
            if c.get("tip_commit") == tip and c.get("metrics") and not c.get("left_out")
        ),
        None,
    )
    if confirmed is not None:
        return _from_confirmation(confirmed, metric)
    first = baseline_calibration(calibrations, base)
    # The tip's own calibration: between a keep and the calibration of the new best, the last
    # one is an older commit's, whose figure is not the best's.
    last = next((c for c in reversed(calibrations) if c.get("commit") == tip), None)
    medians = (first or {}).get("medians") or {}
    best = (last or {}).get("medians") or {}
    note = (
        "not confirmed: the base's calibration against the tip's last, measured at "
        "different times; run `autoresearch confirm` for a side-by-side figure"
    )
    if last is None:
        note = (
            f"{str(tip)[:10]} is not measured yet: no calibration or confirmation of it (a "
            "night calibrates a new best before its next experiment; `autoresearch confirm` "
            "measures it beside the base)"
        )
    noisy = _noisy(calibrations, metric)
    if noisy:
        note += f"; {noisy}"
    return {
        "source": "calibrations",
        "baseline": medians.get(metric),
        "best": best.get(metric),
        "change_pct": change_pct(medians.get(metric), best.get(metric)),
        "ci_low_pct": None,
        "ci_high_pct": None,
        "baseline_metrics": dict(medians),
        "best_metrics": dict(best),
        "changes": {},  # no measurement of the change itself: each reader divides the medians
        "baseline_label": f"calibration of {first['commit'][:10]}" if first else "not measured",
        "best_label": (
            f"calibration of {last['commit'][:10]}"
            if last
            else f"not measured yet: no calibration of {str(tip)[:10]}"
        ),
        "baseline_log": next(iter((first or {}).get("bench_logs") or []), None),
        "best_log": next(iter((last or {}).get("bench_logs") or []), None),
        "note": note,
        "noisy": bool(noisy),
    }


def _from_confirmation(c: dict[str, Any], metric: str) -> dict[str, Any]:
    metrics = c["metrics"]
    logs = c.get("bench_logs") or []
    runs = c.get("runs_per_arm") or 0
    primary = metrics.get(metric) or {}
    return {
        "source": "confirmation",
        "baseline": primary.get("baseline_median"),
        "best": primary.get("tip_median"),
        "change_pct": c.get("change_pct"),
        "ci_low_pct": c.get("ci_low_pct"),
        "ci_high_pct": c.get("ci_high_pct"),
        "baseline_metrics": {k: m.get("baseline_median") for k, m in metrics.items()},
        "best_metrics": {k: m.get("tip_median") for k, m in metrics.items()},
        # Each metric's change as the confirmation estimated it (paired: the geometric mean of
        # the pairs' ratios), not the ratio of the two medians beside it.
        "changes": {k: m.get("change_pct") for k, m in metrics.items()},
        "baseline_label": f"base {c['base_commit'][:10]}, median of {runs} runs",
        "best_label": f"tip {c['tip_commit'][:10]}, median of {runs} runs",
        "baseline_log": logs[0] if logs else None,
        "best_log": logs[runs] if len(logs) > runs else None,
        "runs": runs,
        "note": (
            f"confirmed: base and tip measured side by side in {runs} alternating pairs; the "
            + (
                "change is the geometric mean of the pairs' ratios"
                if primary.get("estimator") == "paired"
                else "change is the Hodges-Lehmann shift between the two arms"
            )
        ),
        "noisy": False,
    }


def _noisy(calibrations: list[dict[str, Any]], metric: str) -> str | None:
    noise = [(c.get("noise_pct") or {}).get(metric) for c in calibrations]
    known = [n for n in noise if n is not None]
    if len(known) < 2 or noise[-1] is None:
        return None
    usual = statistics.median(known)
    if usual > 0 and noise[-1] > NOISY_FACTOR * usual:
        return (
            f"the last calibration was noisy ({noise[-1]:.1f}% against {usual:.1f}% usual): "
            "its median is not to be trusted as the best"
        )
    return None
