"""The agent proposer: whole nights driven by a stand-in agent (a real program that edits real
files and prints what the real CLIs print), on the synthetic target."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import experiments, git, run, run_cli, seen

from autoresearch.journal.store import read_journal
from autoresearch.loop.driver import run_session
from autoresearch.loop.session import RunOptions
from autoresearch.progress import Progress
from autoresearch.proposers.agent.prompt import render_prompt
from autoresearch.proposers.agent.proposer import agent_spend
from autoresearch.proposers.agent.version import compatible
from autoresearch.proposers.base import ProposalContext
from autoresearch.statuses import Direction

STANDIN = Path(__file__).with_name("standin_agent.py")
PRESETS = ("claude", "codex", "aider", "gemini", "opencode")


def use_agent(target, tmp_path: Path, steps: list[dict], **options) -> Path:
    """Point the target's session at the stand-in agent, playing `steps`; its transcript dir."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    transcript = tmp_path / "transcript"
    preset = options.pop("preset", "command")
    table = {
        "kind": "agent",
        "preset": preset,
        "timeout_s": 20,
        "max_proposals": len(steps),
        **options,
    }
    if preset == "command":
        table.setdefault("command", f"{sys.executable} {STANDIN}")
    table["env"] = {
        "STANDIN_SCRIPT": str(script),
        "STANDIN_TRANSCRIPT": str(transcript),
        "PATH": f"{_fake_clis(tmp_path)}:{os.environ['PATH']}",
        **table.get("env", {}),
    }
    text = target.config_path.read_text().replace('[proposer]\ndir = "hypotheses"\n', "")
    target.config_path.write_text(text + "\n[[proposer]]\n" + _toml(table))
    return transcript


def _toml(table: dict) -> str:
    lines, subtables = [], []
    for key, value in table.items():
        if isinstance(value, dict):
            subtables.append((key, value))
        else:
            lines.append(f"{key} = {json.dumps(value)}")
    for key, value in subtables:
        lines.append(f"\n[proposer.{key}]")
        lines += [f"{json.dumps(k)} = {json.dumps(v)}" for k, v in value.items()]
    return "\n".join(lines) + "\n"


def edit(value: str, title: str, family: str = "work", **extra) -> dict:
    return {
        "do": "edit",
        "files": {"src/value.txt": value},
        "title": title,
        "family": family,
        **extra,
    }


def prompts(transcript: Path) -> list[str]:
    found = sorted(transcript.glob("prompt-*.md"), key=lambda p: int(p.stem.split("-")[1]))
    return [p.read_text() for p in found]


@pytest.mark.e2e
def test_a_night_of_every_kind_of_proposal_ends_with_the_right_records(target, tmp_path):
    steps = [
        edit("80\n", "Halve the inner loop"),  # 1 a real win
        edit("120\n", "Unroll the loop", family="unrolling"),  # 2 a real loss
        {"do": "nothing", "title": "Think harder"},  # 3 no edit
        {"do": "edit", "files": {"README": "faster\n"}, "title": "Docs"},  # 4 out of scope
        edit("120\n", "Unroll it again", family="unrolling"),  # 5 the same diff as 2
        {"do": "edit", "files": {"bench.py": "print('METRIC time_ms=1')\n"}, "title": "Fast bench"},
        {"do": "crash"},  # 7 the agent crashes
        {"do": "hang"},  # 8 the agent hangs: the timeout ends it
        edit("79\n", "No hypothesis", no_hypothesis=True),  # 9 hands back no reasoning
        edit("125\n", "unroll the loop!", family="Unrolling"),  # 10 a closed axis, reworded
        edit("60\n", "Skip the copy", family="copies", commit=True),  # 11 a win, committed
    ]
    transcript = use_agent(target, tmp_path, steps, timeout_s=4)
    head_before = git(target.root, "rev-parse", "HEAD")

    outcome = run(target)

    records = experiments(target)
    got = [(r.status, (r.agent.refusal if r.agent else None)) for r in records]
    assert got == [
        ("keep", None),
        ("discard", None),
        ("refused", "empty"),
        ("refused", "scope"),
        ("refused", "duplicate"),
        ("refused", "scope"),
        ("agent_failed", "crash"),
        ("agent_failed", "timeout"),
        ("refused", "hypothesis_file"),
        ("refused", "closed_axis"),
        ("keep", None),
    ]
    assert outcome.kept == 2
    assert all(r.proposer == "agent" for r in records)
    assert records[0].family == "work" and records[0].asi.mechanism == "less work per operation"
    assert "outside the scope" in records[3].error
    assert "bench.py" in records[5].error
    assert "#2" in records[4].error and "identical" in records[4].error
    assert "timed out" in records[7].error
    assert "#2" in records[9].error and "closed axis" in records[9].error
    # Refused and failed proposals cost no bench run.
    for r in records[2:10]:
        assert r.bench_logs == [] and r.decision is None, r.status
    # Kept work is on the session branch; the user's checkout never moved.
    assert target.file("src/value.txt") == "100\n"
    assert git(target.root, "rev-parse", "HEAD") == head_before
    tip_value = git(target.root, "show", "autoresearch/t:src/value.txt")
    assert tip_value == "60\n"
    # Each prompt showed the agent what happened to the one before.
    texts = prompts(transcript)
    assert len(texts) == 11
    assert '#1 **keep** "Halve the inner loop"' in texts[1]
    assert '#2 **discard** "Unroll the loop"' in texts[2]
    assert "the agent changed no file" in texts[3]
    assert "outside the scope" in texts[4]
    assert "identical to #2" in texts[5]
    assert "the agent failed" in texts[7]
    assert "timed out" in texts[8]
    assert "no hypothesis file" in texts[9]
    assert "Unroll the loop [unrolling]" in texts[10]  # a closed axis, listed as one
    # Cost: the command preset's agent reported none, so every proposal is unknown cost.
    spend = agent_spend(records)
    assert spend["proposals"] == 11 and spend["unknown_cost"] == 11 and spend["cost_usd"] == 0


def test_prompt_holds_objective_scope_kept_and_hand_back(target, tmp_path):
    transcript = use_agent(
        target, tmp_path, [edit("80\n", "Halve the work"), edit("90\n", "Another")]
    )
    run(target)
    first, second = (seen(prompt) for prompt in prompts(transcript))
    assert "`time_ms` lower" in first
    assert "Baseline: 100 ms" in first and "Measured noise" in first
    assert "src/**" in first and "src/protected.txt" in first and "autoresearch.toml" in first
    assert "bench.py" in first and "checks.py" in first  # the harness, named as protected
    assert "./checks.py" in first
    assert "AUTORESEARCH_HYPOTHESIS" in first and '"family"' not in first  # keys named in text
    assert "`family`" in first
    assert "nothing yet" in first
    # After the keep: the kept change, its evidence and the cumulative diff's stat.
    assert '#1 "Halve the work" (-20.0%' in second  # quoted: an agent's words are data
    assert "src/value.txt" in second and "1 file changed" in second


@pytest.mark.e2e
def test_prompt_fits_its_budget_by_summarising_older_history(target, tmp_path):
    steps = [
        edit(f"{100 + i}\n", f"Try number {i} with a long title " + "x" * 60) for i in range(14)
    ]
    transcript = use_agent(target, tmp_path, steps, prompt_chars=4000, recent=12)
    run(target)
    last = prompts(transcript)[-1]
    assert len(last) <= 4000
    assert "earlier experiments" in last  # older ones summarised, not dropped
    assert "Try number 12" in last  # the newest in full


@pytest.mark.e2e
def test_budgets_stop_the_agent_and_say_why(target, tmp_path):
    steps = [edit(f"{110 + i}\n", f"Loss {i}", family=f"f{i}", cost_usd=0.4) for i in range(10)]
    use_agent(target, tmp_path, steps, preset="claude", max_cost_usd=1.0)
    outcome = run(target)
    records = experiments(target)
    # 0.4 + 0.4 + 0.4 = 1.2 >= 1.0: the third proposal was the last.
    assert len(records) == 3
    assert agent_spend(records)["cost_usd"] == pytest.approx(1.2)
    assert "no hypotheses left" in outcome.stop_reason


@pytest.mark.e2e
def test_pivots_then_stops_after_experiments_without_a_keep(target, tmp_path):
    steps = [edit(f"{110 + i}\n", f"Loss {i}", family=f"f{i}") for i in range(10)]
    transcript = use_agent(target, tmp_path, steps, pivot_after=2, max_pivots=1)
    run(target)
    records = experiments(target)
    assert len(records) == 4  # 2 without a keep: pivot; 2 more: stop
    texts = prompts(transcript)
    assert "structurally different" not in texts[1]
    assert "structurally different idea" in texts[2] and "last 2 experiments" in texts[2]
    assert records[2].agent.pivot is True


@pytest.mark.parametrize("preset", PRESETS)
def test_each_preset_runs_its_cli_headless_and_reads_its_cost(target, tmp_path, preset):
    steps = [edit("80\n", "Halve the work", cost_usd=0.25)]
    files = {"files": ["src/value.txt"]} if preset == "aider" else {}  # Aider edits those
    transcript = use_agent(
        target, tmp_path, steps, preset=preset, model="m-1", max_usd=0.5, **files
    )
    outcome = run(target)
    assert outcome.kept == 1
    (record,) = experiments(target)
    argv = json.loads((transcript / "argv-1.json").read_text())
    assert argv[0] == preset and "--model" in argv and "m-1" in argv
    usage = record.agent.usage
    expected_cost = {"claude": 0.25, "aider": 0.25, "opencode": 0.25}.get(preset)
    assert usage.cost_usd == expected_cost  # codex and gemini report tokens, not dollars
    assert usage.input_tokens and usage.output_tokens
    # The prompt reached the CLI whole, the way that CLI takes it.
    assert "Propose one change" in (transcript / "prompt-1.md").read_text()
    if preset == "claude":
        assert "--max-budget-usd" in argv and "acceptEdits" in argv


def test_an_agent_that_reports_an_error_is_a_record(target, tmp_path):
    use_agent(target, tmp_path, [{"do": "error"}, edit("80\n", "Then a win")], preset="claude")
    run(target)
    first, second = experiments(target)
    assert first.status == "agent_failed" and "overloaded" in first.error
    assert second.status == "keep"


def test_an_agent_moving_the_session_branch_is_put_back_and_refused(target, tmp_path):
    steps = [edit("10\n", "Sneaky", commit=True, move_branch="refs/heads/autoresearch/t")]
    use_agent(target, tmp_path, steps)
    run(target)
    (record,) = experiments(target)
    assert record.status == "refused" and "session branch" in record.error
    assert git(target.root, "show", "autoresearch/t:src/value.txt") == "100\n"


@pytest.mark.e2e
def test_spend_survives_a_restart(target, tmp_path):
    steps = [edit(f"{110 + i}\n", f"Loss {i}", family=f"f{i}", cost_usd=0.3) for i in range(6)]
    use_agent(target, tmp_path, steps, preset="claude", max_cost_usd=1.0)
    run(target, max_experiments=2)
    run(target)
    records = read_journal(target.journal).experiments
    assert len(records) == 4  # 0.3 x 4 = 1.2: the budget counted the first run's spend too


@pytest.mark.e2e
def test_prepare_ahead_proposes_while_the_bench_runs(target, tmp_path):
    steps = [
        edit("120\n", "A loss", family="a"),  # discarded: the best stays, the next one applies
        edit("80\n", "A win", family="b"),  # kept: the best moves under the one made meanwhile
        edit("70\n", "Made against the old best", family="c"),
        edit("60\n", "Made against the new best", family="d"),
    ]
    use_agent(target, tmp_path, steps, prepare_ahead=True)
    # The agent's runs overlap the bench's: the bench's clean-up must leave the agent alone.
    outcome = run(target, env={"BENCH_SLEEP_S": "0.1"})
    records = experiments(target)
    assert [r.status for r in records] == ["discard", "keep", "refused", "keep"], [
        (r.error, r.agent) for r in records
    ]
    assert [r.agent.prepared_ahead for r in records] == [False, True, True, True]
    assert "no longer applies" in records[2].error and records[2].agent.refusal == "stale"
    assert outcome.kept == 2
    assert git(target.root, "show", "autoresearch/t:src/value.txt") == "60\n"


def test_bad_agent_options_are_named(target, tmp_path):
    from autoresearch.errors import ConfigError

    use_agent(target, tmp_path, [edit("80\n", "x")], preset="claud")
    with pytest.raises(ConfigError, match="unknown preset 'claud'"):
        target.load()
    target.configure()
    use_agent(target, tmp_path, [edit("80\n", "x")], preset="aider")
    with pytest.raises(ConfigError, match="aider preset edits only the files it is given"):
        target.load()
    target.configure()
    use_agent(target, tmp_path, [edit("80\n", "x")], timeout_s="long")
    with pytest.raises(ConfigError, match="'timeout_s' must be a number"):
        target.load()
    target.configure()
    use_agent(target, tmp_path, [edit("80\n", "x")], env={"A=B": "1"})
    with pytest.raises(ConfigError, match="'A=B' is not an environment variable's name"):
        target.load()


def _fake_clis(tmp_path: Path) -> Path:
    """`claude`, `codex`, ... in a directory for PATH: the stand-in playing each CLI."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in PRESETS:
        shim = bin_dir / name
        shim.write_text(f'#!/bin/sh\nexec {sys.executable} {STANDIN} --as {name} "$@"\n')
        shim.chmod(0o755)
    return bin_dir


@pytest.mark.e2e
def test_status_report_and_pr_show_the_proposer_its_cost_and_the_refusals(target, tmp_path):
    from conftest import run_cli

    steps = [
        edit("80\n", "Halve the work", cost_usd=0.5),
        {"do": "nothing", "title": "Nothing", "cost_usd": 0.25},
    ]
    use_agent(target, tmp_path, steps, preset="claude")
    run(target)
    status = run_cli("status", cwd=target.root)
    assert "agent: 2 proposals, $0.75 spent; 1 kept, 1 refused, 0 failed" in status.stdout
    report = run_cli("report", cwd=target.root)
    assert "hypotheses from: agent 2 (1 kept, 1 refused before a run, cost $0.75)" in report.stdout
    assert "the agent changed no file" in report.stdout
    pr = run_cli("pr", "--out", str(tmp_path / "pr.md"), cwd=target.root)
    assert pr.returncode == 0, pr.stderr
    text = (tmp_path / "pr.md").read_text()
    assert "Hypotheses from: agent 2 (1 kept, 1 refused before a run, cost \\$0.75)" in text
    assert "Refused before any bench run (1)" in text and "the agent changed no file" in text


def test_oversized_and_protected_diffs_are_refused_unbenched(target, tmp_path):
    steps = [
        {"do": "edit", "files": {"src/big.txt": "x" * 3000 + "\n"}, "title": "Big table"},
        {"do": "edit", "files": {"src/protected.txt": "changed\n"}, "title": "Guarded"},
        {"do": "edit", "files": {"autoresearch.toml": "[session]\n"}, "title": "The judge"},
    ]
    use_agent(target, tmp_path, steps, max_patch_kib=1)
    run(target)
    big, guarded, judge = experiments(target)
    assert (big.status, big.agent.refusal) == ("refused", "size")
    assert "max_patch_kib = 1" in big.error
    assert guarded.agent.refusal == "scope" and "protected" in guarded.error
    assert judge.agent.refusal == "scope" and "autoresearch.toml" in judge.error
    assert all(not r.bench_logs for r in (big, guarded, judge))


def test_a_user_template_replaces_the_prompt(target, tmp_path):
    template = target.root / "prompt.md.j2"
    template.write_text(
        "Make {{ p.metric }} {{ p.better }}; best {{ p.best }}; kept {{ p.kept | length }}\n"
    )
    transcript = use_agent(target, tmp_path, [edit("80\n", "Win")], template="prompt.md.j2")
    run(target)
    (text,) = prompts(transcript)
    assert text == "Make time_ms lower; best 100 ms; kept 0\n"


@pytest.mark.e2e
def test_a_keep_made_while_an_agent_prepares_ahead_stays_on_the_branch(target, tmp_path):
    """The agent takes longer than the measurement beside it: the loop keeps "A win" while
    the agent still runs, and the agent's branch check must not take that keep for its own
    doing and move the branch back over it."""
    # The second proposal is made until "A win" is on the branch (a deadline, not a sleep).
    wait = (
        "import subprocess, time\n"
        "deadline = time.monotonic() + 120\n"
        "while time.monotonic() < deadline:\n"
        f"    log = subprocess.run(['git', '-C', {str(target.root)!r}, 'log', '-1',\n"
        "        '--format=%s', 'autoresearch/t'], capture_output=True, text=True).stdout\n"
        "    if log.strip() == 'A win':\n"
        "        break\n"
        "    time.sleep(0.05)\n"
    )
    steps = [
        edit("80\n", "A win", family="a"),
        edit("70\n", "Slow to make", family="b", run=wait),
        edit("60\n", "Third", family="c"),
    ]
    use_agent(target, tmp_path, steps, prepare_ahead=True)

    run(target, env={"BENCH_SLEEP_S": "0.05"})

    records = experiments(target)
    assert records[0].status == "keep"
    assert records[1].agent.refusal != "branch", records[1].error
    kept = [r.title for r in records if r.status == "keep"]
    assert target.branch_log() == [*reversed(kept), "synthetic target"]


def test_the_agent_edits_outside_any_git_directory(target, tmp_path):
    """Claude Code refuses to edit a file under a `.git` directory, where the session's state
    lives by default: the agent's scratch tree is elsewhere (the user's cache)."""
    where = tmp_path / "cwd.txt"
    probe = f"import os, pathlib; pathlib.Path({str(where)!r}).write_text(os.getcwd())"
    use_agent(target, tmp_path, [edit("80\n", "a win", run=probe)])

    run(target)

    cwd = Path(where.read_text())
    assert ".git" not in cwd.parts, cwd
    assert cwd.is_relative_to(os.environ["XDG_CACHE_HOME"])
    assert [r.status for r in experiments(target)] == ["keep"]
    done = run_cli("clean", "t", cwd=target.root)
    assert done.returncode == 0, done.stderr
    assert not cwd.parent.exists()  # `clean` takes the scratch tree and its home with it


def test_what_claude_code_refused_and_why_it_stopped_are_said(target, tmp_path):
    denial = {"tool_name": "Edit", "tool_input": {"file_path": "/x/.git/src/value.txt"}}
    steps = [
        {"do": "nothing", "title": "denied", "denials": [denial]},
        {"do": "nothing", "title": "out of turns", "subtype": "error_max_turns"},
    ]
    use_agent(target, tmp_path, steps, preset="claude")

    run(target)

    denied, stopped = experiments(target)
    assert denied.status == "refused"
    assert denied.error == "the agent changed no file; its CLI refused: Edit /x/.git/src/value.txt"
    assert denied.agent.usage.denied == ("Edit /x/.git/src/value.txt",)
    assert stopped.status == "agent_failed"
    assert "it reached its turn limit (max_turns) before finishing" in stopped.error


@pytest.mark.e2e
def test_a_cli_outside_the_tested_series_is_said_and_recorded(target, tmp_path):
    """Asked once, at the first proposal: an older Claude Code than the preset was tested with
    is named in the warning and in each record; the tested one is recorded without a note."""
    steps = [edit("80\n", "a win"), edit("70\n", "another")]
    use_agent(target, tmp_path, steps, preset="claude", env={"STANDIN_VERSION": "2.0.14"})
    warnings = []
    session = target.load()

    class Heard(Progress):
        def warn(self, line: str) -> None:
            warnings.append(line)

    run_session(session, RunOptions(accept_noise=True), Heard(quiet=True))

    said = [w for w in warnings if "2.0.14" in w]
    assert len(said) == 1, warnings
    assert "outside the series the claude preset was tested with (2.1.197" in said[0]
    first, second = experiments(target)
    assert first.agent.cli["version"] == second.agent.cli["version"] == "2.0.14"
    assert "outside the series" in first.agent.cli["note"]


def test_the_tested_series_is_the_same_major_and_for_0x_the_same_minor():
    assert compatible("2.1.197", "2.1.197") and compatible("2.4.0", "2.1.197")
    assert not compatible("2.0.99", "2.1.197") and not compatible("3.0.0", "2.1.197")
    assert compatible("0.169.3", "0.169.0") and not compatible("0.170.0", "0.169.0")
    assert not compatible("nonsense", "2.1.197")


def test_a_failed_agent_is_said_in_its_own_words_without_escapes(target, tmp_path):
    """A CLI's last words in colour, or as a JSON line, reach the record and the next prompt
    plain: the escapes dropped, the JSON's message taken."""
    script = tmp_path / "fail.py"
    script.write_text(
        "import os, sys\n"
        "n = int(os.environ['AUTORESEARCH_PROPOSAL'])\n"
        "if n == 1:\n"
        "    print('\\x1b[1m\\x1b[31mError:\\x1b[0m the model endpoint refused the key')\n"
        "elif n == 2:\n"
        '    print(\'{"type": "error", "error": {"message": "quota exceeded for today"}}\')\n'
        "else:  # a Rust CLI's panic: its backtrace's frames say nothing\n"
        "    print('starting')\n"
        "    print('Error: Read-only file system (os error 30)')\n"
        "    print('stack backtrace:')\n"
        "    print(''.join(f'  {i}: <unknown>\\n' for i in range(12)))\n"
        "sys.exit(1)\n"
    )
    use_agent(target, tmp_path, [{}, {}, {}], command=f"{sys.executable} {script}", max_proposals=3)

    run(target)

    records = experiments(target)
    assert [r.status for r in records] == ["agent_failed"] * 3
    said = [r.error.partition(" (its log: ")[0] for r in records]
    assert said == [
        "the agent failed (exit code 1): Error: the model endpoint refused the key",
        "the agent failed (exit code 1): quota exceeded for today",
        "the agent failed (exit code 1): Error: Read-only file system (os error 30)",
    ]
    assert all(r.error.endswith(f"{r.agent.log})") for r in records)


def test_the_prompt_names_the_hypothesis_file_as_it_is(target):
    """The path the agent writes to is given verbatim, in a code span: as Markdown text its
    underscores would be escaped (`tmp_x` as `tmp\\_x`), and an agent that copies the path
    writes where nothing reads (a scratch tree under a temporary home named `tmprs2yl2l_`)."""
    path = Path("/home/a_user/.cache/autoresearch/scratch/tmp_x*/agent-handoff/hypothesis.json")
    context = ProposalContext(
        tried=set(), records=[], tip="0" * 40, worktree=target.root, metric="time_ms",
        direction=Direction.LOWER,
    )  # fmt: skip
    prompt = render_prompt(
        context, target.load(), recent=10, budget_chars=50_000, pivot=None,
        hypothesis_path=path, max_patch_kib=64,
    )  # fmt: skip
    assert f"`{path}`" in prompt
