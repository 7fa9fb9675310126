"""What pairing and the quieter-bench options buy on the bundled target, measured.

Interleaved A/A runs of the bundled Pebble target (the same build in both arms, through the
real Harness and its local runner), quiet and with another process keeping a core busy. For
each condition it prints one run's noise (robust CV) and the 95% interval half-width of the
A/A change of the primary metric and of the SQLite sentinel from the same runs analysed two
ways: as two samples (Mann-Whitney / Hodges-Lehmann, the rule before pairing) and as pairs
(the t interval on within-pair log ratios, the rule now). Narrower is better: the interval's
width is what a decision has to beat.

    python benchmarks/pairing_noise.py [--pairs 12] [--conditions plain,pinned,repeat3]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine_load import a_core_busy
from results import record

from autoresearch.bench.measure import Harness, measure_pair
from autoresearch.config import load_config
from autoresearch.decide.stats import compare, compare_paired, robust_cv_pct

ROOT = Path(__file__).resolve().parent.parent
CONDITIONS = {
    "plain": {},
    "pinned": {"cpus": "1"},
    "warmup1": {"warmup_runs": 1},
    "repeat3": {"repeat": 3, "aggregate": "best"},
    "pinned+repeat3": {"cpus": "1", "repeat": 3, "aggregate": "best"},
}


def measure(config, pairs: int, tmp: Path) -> dict[str, list[float]]:
    harness = Harness(config, env={}, stop=None)
    logs = lambda name: tmp / f"{name}.log"  # noqa: E731
    pair = measure_pair(harness, (ROOT, ROOT), logs, build=False, pairs=pairs)
    if pair.failure:
        raise SystemExit(f"bench failed: {pair.detail}")
    return {"baseline": pair.baseline.samples, "candidate": pair.candidate.samples}


def half_width(comparison) -> float:
    return (comparison.ci_high_pct - comparison.ci_low_pct) / 2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--conditions", default="plain,pinned,repeat3")
    args = parser.parse_args()
    base = load_config(ROOT / "autoresearch.toml")
    # Unconfined: both arms are this checkout, which the loop's one-path view (an arm seen
    # where its state directory keeps it) does not apply to; confinement costs a run some
    # milliseconds (sandbox_cost.py), nothing the noise measured here depends on.
    base = dataclasses.replace(base, sandbox=dataclasses.replace(base.sandbox, mode="off"))
    metrics = [base.metric.name, *(s.name for s in base.sentinel)]
    subprocess.run(base.bench.build, shell=True, cwd=ROOT, check=True, capture_output=True)
    print(
        f"{args.pairs} interleaved A/A pairs per condition, bench `{base.bench.command}` with "
        f"{base.bench.env}; 95% interval half-widths of the A/A change.\n"
    )
    print(
        "| load | bench options | metric | run CV | two-sample ± | paired ± "
        "| paired / two-sample | s/sample |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|")
    rows = []
    for load in ("quiet", "a core busy"):
        for name in args.conditions.split(","):
            bench = dataclasses.replace(base.bench, env=dict(base.bench.env), **CONDITIONS[name])
            config = dataclasses.replace(base, bench=bench)
            with a_core_busy(load != "quiet"), tempfile.TemporaryDirectory() as tmp:
                started = time.monotonic()
                arms = measure(config, args.pairs, Path(tmp))
                per_sample = (time.monotonic() - started) / (2 * args.pairs)
            for metric in metrics:
                b, c = arms["baseline"][metric], arms["candidate"][metric]
                two, paired = compare(b, c, 0.95), compare_paired(b, c, 0.95)
                ratio = half_width(paired) / half_width(two)
                print(
                    f"| {load} | {name} | {metric} | {robust_cv_pct(b + c):.1f}% | "
                    f"{half_width(two):.1f}% | {half_width(paired):.1f}% | {ratio:.2f} | "
                    f"{per_sample:.1f} |",
                    flush=True,
                )
                rows.append(
                    {
                        "condition": load,
                        "bench options": name,
                        "metric": metric,
                        "run CV": f"{robust_cv_pct(b + c):.1f}%",
                        "two-sample ±": f"{half_width(two):.1f}%",
                        "paired ±": f"{half_width(paired):.1f}%",
                        "paired / two-sample": f"{ratio:.2f}",
                        "s/sample": f"{per_sample:.1f}",
                    }
                )
    print(f"\nmachine: {os.cpu_count()} CPUs")
    record("pairing_noise", rows, notes=f"{args.pairs} interleaved A/A pairs per condition")
    return 0


if __name__ == "__main__":
    sys.exit(main())
