"""Every run sees the same world: calibration, both arms of an experiment, the holdout, the
equivalence run, the confirmation, the pre-flight and the profile. A run that could tell which
it is could behave well only when it counts (fast in the candidate's arm, slow as the best in
the baseline's, honest only in the holdout): the construction is tested, not a list of tells.

The observer bench (observer.py) records everything a process can observe of its world in
every run of a confined night; after masking only what is random per run (and the holdout's
own files, which its runs alone are shown), any difference between any two runs fails."""

from __future__ import annotations

import os

import pytest
from conftest import experiments, git, run
from fake_executor import FakeHosts
from observer import SCRIPT, differences, observations

from autoresearch.bench.bwrap import bwrap_problem
from autoresearch.journal.store import read_journal
from autoresearch.loop.driver import run_session
from autoresearch.loop.session import RunOptions
from autoresearch.progress import Progress
from autoresearch.repo.state_dir import session_paths


def observed_night(target, tmp_path, on_hosts: bool = False):
    """A confined night whose every command is the observer: bench, holdout, equivalence and
    profile; a pre-flight, a keep (its candidate adds a file), the new best's calibration and
    the confirmation with its holdout. `on_hosts`: measured by bench hosts (the fake ones:
    the hosts' own code in this process, each run confined in a host's clone)."""
    (target.root / "observe.py").write_text(SCRIPT)
    os.chmod(target.root / "observe.py", 0o755)
    held = tmp_path / "held"
    held.mkdir()
    (held / "inputs.txt").write_text("the holdout's own inputs\n")
    config = target.configure(sandbox="bwrap", min_runs=2, max_runs=2, looks=1, confirm="true")
    text = config.read_text().replace("preflight = false", "preflight = true")
    text = text.replace('command = "./bench.py"', 'command = "./observe.py"')
    text += f'\n[holdout]\ncommand = "./observe.py"\nfiles = ["{held}"]\npairs = 2\nmax_pairs = 2\n'
    text += '\n[equivalence]\ncommand = "./observe.py"\n'
    text += '\n[profile]\ncommand = "./observe.py"\n'
    config.write_text(text)
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "the observer as every command")
    target.add_hypothesis("01-faster", {"src/faster": "yes\n"}, title="faster")
    if not on_hosts:
        run(target, confirm=True)
        return held
    options = RunOptions(confirm=True, accept_noise=True)
    hosts = lambda session: FakeHosts(session, tmp_path / "hosts", 2)  # noqa: E731
    run_session(target.load(), options, Progress(quiet=True), hosts)
    return held


@pytest.mark.e2e
@pytest.mark.parametrize("where", ["here", "on bench hosts"])
def test_no_run_can_tell_its_phase_or_its_arm(target, tmp_path, where):
    assert bwrap_problem() is None, bwrap_problem()
    held = observed_night(target, tmp_path, on_hosts=where != "here")

    (kept,) = experiments(target)
    assert kept.status == "keep", kept.error
    assert read_journal(target.journal).confirmations
    logs = [session_paths(target.load()).logs, *(tmp_path / "hosts").glob("host-*/logs")]
    found = [observed for directory in logs for observed in observations(directory)]
    labels = sorted(label for label, _ in found)
    # Every phase and arm ran the observer (the names are the loop's, outside the runs).
    for kind in ("preflight", "calibration", "t-0001/baseline", "t-0001/candidate",
                 "t-0001/holdout", "t-0001/equivalence", "confirmation", "profile"):  # fmt: skip
        assert any(kind in label for label in labels), (kind, labels)
    # Where a run is measured is no secret (a bench host is another machine); what it is,
    # is: on each machine, every run's world is the same.
    places: dict[str, list] = {}
    for label, observed in found:
        places.setdefault(observed["cwd"], []).append((label, observed))
    assert len(places) == (1 if where == "here" else 3), sorted(places)
    for runs in places.values():
        assert differences(runs, own=[str(held)]) == []
