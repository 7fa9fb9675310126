#!/usr/bin/env python3
"""`python loop.py [options]` is `autoresearch run [options]` on the bundled target, after
fetching its Go modules and warming the Go build cache (the loop's runs are confined without
network, and each arm's build cache starts as a copy of yours), and making the hidden holdout
workload the first time (its seed drawn here, its file ignored by git and hidden from every
run but its own)."""

import secrets
import sys
from pathlib import Path

from autoresearch.cli import main
from autoresearch.process.capture import capture

TARGET = Path(__file__).resolve().parent / "targets" / "pebble"
PREPARE_TIMEOUT_S = 1800  # a first build on a fresh machine compiles Pebble and SQLite
HOLDOUT = TARGET / ".holdout"  # [holdout] files in autoresearch.toml


def make_holdout(target: Path = TARGET) -> Path:
    """The holdout's settings, made once: Zipf keys, 50k grants, a seed no one chose."""
    held = target / ".holdout"
    env = held / "holdout.env"
    if not env.exists():
        held.mkdir(mode=0o700, exist_ok=True)
        seed = secrets.randbelow(2**32)
        text = f"GRANTBENCH_SKEW=zipf\nGRANTBENCH_SCALES=50k\nGRANTBENCH_SEED={seed}\n"
        partial = env.with_name(env.name + ".partial")
        partial.write_text(text)
        partial.rename(env)
    return env


def prepare() -> int:
    """`go mod download` and `go build ./...` in the bundled target; 0, or what failed."""
    for step in (["go", "mod", "download"], ["go", "build", "./..."]):
        print(f"loop.py: {' '.join(step)} in {TARGET}", file=sys.stderr)
        done = capture(step, cwd=TARGET, timeout_s=PREPARE_TIMEOUT_S)
        if not done.ok:
            print(f"error: {' '.join(step)} failed: {done.why()}", file=sys.stderr)
            return 1
    make_holdout()
    return 0


if __name__ == "__main__":
    sys.exit(prepare() or main(["run", *sys.argv[1:]]))
