"""A journal that is full, damaged or odd is reported, never a traceback, and loses nothing."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import experiment_record, run, run_cli

from autoresearch.atomic import write_json_atomic
from autoresearch.config import load_config
from autoresearch.errors import ConfigError, JournalError, StateError
from autoresearch.journal.index import refresh_index
from autoresearch.journal.store import append_record, read_journal


@pytest.fixture
def small_fs(tmp_path):
    """A 64 KiB tmpfs: a disk that really fills up."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_append_on_a_full_disk_fails_whole_and_leaves_the_journal_as_it_was(small_fs):
    journal = small_fs / "experiments.jsonl"
    append_record(journal, experiment_record(1))
    before = journal.read_bytes()
    (small_fs / "filler").write_bytes(b"x" * (64 * 1024 - len(before) - 4096 - 200))
    big = experiment_record(2, error="e" * 8000)

    with pytest.raises(JournalError, match=r"cannot append the experiment record.*unchanged"):
        append_record(journal, big)

    assert journal.read_bytes() == before
    assert [r.id for r in read_journal(journal).experiments] == ["s-0001"]


def test_append_to_a_device_with_no_space_is_a_journal_error():
    with pytest.raises(JournalError, match="No space left"):
        append_record(__import__("pathlib").Path("/dev/full"), experiment_record(1))


def test_state_files_on_a_full_disk_are_state_errors(small_fs):
    (small_fs / "filler").write_bytes(b"x" * (60 * 1024))
    marker = small_fs / "inflight.json"
    with pytest.raises(StateError, match=r"inflight\.json: cannot write"):
        write_json_atomic(marker, {"fields": {"blob": "x" * 20000}})
    assert not marker.exists()
    assert not (small_fs / "inflight.json.tmp").exists()


def test_non_finite_numbers_are_written_as_null(tmp_path):
    journal = tmp_path / "j.jsonl"
    append_record(journal, experiment_record(1, bench_durations_s=[1.5, float("inf")]))
    line = json.loads(journal.read_text())
    assert line["bench_durations_s"] == [1.5, None]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("decision", 5, "field 'decision' must be an object or null"),
        ("asi", "fast", "field 'asi' must be Asi"),
        ("n", "3", "field 'n' must be an integer"),
        ("touched_files", [1], "field 'touched_files' must be an array"),
        ("decision", {"metrics": {"t": {"change_pct": "big"}}}, "evidence t.change_pct"),
        ("sentinels", {"s": 3}, "field 'sentinels"),
        ("decision", {"holdout": 3}, "field 'decision.holdout'"),
        ("checks", 5, "field 'checks' must be an object or null"),
        ("checks", {"exit_code": "0"}, "field 'checks.exit_code'"),
        ("cluster", {"stale": 5}, "field 'cluster.stale'"),
        ("cluster", {"stale": [5]}, "field 'cluster.stale'"),
        ("confinement", "bwrap", "field 'confinement' must be an object or null"),
        ("agent", "claude", "field 'agent' must be an object or null"),
        ("agent", {"preset": "claude", "usage": {"cost_usd": "$1"}}, "'agent.usage.cost_usd'"),
        ("phases", {"bench": 5}, "field 'phases.bench' must be an object"),
        ("phases", {"bench": {"started_at": "t", "duration_s": "1"}}, "'phases.bench.duration_s'"),
        ("bench_durations_s", [1.0, True], "field 'bench_durations_s'"),
        ("bench_durations_s", [1.0, None, "2"], "field 'bench_durations_s'"),
        ("bench_durations_s", [1e308, 1e308, "x"], "field 'bench_durations_s'"),
    ],
)
def test_valid_json_of_the_wrong_shape_is_a_damaged_line(tmp_path, field, value, message):
    journal = tmp_path / "j.jsonl"
    append_record(journal, experiment_record(1))
    bad = experiment_record(2).to_dict() | {field: value}
    with open(journal, "a") as handle:
        handle.write(json.dumps(bad) + "\n")
    append_record(journal, experiment_record(3))

    contents = read_journal(journal)

    assert [r.n for r in contents.experiments] == [1, 3]
    assert any(message in w and ":2:" in w for w in contents.warnings), contents.warnings
    indexed = refresh_index(journal)
    assert [r["n"] for r in indexed.experiments] == [1, 3]


def test_bom_and_repeated_lines(tmp_path):
    journal = tmp_path / "j.jsonl"
    append_record(journal, experiment_record(1))
    append_record(journal, experiment_record(2))
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"\xef\xbb\xbf" + lines[0] + lines[1] + lines[1])

    contents = read_journal(journal)

    assert [r.n for r in contents.experiments] == [1, 2]
    assert contents.warnings == [f"{journal}:3: experiment s-0002 repeats line 2, skipped"]
    indexed = refresh_index(journal)
    assert [r["n"] for r in indexed.experiments] == [1, 2]
    assert indexed.warnings == contents.warnings


def test_review_commands_say_what_they_skipped(target):
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    run(target)
    data = target.journal.read_bytes()
    target.journal.write_bytes(
        b"\xef\xbb\xbf" + data + b'{"broken\n' + data.splitlines()[-1] + b"\n"
    )

    for command in (["status"], ["report", "--format", "json"], ["pr"], ["ideas"], ["plot"]):
        done = run_cli(*command, cwd=target.root)
        assert done.returncode == 0, (command, done.stderr)
        assert "Traceback" not in done.stderr
        if command != ["status"]:
            assert "not valid JSON" in done.stderr, (command, done.stderr)
            assert "repeats line" in done.stderr, (command, done.stderr)
    report = run_cli("report", "--format", "json", cwd=target.root)
    assert json.loads(report.stdout)["by_status"] == {"keep": 1}


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_non_finite_numbers_in_the_config_are_refused(tmp_path, value):
    path = tmp_path / "autoresearch.toml"
    path.write_text(f'[metric]\nname = "t"\n[budget]\nmax_hours = {value}\n')
    with pytest.raises(ConfigError, match=r"'budget\.max_hours' must be a finite number"):
        load_config(path)


@pytest.mark.parametrize("name", ["../../escape", "a/b", ".hidden", "x..y", "a b", "x.lock"])
def test_session_names_that_escape_are_refused_before_anything_is_written(target, name):
    done = run_cli("run", "--session", name, cwd=target.root)
    assert done.returncode == 1
    assert done.stderr.startswith("error: --session must be letters"), done.stderr
    assert not list(target.root.parent.glob("**/lock"))
    text = target.config_path.read_text().replace('name = "t"', f'name = "{name}"')
    target.config_path.write_text(text)
    with pytest.raises(ConfigError, match=r"'session\.name' must be letters"):
        load_config(target.config_path)
