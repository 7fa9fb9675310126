"""Figures for the bundled target's README, measured side by side in one run.

python benchmarks/pebble_target.py noise [--runs 10]
    the harness at the default scales, repeated: min / median / max of each metric
python benchmarks/pebble_target.py compare [--rounds 5] [--patches 01 04 ...] [--full]
    the baseline against the baseline plus the given hypothesis patches (default: the kept
    ones of ./experiments.jsonl), each built once, run alternately, medians side by side,
    with SQLite's write time as the comparison engine
python benchmarks/pebble_target.py truth [--pairs 20] [--floor 3]
    the true effect of each queue patch at its point of an ideal night (the best before it
    against the best plus it, many interleaved pairs): what the demo's decisions are judged by
python benchmarks/pebble_target.py tips REV_A REV_B [--pairs 20]
    two commits of this repository (two nights' tips, say) against each other, each built
    once, in interleaved pairs at the quick profile, analysed as pairs
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from autoresearch.bench.metrics import parse_metrics
from autoresearch.decide.stats import compare_paired
from autoresearch.journal.store import read_journal

ROOT = Path(__file__).resolve().parent.parent
TARGET = "targets/pebble"
HYPOTHESES = ROOT / TARGET / "hypotheses"
DEFAULT_SCALES = {"GRANTBENCH_SCALES": "1k,10k,100k", "GRANTBENCH_SQLITE_SCALES": "1k,10k"}
QUICK_SCALES = {  # the demo session's profile (AUTORESEARCH_PROFILE=quick)
    "GRANTBENCH_SCALES": "10k,100k",
    "GRANTBENCH_SQLITE_SCALES": "10k",
    "GRANTBENCH_MAX_ITERS": "1",
    "GRANTBENCH_SQLITE_MAX_ITERS": "5",
}
PRIMARY = "pebble_writepack_100k_ms"
SENTINEL = "sqlite_writepack_10k_ms"
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


def build_with(patches: list[Path], out: Path, rev: str = "HEAD") -> Path:
    """The harness built from `rev` plus the patches, in order, in a scratch worktree."""
    tree = out.with_name(out.name + "-tree")
    subprocess.run(
        ["git", "worktree", "add", "-q", "--detach", str(tree), rev], cwd=ROOT, check=True
    )
    try:
        for patch in patches:
            text = patch.read_text()
            subprocess.run(
                ["git", "apply", "--3way", "-"],
                input=text[text.index("diff --git") :],
                text=True,
                cwd=tree,
                check=True,
            )
        return build(tree, out)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=True)


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
        base_bin = build(ROOT, Path(tmp) / "base")
        wins_bin = build_with(patches, Path(tmp) / "wins-bin")
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


def truth(args) -> None:
    """Each queue patch's true effect at its point of the night: the best so far (the baseline
    plus the patches that truly won before it) against the best plus the patch, in many
    interleaved pairs, analysed as pairs. A patch joins the best when it gains at least the
    session's floor with its interval clear of zero, as an ideal night would keep it."""
    patches = sorted(HYPOTHESES.glob("*.patch"))
    if args.patches:
        patches = [p for p in patches if p.name[:2] in args.patches]
    env = QUICK_SCALES
    best: list[Path] = []
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, patch in enumerate(patches):
            a = build_with(best, Path(tmp) / f"a{k}")
            b = build_with([*best, patch], Path(tmp) / f"b{k}")
            arms = interleaved(a, b, args.pairs, env)
            primary = compare_paired(arms["a"][PRIMARY], arms["b"][PRIMARY], 0.95)
            sentinel = compare_paired(arms["a"][SENTINEL], arms["b"][SENTINEL], 0.95)
            wins = -primary.change_pct >= args.floor and primary.ci_high_pct < 0
            rows.append((patch.stem, len(best), primary, sentinel, wins))
            print(
                f"{patch.stem}: {primary.change_pct:+.1f}% "
                f"[{primary.ci_low_pct:+.1f}, {primary.ci_high_pct:+.1f}], sentinel "
                f"{sentinel.change_pct:+.1f}%{' -> joins the best' if wins else ''}",
                file=sys.stderr,
                flush=True,
            )
            if wins:
                best.append(patch)
    print(
        f"Each patch against the best before it (the baseline plus the earlier patches that "
        f"gained at least {args.floor:g}%), {args.pairs} interleaved pairs each, quick profile, "
        f"paired geometric-mean change with its 95% interval:\n"
    )
    print(f"| patch | on top of | {PRIMARY} | {SENTINEL} | truly |")
    print("|---|---:|---:|---:|---|")
    for stem, n_best, primary, sentinel, wins in rows:
        verdict = (
            "gain"
            if wins
            else "loss"
            if primary.change_pct >= args.floor and primary.ci_low_pct > 0
            else "within the floor"
        )
        print(
            f"| {stem} | {n_best} patches | {primary.change_pct:+.1f}% "
            f"[{primary.ci_low_pct:+.1f}, {primary.ci_high_pct:+.1f}] | "
            f"{sentinel.change_pct:+.1f}% [{sentinel.ci_low_pct:+.1f}, "
            f"{sentinel.ci_high_pct:+.1f}] | {verdict} |"
        )
    print(f"\nmachine: {os.cpu_count()} CPUs")


def interleaved(a: Path, b: Path, pairs: int, env: dict[str, str]) -> dict[str, dict]:
    """`pairs` pairs of runs of two harness binaries, the order alternating (A B, B A, ...)."""
    arms: dict[str, dict[str, list[float]]] = {"a": {}, "b": {}}
    for i in range(pairs):
        order = [("a", a), ("b", b)] if i % 2 == 0 else [("b", b), ("a", a)]
        for arm, binary in order:
            for name, value in run_harness(binary, env).items():
                arms[arm].setdefault(name, []).append(value)
    return arms


def tips(args) -> None:
    """Two commits against each other: B's change against A, every metric, as pairs."""
    with tempfile.TemporaryDirectory() as tmp:
        a = build_with([], Path(tmp) / "a", args.a)
        b = build_with([], Path(tmp) / "b", args.b)
        arms = interleaved(a, b, args.pairs, QUICK_SCALES)
    print(
        f"{args.b} against {args.a}: {args.pairs} interleaved pairs, quick profile, paired "
        "geometric-mean change with its 95% interval:\n"
    )
    print(f"| metric | {args.a} | {args.b} | change [95% CI] |")
    print("|---|---:|---:|---:|")
    for name, values in arms["a"].items():
        change = compare_paired(values, arms["b"][name], 0.95)
        if change is None:
            continue
        print(
            f"| {name} | {statistics.median(values):,.1f} | "
            f"{statistics.median(arms['b'][name]):,.1f} | {change.change_pct:+.1f}% "
            f"[{change.ci_low_pct:+.1f}, {change.ci_high_pct:+.1f}] |"
        )
    print(f"\nmachine: {os.cpu_count()} CPUs")


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
    t = sub.add_parser("truth", help="each queue patch against the best before it, many pairs")
    t.add_argument("--pairs", type=int, default=20)
    t.add_argument("--floor", type=float, default=3.0, help="gain (%%) that joins the best")
    t.add_argument("--patches", nargs="*", help="patch number prefixes (default: all)")
    d = sub.add_parser("tips", help="two commits against each other, many pairs")
    d.add_argument("a", help="the reference commit (a branch, a tag, a hash)")
    d.add_argument("b", help="the commit measured against it")
    d.add_argument("--pairs", type=int, default=20)
    args = parser.parse_args()
    {"noise": noise, "compare": compare, "truth": truth, "tips": tips}[args.command](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
