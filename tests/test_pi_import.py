"""`autoresearch init --from-pi`: a pi-autoresearch session (the real log in the fixtures,
its bench, checks and ideas files) becomes a session whose journal holds the old runs, whose
review shows them, and whose first `try` measures against the repository's HEAD."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import git, run_cli, unified_patch

from autoresearch.config import load_config
from autoresearch.journal.store import read_journal

FIXTURE = Path(__file__).parent / "fixtures" / "pi-autoresearch" / "baton-pebble-writepack.jsonl"
BENCH = """#!/bin/bash
set -euo pipefail
v=$(cat src/value.txt)
echo "METRIC pebble_writepack_1m_ms=$v"
echo "METRIC pebble_writepack_100k_ms=$((v / 10))"
"""


def pi_repo(root: Path, layout: str = "root") -> Path:
    """A repository as pi-autoresearch leaves it: code, its session files, its log."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "value.txt").write_text("1000\n")
    files = (
        {
            "autoresearch.sh": BENCH,
            "autoresearch.checks.sh": "#!/bin/bash\ntest -s src/value.txt\n",
            "autoresearch.ideas.md": "# Ideas\n\n- batch the index writes\n* zstd level 1\n",
            "autoresearch.md": "# Pebble perf\n",
        }
        if layout == "root"
        else {".auto/measure.sh": BENCH, ".auto/prompt.md": "# Objective\n"}
    )
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
        (root / name).chmod(0o755)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the code, before the pi session")
    return root


def test_a_pi_session_becomes_a_session_whose_review_and_first_try_are_right(tmp_path):
    root = pi_repo(tmp_path / "repo")
    shutil.copy(FIXTURE, root / "autoresearch.jsonl")

    done = run_cli("init", "--from-pi", cwd=root)

    assert done.returncode == 0, done.stderr
    assert "imported 43 runs" in done.stdout and "keep 15" in done.stdout
    assert "measured afresh at HEAD" in done.stdout
    assert "d4b7e29) is not in this repository" in done.stdout  # the log's last keep
    config = load_config(root / "autoresearch.toml")
    assert (config.metric.name, config.metric.direction, config.metric.unit) == (
        "pebble_writepack_1m_ms",
        "lower",
        "ms",
    )
    assert config.bench.command == "./autoresearch.sh"
    assert config.checks.command == "./autoresearch.checks.sh" and config.checks.when == "keep"
    assert "autoresearch.*" in config.scope.protect
    ideas = (root / "ideas.md").read_text()
    assert "- batch the index writes" in ideas and "- zstd level 1" in ideas
    assert "autoresearch.md" in ideas
    (imported,) = read_journal(root / "experiments.jsonl").imports
    assert imported.format == "pi-autoresearch" and len(imported.lines) == 44

    # Before anything runs, the review is the imported session's.
    report = run_cli("report", cwd=root)
    assert report.returncode == 0, report.stderr
    assert "experiments: 43 (keep 15, discard 24, checks_failed 4)" in report.stdout
    assert "L0CompactionThreshold 2→8" in report.stdout

    again = run_cli("init", "--from-pi", cwd=root)
    assert again.returncode == 1 and "already imported" in again.stderr

    # The first try measures against HEAD, not against any figure of the old log.
    git(root, "add", "-A")
    git(root, "commit", "-qm", "autoresearch session")
    head = git(root, "rev-parse", "HEAD").strip()
    patch = tmp_path / "faster.patch"
    patch.write_text(unified_patch("src/value.txt", "1000\n", "800\n"))
    tried = run_cli("try", "--patch", str(patch), "--title", "Faster writes", cwd=root, timeout=300)
    assert tried.returncode == 0, tried.stderr
    out = json.loads(tried.stdout)
    assert out["status"] == "keep" and out["baseline_median"] == 1000.0
    assert round(out["change_pct"], 6) == -20.0
    (record,) = read_journal(root / "experiments.jsonl").experiments
    assert record.parent_commit == head

    # The review covers both: this session's experiment, then the imported runs.
    summary = json.loads(run_cli("report", "--format", "json", cwd=root).stdout)
    assert summary["experiments"] == 1 and summary["baseline"]["value"] == 1000.0
    (old,) = summary["imported"]
    assert old["experiments"] == 43 and old["format"] == "pi-autoresearch"
    assert old["baseline"]["value"] == 4245.856 and old["final"]["value"] == 1317.685
    pr = run_cli("pr", cwd=root).stdout
    assert "Faster writes" in pr
    assert "## Before this session: Pebble engine perf" in pr
    assert "L0CompactionThreshold 2→8" in pr.split("## Before this session")[1]


def test_the_newer_layout_without_checks_and_the_scope_its_keeps_touched(tmp_path):
    root = pi_repo(tmp_path / "repo", layout=".auto")
    (root / "src" / "value.txt").write_text("900\n")
    git(root, "commit", "-qam", "faster")
    kept = git(root, "rev-parse", "--short", "HEAD").strip()
    log = [
        {"type": "config", "name": "speed", "metricName": "pebble_writepack_1m_ms",
         "metricUnit": "ms", "bestDirection": "lower"},
        {"run": 1, "commit": kept, "metric": 900, "status": "keep", "description": "x"},
        {"type": "hook", "event": "after"},
        {"run": 2, "commit": "0000000", "metric": 950, "status": "discard", "description": "y"},
    ]  # fmt: skip
    (root / ".auto" / "log.jsonl").write_text("".join(json.dumps(o) + "\n" for o in log))

    done = run_cli("init", "--from-pi", cwd=root)

    assert done.returncode == 0, done.stderr
    assert f"HEAD is the last kept commit of the log ({kept})" in done.stdout
    config = load_config(root / "autoresearch.toml")
    assert config.bench.command == "./.auto/measure.sh"
    assert config.checks.when == "never"
    assert config.scope.include == ["src/**"] and ".auto/**" in config.scope.protect
    (imported,) = read_journal(root / "experiments.jsonl").imports
    assert imported.warnings == []  # the hook entry is not a run, nor a damaged line
    assert "experiments: 2 (keep 1, discard 1)" in run_cli("report", cwd=root).stdout


def test_what_is_missing_is_named(tmp_path):
    root = pi_repo(tmp_path / "repo")
    nothing = run_cli("init", "--from-pi", cwd=root)
    assert nothing.returncode == 1
    assert (
        "no pi-autoresearch session here" in nothing.stderr and "--from-pi PATH" in nothing.stderr
    )

    shutil.copy(FIXTURE, root / "autoresearch.jsonl")
    (root / "autoresearch.sh").unlink()
    no_bench = run_cli("init", "--from-pi", "autoresearch.jsonl", cwd=root)
    assert no_bench.returncode == 1
    assert "no autoresearch.sh beside autoresearch.jsonl" in no_bench.stderr
    assert not (root / "autoresearch.toml").exists()  # nothing written on the way
    assert not (root / "experiments.jsonl").exists()
