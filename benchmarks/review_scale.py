"""How long report, plot and pr take on a journal of 100,000 experiments.

Writes a synthetic journal shaped like the loop's (a session line, calibrations, and experiment
records with both arms' samples for the primary, two secondary and one sentinel metric) and
keeps its review index current, as the loop does after each append. Then it times each
command's whole path (read, analyse, render) in this process, three times, and prints the
medians; and, apart, the one-off cost of rebuilding the index from the journal alone (a journal
copied without it). Goal: each command under 5 s.

    python benchmarks/review_scale.py [--records 100000]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from machine_load import a_core_busy
from results import record
from synthetic_journal import METRICS, experiment

from autoresearch.config import load_config
from autoresearch.journal.index import index_path, refresh_index, update_index
from autoresearch.journal.records import CalibrationRecord, SessionRecord
from autoresearch.journal.store import append_record
from autoresearch.report import load_history, render_pr, render_text, summarize
from autoresearch.report.plots import plot_progress, plot_scales

GOAL_S = 5.0
CONFIG = """
[session]
name = "scale"
[metric]
name = "pebble_writepack_100k_ms"
unit = "ms"
[[secondary]]
name = "pebble_writepack_10k_ms"
[[secondary]]
name = "pebble_writepack_1k_ms"
[[sentinel]]
name = "sqlite_writepack_10k_ms"
budget_pct = 5.0
"""


def write_journal(path: Path, records: int, config) -> None:
    rng = random.Random(1)
    lines = []
    lines.append(
        SessionRecord(
            "scale",
            "start",
            "2026-01-01T00:00:00+00:00",
            "autoresearch/scale",
            "0" * 40,
            "0" * 40,
            config.to_dict(),
            {"host": "bench"},
        )
    )
    samples = {m: [v * (1 + rng.gauss(0, 0.02)) for _ in range(6)] for m, v in METRICS.items()}
    lines.append(
        CalibrationRecord(
            "scale",
            "2026-01-01T00:00:00+00:00",
            "0" * 40,
            samples,
            {m: statistics.median(v) for m, v in samples.items()},
            {m: 2.0 for m in samples},
            3.0,
            [],
            1.0,
        )
    )
    best = 1.0
    for n in range(1, records + 1):
        factor = best * (0.97 if rng.random() < 0.05 else 1.02)
        status = "keep" if factor < best else rng.choice(["discard", "inconclusive", "crash"])
        kept = f"{n:040x}" if status == "keep" else None
        lines.append(experiment(rng, "scale", n, status, best, factor, kept=kept))
        if status == "keep":
            best = factor
    for line in lines:
        append_record(path, line)
    update_index(path)  # what the loop's appends did one line at a time


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "autoresearch.toml").write_text(CONFIG)
        config = load_config(tmp / "autoresearch.toml")
        journal = tmp / "experiments.jsonl"
        print(f"writing {args.records:,} records ...", file=sys.stderr)
        write_journal(journal, args.records, config)
        size = journal.stat().st_size / 2**20

        def report():
            render_text(summarize(load_history(journal)))

        def plot():
            history = load_history(journal)
            plot_progress(history, tmp / "progress.png")
            plot_scales(history, tmp / "scales.png")

        def pr():
            render_pr(summarize(load_history(journal)))

        rows = []
        for load in ("quiet", "a core busy"):
            with a_core_busy(load != "quiet"):
                for name, fn in (("report", report), ("plot", plot), ("pr", pr)):
                    times = [timed(fn) for _ in range(args.repeat)]
                    rows.append((load, name, statistics.median(times), min(times), max(times)))
                index_path(journal).unlink()
                rows.append(
                    (load, "rebuilding the index (once)", timed(lambda: refresh_index(journal)))
                )
    print(
        f"{args.records:,} experiment records, journal {size:.0f} MiB; median of {args.repeat}:\n"
    )
    print("| machine | command | median | min | max |")
    print("|---|---|---:|---:|---:|")
    data = []
    for load, name, med, *spread in rows:
        shown = [f"{v:.2f} s" for v in spread] or ["", ""]
        print(f"| {load} | {name} | {med:.2f} s | {shown[0]} | {shown[1]} |")
        data.append({"condition": load, "command": name, "median": f"{med:.2f} s",
                     "min": shown[0], "max": shown[1]})  # fmt: skip
    notes = f"{args.records:,} experiment records, a {size:.0f} MiB journal; {args.repeat} runs"
    record("review_scale", data, notes=notes)
    worst = max(r[2] for r in rows if len(r) > 3)
    print(f"\ngoal: each under {GOAL_S:.0f} s: {'met' if worst < GOAL_S else 'MISSED'}")
    return 0 if worst < GOAL_S else 1


if __name__ == "__main__":
    sys.exit(main())
