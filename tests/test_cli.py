"""The command line: help everywhere, one-line errors, exit codes, init -> run."""

import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import git, run_cli

from autoresearch.cli import COMMANDS, build_parser
from autoresearch.config import (
    BenchConfig,
    BudgetConfig,
    ChecksConfig,
    DecisionConfig,
    load_config,
)

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_has_help_and_is_documented(command, capsys):
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args([command, "--help"])
    assert exited.value.code == 0
    assert len(capsys.readouterr().out) > 100
    guide = (ROOT / "docs" / "guides" / "commands.md").read_text()
    assert re.search(rf"^## `autoresearch {command}", guide, re.M), f"{command} not in the guide"


def test_the_command_list_says_each_command_in_a_whole_sentence(capsys):
    """`autoresearch --help` lists each command by the first sentence of its help, never cut
    at a line of its docstring."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    listing = capsys.readouterr().out
    said = " ".join(listing.split("positional arguments:")[1].split("options:")[0].split())
    names = "|".join(re.escape(c) for c in COMMANDS)
    starts = list(re.finditer(rf"(?:^|\s)({names}) (?=[A-Z])", said))
    assert len(starts) == len(COMMANDS)
    for here, following in zip(starts, [*starts[1:], None], strict=True):
        end = following.start() if following else len(said)
        sentence = said[here.end() : end].strip()
        assert sentence.endswith("."), (here.group(1), sentence)


@pytest.mark.e2e
def test_loop_py_is_autoresearch_run(tmp_path):
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, str(ROOT / "loop.py"), "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0 and "usage: autoresearch run" in done.stdout


def one_line_error(done, *fragments):
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_bad_config_is_one_line(target):
    target.config_path.write_text(target.config_path.read_text() + "\n[bench]\nbogus = 1\n")
    done = run_cli("run", cwd=target.root)
    assert done.returncode == 1
    assert "not valid TOML" in done.stderr  # [bench] twice


def test_unknown_key_is_one_line(target):
    text = target.config_path.read_text().replace("[bench]\n", "[bench]\nbogus = 1\n")
    target.config_path.write_text(text)
    one_line_error(run_cli("status", cwd=target.root), "autoresearch.toml", "'bench.bogus'")


def test_missing_bench_script(target):
    git(target.root, "rm", "-q", "bench.py")
    git(target.root, "commit", "-q", "-m", "no bench")
    one_line_error(run_cli("run", cwd=target.root), "bench.command runs 'bench.py'", "commit it")


def test_not_a_git_repository(tmp_path):
    (tmp_path / "autoresearch.toml").write_text('[metric]\nname = "x"\n')
    one_line_error(run_cli("run", cwd=tmp_path), "not a git repository")


def test_garbage_from_the_baseline_bench_names_the_line(target):
    (target.root / "src" / "mode.txt").write_text("garbage\n")
    git(target.root, "commit", "-qam", "garbage")
    done = run_cli("run", "--quiet", cwd=target.root)
    # A failed calibration of the best is a baseline failure: measured again, and the third in
    # a row stops the night (exit 3) with the reason, naming the line.
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    said = done.stdout + done.stderr
    assert "failed 3 times in a row" in said, said
    for fragment in ("baseline bench", "line 1", "METRIC time_ms has value 'fast'"):
        assert fragment in said, said


def test_traceback_on_request(tmp_path):
    done = run_cli("status", cwd=tmp_path, env={"AUTORESEARCH_TRACEBACK": "1"})
    assert done.returncode == 1
    assert "Traceback" in done.stderr and "error: no autoresearch.toml" in done.stderr


def test_run_then_status(target):
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"}, title="win")
    target.add_hypothesis("02-same", {"src/sentinel.txt": "50.1\n"}, title="same")
    done = run_cli("run", cwd=target.root)
    assert done.returncode == 0, done.stderr
    assert "2 experiments this run, 1 kept" in done.stdout
    assert "[1/2] win" in done.stderr and "keep: time_ms -20.00%" in done.stderr
    assert "best 80 ms (-20.00% vs baseline, kept changes)" in done.stderr

    status = run_cli("status", cwd=target.root)
    assert status.returncode == 0
    assert "experiments: 2 (keep 1, discard 1)" in status.stdout
    assert "baseline: time_ms = 100 ms" in status.stdout
    assert "best:     80 ms (-20.00%)" in status.stdout
    assert "not running" in status.stdout


def test_session_option_starts_a_separate_session(target):
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    assert run_cli("run", "--quiet", cwd=target.root).returncode == 0
    done = run_cli("run", "--quiet", "--session", "second", cwd=target.root)
    assert done.returncode == 0, done.stderr
    assert "session second: 1 experiment this run, 1 kept" in done.stdout
    assert git(target.root, "rev-parse", "--verify", "-q", "autoresearch/second").strip()
    status = run_cli("status", "--session", "second", cwd=target.root)
    assert "session 'second' on autoresearch/second" in status.stdout


@pytest.mark.parametrize(("unit", "low", "high"), [("ms", 90, 1000), ("us", 90_000, 1_000_000)])
def test_init_bench_prints_in_the_unit_given_and_defaults_match_the_reference(
    tmp_path, unit, low, high
):
    repo = tmp_path / "mine"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    assert run_cli("init", "--metric", "wall", "--unit", unit, cwd=repo).returncode == 0
    done = subprocess.run(["bash", "autoresearch.sh"], cwd=repo, capture_output=True, text=True)
    value = float(done.stdout.strip().removeprefix("METRIC wall="))
    assert low <= value <= high, done.stdout  # the template's workload sleeps 0.1 s
    config = load_config(repo / "autoresearch.toml")
    defaults = {"bench": BenchConfig, "checks": ChecksConfig, "budget": BudgetConfig}
    defaults["decision"] = DecisionConfig
    for section, kind in defaults.items():
        assert getattr(config, section) == kind(), section


def test_init_with_a_unit_that_is_no_time_asks_for_the_figure(tmp_path):
    repo = tmp_path / "mine"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    assert run_cli("init", "--metric", "rate", "--unit", "ops/s", cwd=repo).returncode == 0
    done = subprocess.run(["bash", "autoresearch.sh"], cwd=repo, capture_output=True, text=True)
    assert done.returncode == 1
    assert "print 'METRIC rate=<value in ops/s>' here" in done.stderr


def test_init_scaffolds_a_working_session(tmp_path):
    repo = tmp_path / "mine"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.txt").write_text("v1\n")
    git(repo.parent, "init", "-q", "-b", "main", str(repo))
    done = run_cli("init", "--metric", "wall_ms", "--scope", "src/**", cwd=repo)
    assert done.returncode == 0, done.stderr
    for name in ("autoresearch.toml", "autoresearch.sh", "autoresearch.checks.sh", "ideas.md"):
        assert (repo / name).exists()
    assert os.access(repo / "autoresearch.sh", os.X_OK)
    assert "experiments.jsonl" in (repo / ".gitignore").read_text()
    again = run_cli("init", cwd=repo)
    assert again.returncode == 1 and "--force" in again.stderr

    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "scaffold")
    (repo / "hypotheses" / "01.patch").write_text(
        "Title: tweak\n\ndiff --git a/src/app.txt b/src/app.txt\n--- a/src/app.txt\n"
        "+++ b/src/app.txt\n@@ -1 +1 @@\n-v1\n+v2\n"
    )
    # The template's workload is a 0.1 s sleep: too noisy for 5% on a busy machine, said so.
    done = run_cli("run", "--max-experiments", "1", "--accept-noise", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "1 experiment this run" in done.stdout
    # The template calibrates with eight runs per arm: its A/A check can fail, and says nothing.
    assert "calibrating on " in done.stderr and "8 runs in each arm" in done.stderr
    assert "cannot fail" not in done.stderr


def test_the_progress_line_compounds_the_kept_changes(target):
    """The best's change from the baseline, as the keeps measured it (each paired against the
    best before it), compounded: -20% then -50% is -60%."""
    (target.root / "src" / "speedup-a.txt").write_text("1.0\n")
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "a knob")
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    target.add_hypothesis("02-half", {"src/speedup-a.txt": "0.5\n"})
    done = run_cli("run", cwd=target.root)
    assert done.returncode == 0, done.stderr
    assert "best 80 ms (-20.00% vs baseline, kept changes)" in done.stderr
    assert "best 40 ms (-60.00% vs baseline, kept changes)" in done.stderr
