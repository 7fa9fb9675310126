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
    assert out.exists(), done.stdout[-4000:] + done.stderr[-4000:]
    tallies = json.loads(out.read_text())
    errors = [f"{t['name']}: {t['harness_error']}" for t in tallies if t["harness_error"]]
    assert not errors, "\n".join(errors)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert len(tallies) == 15
    for tally in tallies:
        assert tally["harness_error"] is None, tally["harness_error"]
        assert tally["faults"] > 0, tally
        assert tally["survived"] == tally["faults"], tally
        for key in ("records_lost", "commits_unrecorded", "processes_left", "tracebacks"):
            assert tally[key] == 0, tally


def test_a_category_whose_own_harness_fails_is_named_and_the_others_still_run(
    tmp_path, monkeypatch
):
    """The suite's own failure in one category (a host that would not start under load) is
    that category's harness error in the JSON, not a suite that ends with nothing written."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import faults

    def broken(tally, n):
        raise RuntimeError("the scheduler did not start")

    def fine(tally, n):
        tally.add({}, "held")

    monkeypatch.setattr(
        faults, "CATEGORIES", {"broken": ("broken", broken, 1, 1), "fine": ("fine", fine, 1, 1)}
    )
    out = tmp_path / "faults.json"
    assert faults.main(["--quick", "--json", str(out)]) == 1
    broken_tally, fine_tally = json.loads(out.read_text())
    assert "RuntimeError: the scheduler did not start" in broken_tally["harness_error"]
    assert fine_tally["harness_error"] is None and fine_tally["survived"] == 1
