"""Results as data: a benchmark's figures written to a dated file the docs render.

Each run writes `docs/results/<benchmark>/<date>-<time>-<host>-<commit>.json`: when and where it ran
(host, CPUs, OS, Python), the commit it measured (and whether the tree had uncommitted
changes), its command line, and its rows, each naming the machine's state it was measured in
(`quiet`, `a core busy`). The docs' pages show the latest runs with `<!-- results: NAME -->`
(docs/hooks/results.py): updating a figure is running the benchmark and committing its file.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["record"]

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"


def record(benchmark: str, rows: list[dict], notes: str = "") -> Path:
    """Write this run's `rows` (each a flat dict with its `condition`) for `benchmark`; the
    file's path."""
    commit = _git("rev-parse", "HEAD")
    at = datetime.now(UTC)
    data = {
        "benchmark": benchmark,
        "at": at.isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "cpus": os.cpu_count(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "commit": commit,
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "command": " ".join(["python", *sys.argv]),
        "notes": notes,
        "rows": rows,
    }
    path = RESULTS / benchmark / f"{at:%Y-%m-%d-%H%M}-{data['host']}-{commit[:10]}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)
    return path


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip()
