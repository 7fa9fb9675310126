"""What `autoresearch serve` costs the machine it runs on: the server process's CPU for a
request after its journal changed (the page made again: its tables and plots) and for one while
nothing the page shows changed (the page it made last, served again), as a browser left open on
a night asks every --refresh seconds; alternating, the median of each. On a copy of the real
pi-autoresearch journal of tests/fixtures, quiet and with a core busy; the rows written as data
(results.py).

    python benchmarks/serve_cpu.py [--requests 10] [--journal PATH]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

from machine_load import a_core_busy
from results import record

ROOT = Path(__file__).resolve().parent.parent
JOURNAL = ROOT / "tests" / "fixtures" / "pi-autoresearch" / "baton-pebble-writepack.jsonl"


def _cpu(pid: int) -> float:
    """The CPU seconds `pid` has spent (utime and stime, /proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve_cpu(journal: Path, requests: int) -> tuple[float, float]:
    """The server's median CPU for a request after the journal changed, and for one after
    nothing changed, over `requests` of each."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / journal.name
        shutil.copy(journal, copy)
        argv = [sys.executable, "-m", "autoresearch.cli", "serve", "--journal", str(copy)]
        server = subprocess.Popen(
            [*argv, "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        try:
            url = re.search(r"http://\S+/", server.stdout.readline()).group(0)
            cpu: dict[bool, list[float]] = {True: [], False: []}
            for n in range(2 * requests):
                changed = n % 2 == 0
                if changed:
                    os.utime(copy)  # what a record landing does to the page's inputs
                before = _cpu(server.pid)
                urllib.request.urlopen(url, timeout=300).read()
                cpu[changed].append(_cpu(server.pid) - before)
            return statistics.median(cpu[True]), statistics.median(cpu[False])
        finally:
            server.terminate()
            server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10, help="requests after the first")
    parser.add_argument("--journal", type=Path, default=JOURNAL)
    args = parser.parse_args()
    rows = []
    for busy in (False, True):
        with a_core_busy(busy):
            condition = "a core busy" if busy else "quiet"
            made, again = serve_cpu(args.journal, args.requests)
            print(f"{condition}: page made again {made:.3f} s of CPU, served again {again:.4f} s")
            rows.append(
                {
                    "condition": condition,
                    "journal changed: page made (CPU s, median)": round(made, 3),
                    "nothing changed: page served again (CPU s, median)": round(again, 4),
                }
            )
    record("serve_cpu", rows, notes=f"{args.journal.name}, {args.requests} requests each way")


if __name__ == "__main__":
    main()
