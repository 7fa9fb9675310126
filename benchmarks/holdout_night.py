"""The hidden holdout and the equivalence check on the bundled target, in real nights.

python benchmarks/holdout_night.py cost [--busy] [--accept-noise]
    the queue's three real wins (01, 02, 04) and a negative control (09), one night as
    shipped (the holdout and the equivalence check on) and one without them, one after the
    other: what each kept and confirmed, its wall time, and the holdout's share of its bench
    time (its runs before each keep and at the confirmation, against every other bench run:
    the calibrations', the experiments', the confirmation's at the median run's time)
python benchmarks/holdout_night.py overfit [--require-win] [--busy] [--accept-noise]
    one night as shipped (or with `require_win = true`): the hidden suite's overfitting
    candidates (tests/fixtures/overfit-pebble: fast only for the bench's seed, dropping work
    only the bench's data does not need, storing less on inputs the tests do not cover)
    queued before the three real wins; which were kept, and what refused the rest

Each night runs in a fresh clone of this repository at HEAD, as `python loop.py` would run it
(its holdout made the same way), the queue alone (no sweeps). Figures go to
docs/results/holdout_night/.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine_load import a_core_busy
from results import record

from autoresearch.journal.store import read_journal

ROOT = Path(__file__).resolve().parent.parent
OVERFIT = ROOT / "tests" / "fixtures" / "overfit-pebble"
WINS = ("01-", "02-", "04-")
CONTROL = ("09-",)


def clone(into: Path, keep: tuple[str, ...], extra: Path | None) -> Path:
    """A clone of HEAD with only the `keep` queue patches (and `extra`'s), its holdout made."""
    repo = into / "repo"
    subprocess.run(["git", "clone", "-q", "--shared", str(ROOT), str(repo)], check=True)
    queue = repo / "targets/pebble/hypotheses"
    for patch in queue.glob("*.patch"):
        if not patch.name.startswith(keep):
            patch.unlink()
    for patch in sorted(extra.glob("*.patch")) if extra else []:
        (queue / patch.name).write_bytes(patch.read_bytes())
    spec = importlib.util.spec_from_file_location("bundled_loop", repo / "loop.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.make_holdout(repo / "targets/pebble")
    return repo


def configure(repo: Path, *, holdout: bool, require_win: bool = False) -> None:
    """The queue alone; the holdout and the equivalence check on (as shipped) or removed."""
    config = repo / "autoresearch.toml"
    text = config.read_text()
    text = re.sub(r'\[\[proposer\]\]\nkind = "sweep".*?(?=\n\[report\])', "", text, flags=re.S)
    if not holdout:
        for table in ("equivalence", "holdout"):
            text = re.sub(rf"\n\[{table}\]\n.*?(?=\n\[)", "\n", text, flags=re.S)
    elif require_win:
        text = text.replace("[holdout]\n", "[holdout]\nrequire_win = true\n")
    config.write_text(text)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "the night's queue and config"], cwd=repo, check=True)


def night(repo: Path, accept_noise: bool) -> tuple[float, Path]:
    """`autoresearch run` in the clone (this tree's code): its wall time and its journal."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "autoresearch.cli", "run", "--quiet"]
        + (["--accept-noise"] if accept_noise else []),
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the night failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return time.monotonic() - started, repo / "experiments.jsonl"


def summary(journal: Path, label: str, condition: str, wall_s: float) -> dict:
    """One night as a row: what it kept, how it confirmed, where its bench time went."""
    read = read_journal(journal)
    held_s = sum(h.duration_s or 0.0 for h in map(_holdout, read.experiments) if h is not None)
    confirmation = read.confirmations[-1] if read.confirmations else None
    confirmed_held = (confirmation.holdout or {}) if confirmation is not None else {}
    held_s += confirmed_held.get("duration_s", 0.0)
    runs = [d for r in read.experiments for d in r.bench_durations_s]
    bench_s = sum(runs) + sum(c.duration_s for c in read.calibrations)
    if confirmation is not None:  # its runs' times are not kept: as many at the median run's
        bench_s += 2 * confirmation.runs_per_arm * (statistics.median(runs) if runs else 0.0)
    return {
        "night": label,
        "condition": condition,
        "wall_s": round(wall_s, 1),
        "experiments": len(read.experiments),
        "kept": [_name(r) for r in read.experiments if r.status == "keep"],
        "outcomes": {_name(r): _outcome(r) for r in read.experiments},
        "confirmed_pct": confirmation.change_pct if confirmation is not None else None,
        "confirmed_holdout_pct": confirmed_held.get("change_pct"),
        "bench_s": round(bench_s, 1),
        "holdout_s": round(held_s, 1),
        # The holdout's runs are not among the bench's: its seconds against theirs.
        "holdout_share_pct": round(100 * held_s / max(bench_s, 1e-9), 1),
    }


def _name(record) -> str:
    return (record.source or record.title).rsplit("/", 1)[-1].removesuffix(".patch")


def _holdout(record):
    """The holdout's evidence in the record's decision; None when it did not run."""
    return record.decision.holdout if record.decision is not None else None


def _outcome(record) -> str:
    held = _holdout(record)
    said = f"{record.status} ({record.rule or 'error'})"
    if held is not None:
        said += f", holdout {held.verdict} {held.change_pct or 0:+.1f}%"
    return said


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("cost", "overfit"))
    parser.add_argument("--busy", action="store_true", help="another process keeps a core busy")
    parser.add_argument(
        "--accept-noise", action="store_true", help="run the nights however noisy the bench"
    )
    parser.add_argument(
        "--require-win", action="store_true", help="overfit: the holdout must show a win too"
    )
    args = parser.parse_args()
    condition = "a core busy" if args.busy else "quiet"
    rows = []
    suite = f"overfitting suite{', require_win' * args.require_win}"
    plan = (
        [("as shipped", True, False, None), ("without holdout and equivalence", False, False, None)]
        if args.what == "cost"
        else [(suite, True, args.require_win, OVERFIT)]
    )
    with a_core_busy(args.busy):
        for label, holdout, require_win, extra in plan:
            with tempfile.TemporaryDirectory(prefix="holdout-night-") as tmp:
                repo = clone(Path(tmp), WINS + (() if extra else CONTROL), extra)
                configure(repo, holdout=holdout, require_win=require_win)
                wall_s, journal = night(repo, args.accept_noise)
                row = summary(journal, label, condition, wall_s)
            rows.append(row)
            print(f"{label}: {row}", flush=True)
    if args.what == "cost":
        shipped, without = rows
        print(f"wall time as shipped / without: {shipped['wall_s'] / without['wall_s']:.2f}")
    record(f"holdout_night_{args.what}", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
