"""The type checker holds the modules it has been grown over: strict mypy, in the e2e tier and
so in CI (a fresh clone's mypy run, with no cache yet, takes 12 s of CPU; 0.3 s once it has one).
A module joins the list once it checks clean; it never leaves it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STRICT = [
    "autoresearch/errors.py",
    "autoresearch/files.py",
    "autoresearch/filestate.py",
    "autoresearch/inert.py",
    "autoresearch/statuses.py",
    "autoresearch/atomic.py",
    "autoresearch/plugins.py",
    "autoresearch/bench/agent_sandbox.py",
    "autoresearch/bench/environ.py",
    "autoresearch/bench/orphans.py",
    "autoresearch/bench/private_tmp.py",
    "autoresearch/bench/fetched.py",
    "autoresearch/init/cmake.py",
    "autoresearch/init/found.py",
    "autoresearch/bench/seccomp.py",
    "autoresearch/bench/testcount.py",
    "autoresearch/cluster/host.py",
    "autoresearch/bench/jobs.py",
    "autoresearch/decide/calibration.py",
    "autoresearch/decide/design.py",
    "autoresearch/decide/dist.py",
    "autoresearch/decide/hidden.py",
    "autoresearch/decide/holdout_verdict.py",
    "autoresearch/decide/percent.py",
    "autoresearch/decide/ranks.py",
    "autoresearch/decide/rule.py",
    "autoresearch/decide/stats.py",
    "autoresearch/journal/agent_run.py",
    "autoresearch/journal/attempts.py",
    "autoresearch/journal/checks_run.py",
    "autoresearch/journal/confirmed.py",
    "autoresearch/journal/decision.py",
    "autoresearch/journal/evidence.py",
    "autoresearch/journal/phase.py",
    "autoresearch/journal/placement.py",
    "autoresearch/journal/records.py",
    "autoresearch/loop/lifecycle.py",
    "autoresearch/morning/sessions.py",
    "autoresearch/process/capture.py",
    "autoresearch/process/children.py",
    "autoresearch/process/procfs.py",
    "autoresearch/readers/rows.py",
    "autoresearch/repo/arms.py",
    "autoresearch/repo/globs.py",
    "autoresearch/repo/mirror.py",
    "autoresearch/repo/patchcheck.py",
    "autoresearch/repo/submodules.py",
]


@pytest.mark.e2e
def test_the_strict_modules_type_check():
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",
            "--ignore-missing-imports",
            # The checkout's own cache (ignored by git): a run after the first checks only
            # what changed, ten seconds of CPU down to one.
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            *STRICT,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
