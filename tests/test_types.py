"""The type checker holds the whole package (plain mypy, pyproject.toml's [tool.mypy], zero
errors: .ci/run runs it too) and, strictly, the modules it has been grown over: in the e2e tier
and so in CI (a fresh clone's run, with no cache yet, takes about 15 s of CPU; a second once it
has one). A module joins the strict list once it checks clean; it never leaves it, and the list
holds at least half the package's lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_FILES = sorted((ROOT / "autoresearch").rglob("*.py"))
STRICT = [
    "autoresearch/__init__.py",
    "autoresearch/__main__.py",
    "autoresearch/agents/__init__.py",
    "autoresearch/agents/outcome.py",
    "autoresearch/agents/tries.py",
    "autoresearch/atomic.py",
    "autoresearch/bench/__init__.py",
    "autoresearch/bench/agent_sandbox.py",
    "autoresearch/bench/armstate.py",
    "autoresearch/bench/bwrap.py",
    "autoresearch/bench/calibrate.py",
    "autoresearch/bench/channel.py",
    "autoresearch/bench/covers.py",
    "autoresearch/bench/environ.py",
    "autoresearch/bench/equivalence.py",
    "autoresearch/bench/fetched.py",
    "autoresearch/bench/fingerprint.py",
    "autoresearch/bench/handed.py",
    "autoresearch/bench/holdout_runs.py",
    "autoresearch/bench/jobs.py",
    "autoresearch/bench/logcap.py",
    "autoresearch/bench/measure.py",
    "autoresearch/bench/metrics.py",
    "autoresearch/bench/orphans.py",
    "autoresearch/bench/private_tmp.py",
    "autoresearch/bench/profiling.py",
    "autoresearch/bench/runners.py",
    "autoresearch/bench/samples.py",
    "autoresearch/bench/sandbox.py",
    "autoresearch/bench/seccomp.py",
    "autoresearch/bench/staging.py",
    "autoresearch/bench/testcount.py",
    "autoresearch/bench/tool_ways.py",
    "autoresearch/cli/__init__.py",
    "autoresearch/cli/__main__.py",
    "autoresearch/cli/common.py",
    "autoresearch/cluster/__init__.py",
    "autoresearch/cluster/host.py",
    "autoresearch/config_checks.py",
    "autoresearch/config_docs.py",
    "autoresearch/decide/__init__.py",
    "autoresearch/decide/calibration.py",
    "autoresearch/decide/design.py",
    "autoresearch/decide/dist.py",
    "autoresearch/decide/headline.py",
    "autoresearch/decide/hidden.py",
    "autoresearch/decide/holdout_verdict.py",
    "autoresearch/decide/percent.py",
    "autoresearch/decide/ranks.py",
    "autoresearch/decide/rule.py",
    "autoresearch/decide/stats.py",
    "autoresearch/errors.py",
    "autoresearch/files.py",
    "autoresearch/filestate.py",
    "autoresearch/inert.py",
    "autoresearch/init/__init__.py",
    "autoresearch/init/cmake.py",
    "autoresearch/init/ecosystems.py",
    "autoresearch/init/found.py",
    "autoresearch/init/listing.py",
    "autoresearch/journal/__init__.py",
    "autoresearch/journal/agent_run.py",
    "autoresearch/journal/attempts.py",
    "autoresearch/journal/checks_run.py",
    "autoresearch/journal/columns.py",
    "autoresearch/journal/confirmed.py",
    "autoresearch/journal/decision.py",
    "autoresearch/journal/draft.py",
    "autoresearch/journal/evidence.py",
    "autoresearch/journal/phase.py",
    "autoresearch/journal/placement.py",
    "autoresearch/journal/records.py",
    "autoresearch/journal/store.py",
    "autoresearch/journal/tail.py",
    "autoresearch/loop/__init__.py",
    "autoresearch/loop/best_profile.py",
    "autoresearch/loop/confirm.py",
    "autoresearch/loop/contributions.py",
    "autoresearch/loop/dispatch.py",
    "autoresearch/loop/driver.py",
    "autoresearch/loop/executor.py",
    "autoresearch/loop/flights.py",
    "autoresearch/loop/landing.py",
    "autoresearch/loop/lifecycle.py",
    "autoresearch/loop/local.py",
    "autoresearch/loop/preflight.py",
    "autoresearch/loop/recovery.py",
    "autoresearch/loop/second_look.py",
    "autoresearch/loop/stages.py",
    "autoresearch/loop/testref.py",
    "autoresearch/morning/sessions.py",
    "autoresearch/plugins.py",
    "autoresearch/process/capture.py",
    "autoresearch/process/children.py",
    "autoresearch/process/procfs.py",
    "autoresearch/progress.py",
    "autoresearch/proposers/__init__.py",
    "autoresearch/proposers/agent/__init__.py",
    "autoresearch/proposers/agent/prompt.py",
    "autoresearch/proposers/agent/reach.py",
    "autoresearch/proposers/agent/version.py",
    "autoresearch/proposers/agent/vetting.py",
    "autoresearch/proposers/base.py",
    "autoresearch/proposers/chain.py",
    "autoresearch/proposers/registry.py",
    "autoresearch/readers/documents.py",
    "autoresearch/readers/formats.py",
    "autoresearch/readers/rows.py",
    "autoresearch/reference.py",
    "autoresearch/repo/__init__.py",
    "autoresearch/repo/arms.py",
    "autoresearch/repo/gitrepo.py",
    "autoresearch/repo/globs.py",
    "autoresearch/repo/mirror.py",
    "autoresearch/repo/patchcheck.py",
    "autoresearch/repo/regroup.py",
    "autoresearch/repo/seal.py",
    "autoresearch/repo/state_dir.py",
    "autoresearch/repo/submodules.py",
    "autoresearch/report/__init__.py",
    "autoresearch/report/frame.py",
    "autoresearch/report/publish.py",
    "autoresearch/report/scales.py",
    "autoresearch/statuses.py",
]


@pytest.mark.e2e
def test_the_strict_modules_type_check():
    done = _mypy("--strict", "--follow-imports=silent", *STRICT)
    assert done.returncode == 0, done.stdout + done.stderr


def _mypy(*args: str) -> subprocess.CompletedProcess:
    # The checkout's own cache (ignored by git): a run after the first checks only what
    # changed, ten seconds of CPU down to one.
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(ROOT / ".mypy_cache"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.e2e
def test_the_whole_package_type_checks():
    done = _mypy("autoresearch")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_strict_list_holds_at_least_half_the_package():
    lines = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in PACKAGE_FILES}
    assert set(STRICT) <= set(lines), sorted(set(STRICT) - set(lines))
    assert sum(lines[name] for name in STRICT) >= sum(lines.values()) / 2
