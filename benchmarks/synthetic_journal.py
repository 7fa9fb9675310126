"""Experiment records shaped like the loop's, made with the project's own record classes, for
benchmarks that need a long journal: both arms' samples for the primary, two secondary and one
sentinel metric, ASI, bench durations."""

from __future__ import annotations

import random
import statistics

from autoresearch.journal.checks_run import ChecksRun
from autoresearch.journal.decision import Decision
from autoresearch.journal.records import Asi, ExperimentRecord
from autoresearch.statuses import Status

METRICS = {
    "pebble_writepack_100k_ms": 1000.0,
    "pebble_writepack_10k_ms": 100.0,
    "pebble_writepack_1k_ms": 10.0,
}
SENTINEL = "sqlite_writepack_10k_ms"
CHECKED = ChecksRun.from_dict({"exit_code": 0, "duration_s": 5.0})


def evidence(rng: random.Random, center: float, best: float, f: float, runs: int) -> dict:
    """One metric's decision evidence, as the loop records it."""
    # Rounded as a bench prints them (the bundled one prints METRIC values with 3 decimals).
    b = [round(center * best * (1 + rng.gauss(0, 0.02)), 3) for _ in range(runs)]
    c = [round(center * f * (1 + rng.gauss(0, 0.02)), 3) for _ in range(runs)]
    return {
        "direction": "lower",
        "unit": "ms",
        "baseline_samples": b,
        "candidate_samples": c,
        "n_baseline": runs,
        "n_candidate": runs,
        "baseline_median": statistics.median(b),
        "candidate_median": statistics.median(c),
        "change_pct": 100 * (f / best - 1),
        "ci_low_pct": -1.0,
        "ci_high_pct": 1.0,
        "p_better": 0.01,
        "p_worse": 0.9,
        "improvement_pct": 100 * (1 - f / best),
    }


def experiment(
    rng: random.Random,
    session: str,
    n: int,
    status: str,
    best: float,
    factor: float,
    metrics: dict[str, float] = METRICS,
    parent: str = "0" * 40,
    kept: str | None = None,
) -> ExperimentRecord:
    """Experiment number `n` of `session`: the candidate at `factor` against a best at `best`."""
    runs = rng.choice([6, 11, 16])
    evidences = {m: evidence(rng, v, best, factor, runs) for m, v in metrics.items()}
    sentinel = evidence(rng, 100.0, best, best, runs) | {
        "budget_pct": 5.0,
        "verdict": "within",
        "ok": True,
    }
    return ExperimentRecord(
        session=session,
        id=f"{session}-{n:06d}",
        n=n,
        status=Status(status),
        title=f"idea {n}",
        proposer="queue",
        source=None,
        patch_sha256=f"{n:064x}",
        touched_files=["grantstore/engine.go"],
        parent_commit=parent,
        kept_commit=kept,
        started_at="2026-01-01T00:00:00+00:00",
        ended_at="2026-01-01T00:00:30+00:00",
        duration_s=30.0,
        decision=Decision.from_dict(
            {
                "status": status,
                "rule": "significant_win" if status == "keep" else "below_threshold",
                "reason": "synthetic",
                "metrics": evidences,
            },
            {SENTINEL: sentinel},
        ),
        checks=CHECKED if status == "keep" else None,
        bench_durations_s=[1.0] * (2 * runs),
        asi=Asi(hypothesis="h", mechanism="m", result="r"),
    )
