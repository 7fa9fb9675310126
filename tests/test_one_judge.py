"""One judge on every path: a candidate that reaches outside its patch from its bench or its
checks is `tampered`, never kept, and what it changed is put back, whether the night runs
serially, on bench hosts (whose own trees and clone are guarded as the driver's are) or one
`try` at a time (loop/lifecycle.py judges for all three)."""

from __future__ import annotations

import pytest
from conftest import experiments, git, local_cluster, run
from test_cluster import drive, sleepy

from autoresearch.agents.tries import try_change
from autoresearch.journal.store import read_journal
from autoresearch.loop.session import RunOptions
from autoresearch.progress import Progress
from autoresearch.repo.state_dir import session_paths

# what the candidate does (and from where) -> what its record says
ATTACKS = {
    "hook@checks": ("checks: the repository was changed", "/hooks/pre-commit was added"),
    "commit@checks": ("checks: the session branch moved",),
    "readme@checks": ("checks: files of the candidate worktree changed during the run: README",),
    # From the bench: on a host, its clone and trees (a slower baseline would be a "win").
    "baseline": ("the baseline worktree was written to",),
    "hook": ("the repository was changed during the run", "/hooks/pre-commit was added"),
}


def serial(target, tmp_path) -> None:
    run(target)


def cluster(target, tmp_path) -> None:
    env = sleepy(target, tmp_path)
    with local_cluster(tmp_path, workers=1) as local:
        drive(target, local.scheduler_address, env)


def one_try(target, tmp_path) -> None:
    (patch,) = target.queue.glob("*.patch")
    patch = patch.rename(tmp_path / patch.name)  # the agent's, not the queue's
    try_change(
        target.load(),
        patch_file=patch,
        worktree=None,
        fields={},
        options=RunOptions(accept_noise=True),
        progress=Progress(quiet=True),
    )


PATHS = {"serial": serial, "cluster": cluster, "try": one_try}
# On bench hosts each case starts a Dask worker process of its own: the checks' reach (the
# stage the hosts once ran unguarded) stays in the fast suite, the others run in the e2e tier.
CASES = [
    pytest.param(
        what, path, marks=[pytest.mark.e2e] if path == "cluster" and what != "hook@checks" else []
    )
    for what in ATTACKS
    for path in PATHS
]


@pytest.mark.timeout(240)
@pytest.mark.parametrize(("what", "path"), CASES)
def test_checks_that_reach_outside_the_patch_are_tampered_on_every_path(
    target, tmp_path, path, what
):
    # A real 20% win besides: without the judge's guard and seal around the checks, kept.
    target.add_hypothesis(
        "01-tamper", {"src/mode.txt": f"tamper-{what}\n", "src/value.txt": "80\n"}
    )
    hooks = target.root / ".git" / "hooks"
    before = sorted(p.name for p in hooks.iterdir())

    PATHS[path](target, tmp_path)

    (record,) = experiments(target)
    assert record.status == "tampered", (record.status, record.error)
    assert all(said in record.error for said in ATTACKS[what]), record.error
    assert "NOT put back" not in record.error
    assert record.kept_commit is None
    # Put back: your repository's hooks, your checkout, the session branch, the loop's tree.
    assert sorted(p.name for p in hooks.iterdir()) == before
    base = read_journal(target.journal).sessions[0].base_commit
    assert git(target.root, "rev-parse", "HEAD").strip() == base
    assert target.branch_log()[0] != "sneaky"
    assert git(session_paths(target.load()).worktree, "status", "--porcelain") == ""
