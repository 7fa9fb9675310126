"""Figures for the bundled target's README, measured side by side in one run.

python benchmarks/pebble_target.py noise [--runs 10]
    the harness at the default scales, repeated: min / median / max of each metric
python benchmarks/pebble_target.py compare [--rounds 5] [--patches 01 04 ...] [--full]
    the baseline against the baseline plus the given hypothesis patches (default: the kept
    ones of ./experiments.jsonl), each built once, run alternately, medians side by side,
    with SQLite's write time as the comparison engine
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from autoresearch.journal import read_journal
from autoresearch.metrics import parse_metrics

ROOT = Path(__file__).resolve().parent.parent
TARGET = "targets/pebble"
HYPOTHESES = ROOT / TARGET / "hypotheses"
DEFAULT_SCALES = {"GRANTBENCH_SCALES": "1k,10k,100k", "GRANTBENCH_SQLITE_SCALES": "1k,10k"}
FULL_SCALES = {"GRANTBENCH_SCALES": "1k,10k,100k,1m", "GRANTBENCH_SQLITE_SCALES": "1k,10k,100k"}


def build(tree: Path, out: Path) -> Path:
    subprocess.run(
        ["go", "build", "-o", str(out), "./cmd/grantbench"], cwd=tree / TARGET, check=True
    )
    return out


def run_harness(binary: Path, env: dict[str, str]) -> dict[str, float]:
    done = subprocess.run(
        [str(binary)], capture_output=True, text=True, env={**os.environ, **env}, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{binary} failed:\n{done.stderr}")
    return parse_metrics(done.stdout, str(binary))


def noise(args) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        binary = build(ROOT, Path(tmp) / "grantbench")
        samples: dict[str, list[float]] = {}
        for i in range(args.runs):
            print(f"run {i + 1}/{args.runs}", file=sys.stderr)
            for name, value in run_harness(binary, DEFAULT_SCALES).items():
                samples.setdefault(name, []).append(value)
    print(f"Noise over {args.runs} runs of the harness at the default scales:\n")
    print("| metric | min | median | max | spread (max-min)/median |")
    print("|---|---:|---:|---:|---:|")
    for name, values in samples.items():
        if not name.endswith("_ms"):
            continue
        med = statistics.median(values)
        print(
            f"| {name} | {min(values):.1f} | {med:.1f} | {max(values):.1f} | "
            f"{100 * (max(values) - min(values)) / med:.1f}% |"
        )


def kept_patches() -> list[Path]:
    journal = read_journal(ROOT / "experiments.jsonl")
    sources = [r.source for r in journal.experiments if r.status == "keep" and r.source]
    return [Path(s) for s in sources]


def compare(args) -> None:
    patches = (
        [next(HYPOTHESES.glob(f"{p}*.patch")) for p in args.patches]
        if args.patches
        else kept_patches()
    )
    if not patches:
        raise SystemExit("no patches: pass --patches, or run the loop first")
    env = FULL_SCALES if args.full else DEFAULT_SCALES
    with tempfile.TemporaryDirectory() as tmp:
        wins_tree = Path(tmp) / "wins"
        subprocess.run(
            ["git", "worktree", "add", "-q", "--detach", str(wins_tree)], cwd=ROOT, check=True
        )
        try:
            for patch in patches:
                text = patch.read_text()
                diff = text[text.index("diff --git") :]
                subprocess.run(
                    ["git", "apply", "--3way", "-"],
                    input=diff,
                    text=True,
                    cwd=wins_tree,
                    check=True,
                )
            base_bin = build(ROOT, Path(tmp) / "base")
            wins_bin = build(wins_tree, Path(tmp) / "wins-bin")
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(wins_tree)], cwd=ROOT, check=True
            )
        base: dict[str, list[float]] = {}
        wins: dict[str, list[float]] = {}
        for i in range(args.rounds):
            print(f"round {i + 1}/{args.rounds}", file=sys.stderr)
            # B W W B: alternating order so that drift cancels.
            order = [(base_bin, base), (wins_bin, wins)]
            for binary, into in order if i % 2 == 0 else reversed(order):
                for name, value in run_harness(binary, env).items():
                    into.setdefault(name, []).append(value)
    print(
        f"Baseline against the baseline plus {', '.join(p.stem for p in patches)}; "
        f"medians of {args.rounds} alternating rounds:\n"
    )
    _table(base, wins, lambda n: n.startswith("pebble_") and n.endswith("_ms"), sqlite=True)
    print()
    _table(base, wins, lambda n: n.startswith("pebble_writepack") and n.endswith("_op"))
    print()
    _table(base, wins, lambda n: n.startswith(("pebble_packed", "sqlite_")) and "_op" not in n)


def _table(base, wins, wanted, sqlite: bool = False) -> None:
    head = "| metric | baseline | with the wins | change |"
    print(head + (" SQLite | with the wins vs SQLite |" if sqlite else ""))
    print("|---|---:|---:|---:|" + ("---:|---:|" if sqlite else ""))
    for name in filter(wanted, base):
        b, w = statistics.median(base[name]), statistics.median(wins[name])
        row = f"| {name} | {b:,.1f} | {w:,.1f} | {100 * (w - b) / b:+.1f}% |"
        if sqlite:
            other = base.get(name.replace("pebble_", "sqlite_"))
            if other and "writepack" in name:
                sq = statistics.median(other)
                row += f" {sq:,.1f} | {sq / w:.2f}x |"
            else:
                row += " | |"
        print(row)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    n = sub.add_parser("noise", help="repeat the harness: min/median/max")
    n.add_argument("--runs", type=int, default=10)
    c = sub.add_parser("compare", help="baseline against the wins, alternating")
    c.add_argument("--rounds", type=int, default=5)
    c.add_argument("--patches", nargs="*", help="patch number prefixes, e.g. 01 04")
    c.add_argument("--full", action="store_true", help="include the 1m scale")
    args = parser.parse_args()
    {"noise": noise, "compare": compare}[args.command](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
