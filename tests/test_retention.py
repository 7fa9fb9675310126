"""Logs do not grow without bound: kept experiments, the last N and the review's raw output stay."""

from __future__ import annotations

from pathlib import Path

from conftest import experiments, run, run_cli

from autoresearch.journal.store import read_journal
from autoresearch.repo.state_dir import session_paths


def test_run_prunes_old_logs_and_keeps_what_the_review_needs(target):
    text = target.config_path.read_text().replace('name = "t"', 'name = "t"\nkeep_logs = 2')
    target.config_path.write_text(text)
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    for i in range(2, 7):
        target.add_hypothesis(f"0{i}-loss", {"src/sentinel.txt": f"{50 + i * 10}\n"})

    run(target)

    records = experiments(target)
    assert [r.status for r in records] == ["keep"] + ["discard"] * 5
    logs = session_paths(target.load()).logs
    present = {p.name for p in logs.iterdir()}
    expected = {records[0].id, records[-2].id, records[-1].id}
    assert expected <= present
    assert not ({r.id for r in records[1:4]} & present)
    calibrations = read_journal(target.journal).calibrations
    for calibration in (calibrations[0], calibrations[-1]):
        assert all(Path(log).exists() for log in calibration.bench_logs)
    # The records keep their tails, and the review still renders the raw output.
    assert records[1].bench_tail
    pr = run_cli("pr", cwd=target.root)
    assert pr.returncode == 0 and "METRIC time_ms=" in pr.stdout


def test_prune_command_dry_run_then_prune(target):
    for i in range(1, 5):
        target.add_hypothesis(f"0{i}-loss", {"src/sentinel.txt": f"{50 + i * 10}\n"})
    run(target)
    logs = session_paths(target.load()).logs
    before = {p.name for p in logs.iterdir()}

    dry = run_cli("prune", "--keep", "1", "--dry-run", cwd=target.root)
    assert dry.returncode == 0, dry.stderr
    assert "would remove 3 log directories" in dry.stdout
    assert {p.name for p in logs.iterdir()} == before

    done = run_cli("prune", "--keep", "1", cwd=target.root)
    assert "removed 3 log directories" in done.stdout
    assert {r.id for r in experiments(target)} & {p.name for p in logs.iterdir()} == {"t-0004"}
