"""The journal: durable append, tolerant read, versioned records."""

import json
from pathlib import Path

import pytest
from conftest import experiment_record as record

from autoresearch.errors import JournalError
from autoresearch.journal.index import experiment_row
from autoresearch.journal.records import record_from_dict
from autoresearch.journal.store import Journal, append_record, read_journal
from autoresearch.statuses import Status

# Lines the loop wrote before records held values: the format they must still read and write.
EARLIER = Path(__file__).parent / "fixtures" / "records" / "experiments.jsonl"


def test_round_trip(tmp_path):
    path = tmp_path / "j.jsonl"
    first = record(1, decision={"rule": "worse_beyond_noise", "metrics": {}})
    append_record(path, first)
    append_record(path, record(2, "keep"))
    contents = read_journal(path)
    assert contents.experiments[0] == first
    assert [r.status for r in contents.experiments] == ["discard", "keep"]
    assert contents.warnings == []
    assert json.loads(path.read_text().splitlines()[0])["schema_version"] == 1


def test_a_session_read_again_sees_every_change_made_since(tmp_path):
    path = tmp_path / "j.jsonl"
    journal = Journal(path, "s")
    assert journal.read().experiments == []
    append_record(path, record(1))  # another process's append, not through this Journal
    assert [r.n for r in journal.read().experiments] == [1]
    journal.append(record(2))
    first = journal.read()
    first.experiments.clear()  # a caller's list is its own
    assert [r.n for r in journal.read().experiments] == [1, 2]
    path.write_text(path.read_text().splitlines()[1] + "\n")  # rewritten in place
    assert [r.n for r in journal.read().experiments] == [2]
    path.unlink()
    assert journal.read().experiments == []


def test_missing_values_stay_null(tmp_path):
    path = tmp_path / "j.jsonl"
    append_record(path, record(1, "crash"))
    data = json.loads(path.read_text())
    assert data["kept_commit"] is None and data["decision"] is None


def test_torn_last_line_is_reported_and_the_next_append_is_intact(tmp_path):
    path = tmp_path / "j.jsonl"
    append_record(path, record(1))
    with open(path, "a") as handle:
        handle.write('{"schema_version": 1, "type": "experi')
    contents = read_journal(path)
    assert len(contents.experiments) == 1
    assert contents.warnings == [f"{path}:2: torn last line skipped (not valid JSON)"]

    append_record(path, record(2))
    contents = read_journal(path)
    assert [r.n for r in contents.experiments] == [1, 2]
    assert contents.warnings == [f"{path}:2: damaged line skipped (not valid JSON)"]


def test_newer_schema_is_refused_with_a_clear_message(tmp_path):
    path = tmp_path / "j.jsonl"
    data = record(1).to_dict() | {"schema_version": 99}
    path.write_text(json.dumps(data) + "\n")
    with pytest.raises(JournalError, match="schema_version 99 is newer than"):
        read_journal(path)


def test_unknown_or_incomplete_lines_are_skipped(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text(
        json.dumps({"schema_version": 1, "type": "mystery"})
        + "\n[1, 2]\n"
        + json.dumps({"schema_version": 1, "type": "experiment", "id": "x"})
        + "\n"
    )
    contents = read_journal(path)
    assert contents.experiments == []
    assert len(contents.warnings) == 3
    assert "unknown record type 'mystery'" in contents.warnings[0]
    assert "incomplete" in contents.warnings[2]


def test_record_without_version_is_an_error():
    with pytest.raises(JournalError, match="no integer schema_version"):
        record_from_dict({"type": "experiment"})


def test_the_primary_metric_is_the_one_the_decision_names_or_in_an_old_journal_the_floor_s():
    metrics = {
        "p99_ms": {"candidate_median": 9.0, "change_pct": -10.0},
        "time_ms": {"candidate_median": 80.0, "change_pct": -20.0, "threshold_pct": 2.0},
    }
    old = record(1, decision={"status": "keep", "metrics": metrics})
    named = record(2, decision={"status": "keep", "primary": "p99_ms", "metrics": metrics})
    assert old.evidence().change_pct == -20.0
    assert named.evidence().change_pct == -10.0
    assert experiment_row(named.to_dict())["change_pct"] == -10.0  # what the review reads
    assert experiment_row(old.to_dict())["change_pct"] == -20.0


def test_lines_an_earlier_version_wrote_read_as_values_and_write_back_unchanged():
    """Experiment lines as the loop wrote them before records held values (a holdout's
    refusal and its win, a sentinel's extension, a floor's discard, a failure, a keep recovered
    from its commit, a confined crash, wins measured on bench hosts, one of them again on a
    best that moved): read back typed, and but the recovered one (whose evidence is what its
    trailer held) written back as the same JSON; and two confirmations, one with the hidden
    holdout's comparison. Three lines of coding agents' proposals (a win proposed while the
    bench ran, a proposal refused as stale, an agent that crashed) read their run as an
    `AgentRun`."""
    lines = [json.loads(line) for line in EARLIER.read_text().splitlines()]
    records = [record_from_dict(line) for line in lines]
    confirmations = [r for r in records if r.kind == "confirmation"]
    records = [r for r in records if r.kind == "experiment"]
    assert all(isinstance(r.status, Status) for r in records)
    by_rule = {r.rule: r for r in records}
    held = by_rule["holdout"].decision.holdout
    assert (held.verdict, held.ok, held.pairs) == ("no_gain", False, 6)
    assert by_rule["significant_win"].decision.design.cap > 0
    extended = next(r for r in records if r.decision and r.decision.sentinel_extension)
    assert extended.decision.sentinel_extension.outcome == "shown within budget"
    assert extended.sentinels["sentinel_ms"].verdict == "within"
    recovered = by_rule["recovered"]
    assert recovered.decision.primary is None and recovered.evidence().change_pct < 0
    assert by_rule[None].decision is None and by_rule[None].sentinels == {}
    confined = next(r for r in records if r.confinement and r.confinement.tool == "bwrap")
    assert confined.confinement.network is False and confined.confinement.writable
    hosted = [r for r in records if r.cluster is not None]
    assert len(hosted) == 3 and all(r.cluster.host and r.cluster.worker for r in hosted)
    (again,) = [r for r in hosted if r.cluster.stale]
    assert again.cluster.stale[0].change_pct < 0 and again.cluster.stale[0].parent
    assert all(r.checks is None or r.checks.exit_code == 0 for r in records)
    ahead, stale, crashed = (r for r in records if r.agent is not None)
    assert ahead.status == "keep" and ahead.agent.prepared_ahead and ahead.agent.refusal is None
    assert (stale.agent.refusal, crashed.agent.refusal) == ("stale", "crash")
    assert crashed.agent.exit_code != 0 and crashed.agent.usage.cost_usd is None
    assert all(r.agent.log.endswith("agent.log") and not r.agent.confined for r in records[:3])
    held, plain = confirmations
    assert held.holdout.change_pct < 0 and held.holdout.duration_s > 0 and plain.holdout is None
    assert held.metrics["time_ms"].estimator == "paired" and held.metrics["time_ms"].tip_samples
    for line, read in zip(lines, [*records, *confirmations], strict=True):
        if getattr(read, "rule", None) != "recovered":
            assert json.loads(json.dumps(read.to_dict())) == line, read


def test_calibration_lines_read_their_aa_check_as_a_value_and_write_back_unchanged(tmp_path):
    """A real calibration line of the bundled night, and the oldest shape of its A/A check
    (alternate runs in halves, before it said whether it could fail): read as an `AACheck`;
    the real one written back as the same JSON. A check of the wrong shape is a damaged line
    named by its field, never a traceback."""
    path = Path(__file__).parent / "fixtures" / "records" / "calibrations.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    current, oldest = (record_from_dict(line) for line in lines)
    assert current.aa.ok and current.aa.n_per_arm == 8 and current.aa.can_fail
    assert current.aa.shift_pct == lines[0]["aa"]["shift_pct"]
    assert json.loads(json.dumps(current.to_dict())) == lines[0]
    assert oldest.aa.can_fail and oldest.aa.n_per_arm is None and oldest.aa.p_value > 0.05
    damaged = tmp_path / "j.jsonl"
    bad = {**lines[0], "aa": {**lines[0]["aa"], "ok": "yes"}}
    damaged.write_text(json.dumps(bad) + "\n" + json.dumps({**bad, "aa": 3}) + "\n")
    contents = read_journal(damaged)
    assert contents.calibrations == []
    assert "calibration field 'aa.ok'" in contents.warnings[0]
    assert "calibration field 'aa'" in contents.warnings[1]
