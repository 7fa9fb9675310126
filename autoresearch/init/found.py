"""What `init` reads of a project's tree, and what it writes for the benchmarks it finds there
(an Ecosystem: the bench, checks, build and config of one kind of project)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MAX_FILES", "REPETITIONS", "SKIP", "Ecosystem", "tree_files", "tree_text"]

# Directories no ecosystem's sources are looked for in.
SKIP = {".git", "target", "node_modules", ".venv", "venv", "__pycache__", "build", "vendor"}
MAX_FILES = 5000  # a look at this many files is enough to tell
# Runs of a benchmark within one bench run (Go's -count, Google Benchmark's repetitions): their
# median is the metric and their fastest its fallback, and `[bench] rows` declares them.
REPETITIONS = 5


@dataclass(frozen=True)
class Ecosystem:
    name: str
    says: str  # what init found, for the user
    bench: str  # the bench script's commands, run from the repository's root
    checks: str  # the checks script's commands
    build: str = ""  # [bench] build
    fetch: str = ""  # [bench] fetch: what the build needs from the network, before the night
    format: str = ""  # [bench] format ("" leaves it auto)
    output: str = ""  # [bench] output
    go_bench: bool = False
    keep: tuple[str, ...] = ()  # [bench] keep: build output a revert leaves (each arm its own)
    scope: tuple[str, ...] = ("src/**",)
    metrics: str = ""  # how its metric names read, for the user
    narrowed: str = ""  # the one benchmark the bench runs (init --metric), when it runs one
    profile: str = ""  # a pprof profile its harness takes of that benchmark or its one package
    files: tuple[str, ...] = ()  # templates written beside the bench, verbatim, and protected
    runs: str = ""  # what the bench runs, said to the user (the bench itself when empty)
    protect: tuple[str, ...] = ()  # the project's files that make up its bench
    # Its harness reports each benchmark's fastest round beside its median (readers.rows,
    # minimum_of): init makes it the primary's [metric] fallback.
    fastest: bool = False
    # [bench] rows: rows of each benchmark one run prints, where init can tell (Go's, once
    # narrowed to one benchmark of one package: a name in two packages prints twice as many).
    rows: int = 0


def tree_files(directory: Path) -> list[Path]:
    found: list[Path] = []
    for root, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d not in SKIP)
        found += (Path(root) / name for name in sorted(names))
        if len(found) >= MAX_FILES:
            break
    return found


def tree_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:200_000]
    except OSError:
        return ""
