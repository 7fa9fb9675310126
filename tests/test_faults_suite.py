"""The fault-injection suite, in its quick form: every category injected, every invariant held."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


# The categories in two halves of about the same time, run side by side on the two cores
# (the suite holds on a busy machine; one after the other it is four minutes of CI).
HALVES = (
    # 124 s and 124 s one after the other here (faults.py --quick prints each one's seconds).
    ["hosts", "scheduler", "signals", "kill9", "runaway", "output"],
    ["journal", "diskfull", "patches", "tamper", "seal", "sandbox", "agents", "inputs", "classes"],
)


@pytest.mark.slow(seconds=360)
def test_every_fault_is_survived(tmp_path):
    runs = []
    for i, half in enumerate(HALVES):
        out = tmp_path / f"faults-{i}.json"
        argv = [sys.executable, str(ROOT / "benchmarks" / "faults.py"), "--quick"]
        argv += ["--json", str(out), "--only", *half]
        runs.append((out, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
    tallies, said = [], []
    try:
        for out, proc in runs:
            stdout, stderr = proc.communicate(timeout=900)
            said.append(stdout.decode()[-4000:] + stderr.decode()[-4000:])
            if out.exists():
                tallies += json.loads(out.read_text())
    finally:  # a half that failed or hung: the other stopped and reaped, never left running
        for _, proc in runs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    for (out, proc), text in zip(runs, said, strict=True):
        assert out.exists() and proc.returncode == 0, text
    errors = [f"{t['name']}: {t['harness_error']}" for t in tallies if t["harness_error"]]
    assert not errors, "\n".join(errors)
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
