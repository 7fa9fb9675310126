"""The fault-injection suite, in its quick form: every category injected, every invariant held."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_every_fault_is_survived(tmp_path):
    out = tmp_path / "faults.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "faults.py"), "--quick", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    tallies = json.loads(out.read_text())
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(tallies) == 14
    for tally in tallies:
        assert tally["faults"] > 0, tally
        assert tally["survived"] == tally["faults"], tally
        for key in ("records_lost", "commits_unrecorded", "processes_left", "tracebacks"):
            assert tally[key] == 0, tally
