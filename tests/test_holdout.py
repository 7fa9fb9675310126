"""A keep must generalize: a hidden holdout workload measured before every keep, and an
output equivalence check before every bench. Each overfitting candidate is an attack written
as the test: tuned to the bench's inputs, reading the holdout, or fast because it says
something else."""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import experiments, git, local_cluster, make_target, run, run_cli
from test_cluster import drive, sleepy

from autoresearch.agents.outcome import without_holdout_figures
from autoresearch.bench.agent_sandbox import agent_sandbox
from autoresearch.bench.bwrap import bwrap_problem
from autoresearch.bench.runners import LocalRunner
from autoresearch.config import load_config
from autoresearch.errors import UserError
from autoresearch.journal.decision import Design, HoldoutEvidence
from autoresearch.journal.evidence import SentinelEvidence
from autoresearch.journal.store import read_journal
from autoresearch.proposers.agent.prompt import render_prompt
from autoresearch.proposers.base import ProposalContext
from autoresearch.repo.state_dir import session_paths
from autoresearch.report import load_history, render_text, summarize
from autoresearch.statuses import Direction

needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None, reason="no usable bubblewrap")


def with_holdout(
    target, tmp_path: Path, sandbox: str = "off", noise: str = "", settings=(), **options
) -> Path:
    """A holdout beside the repository's files, ignored (what a confined run could read but
    for the sandbox): the same bench on other inputs (BENCH_SEED) and a secret only its runs
    may read. `noise`: variables that set its runs' noise; `settings`: the config's others
    (target.configure's)."""
    held = target.root / ".holdout"
    held.mkdir()
    with open(target.root / ".git" / "info" / "exclude", "a") as exclude:
        exclude.write(".holdout/\n")
    run_sh = f'#!/bin/sh\n{noise} BENCH_SEED=held-out-7 exec ./bench.py "$@"\n'
    (held / "run.sh").write_text(run_sh)
    (held / "run.sh").chmod(0o755)
    (held / "secret.txt").write_text("secret inputs\n")
    config = target.configure(sandbox=sandbox, **dict(settings))
    lines = [
        "[holdout]",
        f'command = "{held}/run.sh"',
        f'files = ["{held}"]',
        *(f"{key} = {value}" for key, value in options.items()),
    ]
    config.write_text(config.read_text() + "\n".join(lines) + "\n")
    git(target.root, "commit", "-qam", "a holdout", "--allow-empty")
    return held


@pytest.mark.e2e
def test_a_change_tuned_to_the_bench_s_inputs_is_not_kept(target, tmp_path):
    """Fast only for the bench's seed: a win on the bench, none on the holdout (required):
    discarded, said why; an honest win beside it is kept with the holdout's evidence."""
    with_holdout(target, tmp_path, require_win="true")
    target.add_hypothesis("01-overfit", {"src/fast_for.txt": "bench\n"})
    target.add_hypothesis("02-honest", {"src/value.txt": "60\n"})

    run(target)

    overfit, honest = experiments(target)
    # Read back as values (the holdout's, the design's, each sentinel's), they write the very
    # lines the loop wrote: one codec, the journal's format as it was.
    lines = [json.loads(line) for line in target.journal.read_text().splitlines()]
    written = [line for line in lines if line["type"] == "experiment"]
    assert [json.loads(json.dumps(r.to_dict())) for r in (overfit, honest)] == written
    assert isinstance(honest.decision.holdout, HoldoutEvidence)
    assert isinstance(honest.decision.design, Design) and honest.decision.design.cap
    assert isinstance(honest.sentinels["sentinel_ms"], SentinelEvidence)
    assert overfit.status == "discard", (overfit.status, overfit.error)
    assert overfit.decision.rule == "holdout"
    # Shown to gain nothing there at its first look (less than a third of the bench's -50%),
    # each look's interval widened for the three allowed (max_pairs: three times pairs).
    assert overfit.decision.holdout.verdict == "no_gain"
    assert "shown to gain less than its 16.5% floor there" in overfit.decision.reason
    assert "does not generalize" in overfit.decision.reason
    assert overfit.decision.holdout.pairs == 6
    assert overfit.decision.holdout.confidence == pytest.approx(1 - 0.05 / 3)
    assert honest.status == "keep", (honest.status, honest.error)
    assert honest.decision.holdout.verdict == "win"
    assert honest.decision.holdout.change_pct < -30
    assert honest.decision.holdout.pairs == 6
    report = run_cli("report", cwd=target.root)
    assert "% on the holdout" in report.stdout, report.stdout
    page = run_cli("report", "--html", str(tmp_path / "page.html"), cwd=target.root)
    assert page.returncode == 0, page.stderr
    assert "time_ms (hidden holdout)" in (tmp_path / "page.html").read_text()
    assert any("holdout-candidate-" in log for log in honest.bench_logs)


@pytest.mark.e2e
def test_on_bench_hosts_too_a_tuned_change_is_not_kept_and_the_confirmation_holds_both(
    target, tmp_path
):
    """A host runs the holdout after its bench decided a keep, and the driver, which replays
    the rule on the host's samples, replays the holdout's verdict too: a change fast only for
    the bench's seed is discarded as it is serially; the honest win is kept with the holdout's
    evidence, and the confirmation on a host measures the holdout as well."""
    settings = {"min_runs": 3, "max_runs": 3, "looks": 1, "confirm": "true"}
    env = sleepy(target, tmp_path, sleep_s=0.05)  # its knobs, a bench whose runs sleep
    with_holdout(target, tmp_path, settings=settings.items())
    target.add_hypothesis("01-overfit", {"src/fast_for.txt": "bench\n"})
    target.add_hypothesis("02-honest", {"src/value.txt": "60\n"})

    with local_cluster(tmp_path, workers=1) as local:
        drive(target, local.scheduler_address, env, confirm=True)

    overfit, honest = experiments(target)
    assert overfit.cluster and honest.cluster  # measured on the host, as it ran them:
    assert honest.confinement.tool == "none" and "sandbox" in honest.confinement.why
    assert overfit.status == "discard", (overfit.status, overfit.error)
    assert overfit.decision.rule == "holdout" and overfit.decision.holdout.verdict == "no_gain"
    assert overfit.kept_commit is None
    assert honest.status == "keep" and honest.decision.holdout.verdict == "win"
    assert honest.decision.holdout.pairs == 6 and honest.decision.holdout.duration_s > 0
    assert any("holdout-candidate-" in log for log in honest.bench_logs)
    (confirmation,) = read_journal(target.journal).confirmations
    assert confirmation.host and confirmation.holdout.change_pct < -30
    assert len(confirmation.holdout.tip_samples) == confirmation.runs_per_arm


@pytest.mark.e2e
def test_a_change_fast_only_for_the_bench_s_inputs_is_refused_by_default(target, tmp_path):
    """Without require_win: a change the holdout shows to gain less than the floor there (fast
    only for the bench's seed) does not generalize; an honest win beside it stands."""
    with_holdout(target, tmp_path)
    target.add_hypothesis("01-overfit", {"src/fast_for.txt": "bench\n"})
    target.add_hypothesis("02-honest", {"src/value.txt": "60\n"})

    run(target)

    overfit, honest = experiments(target)
    assert overfit.status == "discard" and overfit.decision.holdout.verdict == "no_gain"
    assert honest.status == "keep" and honest.decision.holdout.verdict == "win"


@pytest.mark.e2e
def test_an_undecided_holdout_runs_more_pairs_and_a_small_real_win_stands(target, tmp_path):
    """A -3% win everywhere, the holdout's runs noisy (a fixed sequence of noise factors, +-10%):
    after 6 pairs neither a win nor a gain short of the floor is shown, so 6 more run, twice;
    still undecided at the last look, the keep stands (no require_win), with 18 pairs."""
    counter = tmp_path / "holdout-runs"
    factors = "1.0,1.10,0.95,1.05,0.90,1.0"
    with_holdout(target, tmp_path, noise=f"BENCH_FACTORS={factors} BENCH_COUNTER={counter}")
    target.add_hypothesis("01-small", {"src/value.txt": "97\n"})

    run(target)

    (record,) = experiments(target)
    assert record.status == "keep", (record.status, record.error)
    held = record.decision.holdout
    assert (held.verdict, held.pairs) == ("no_win", 18), held
    assert held.ci_low_pct < -1 < held.ci_high_pct


@pytest.mark.e2e
def test_the_confirmation_measures_the_holdout_too_and_the_report_says_both(target, tmp_path):
    with_holdout(target, tmp_path)
    config = target.config_path
    config.write_text(config.read_text().replace("confirm = false", "confirm = true"))
    git(target.root, "commit", "-qam", "confirm")
    target.add_hypothesis("01-honest", {"src/value.txt": "60\n"})

    run(target)

    (confirmation,) = read_journal(target.journal).confirmations
    assert confirmation.holdout.change_pct < -30
    assert len(confirmation.holdout.tip_samples) == confirmation.runs_per_arm
    report = run_cli("report", cwd=target.root)
    assert report.returncode == 0, report.stderr
    assert "on the hidden holdout" in report.stdout
    page = run_cli("report", "--html", str(tmp_path / "page.html"), cwd=target.root)
    assert page.returncode == 0, page.stderr
    assert 'id="confirmed-holdout"' in (tmp_path / "page.html").read_text()
    pr = run_cli("pr", cwd=target.root)
    assert "on the hidden holdout workload" in pr.stdout, pr.stdout


def test_a_change_slower_on_the_holdout_is_not_kept_without_require_win(target, tmp_path):
    """Fast for the bench's seed, twice as slow on any other (the default: no loss beyond
    the budget): refused as worse on the holdout."""
    with_holdout(target, tmp_path)
    target.add_hypothesis("01-trade", {"src/fast_for.txt": "bench\n", "src/value.txt": "150\n"})

    run(target)

    (record,) = experiments(target)
    # 150 * 0.5 on the bench (a win), 150 on the holdout (worse): refused.
    assert record.status == "discard", (record.status, record.error)
    assert record.decision.holdout.verdict == "worse"
    assert record.decision.holdout.pairs == 6  # without require_win: one look


@needs_bwrap
def test_a_confined_candidate_cannot_read_the_holdout(target, tmp_path):
    """The candidate's bench runs do not see the holdout's files (its own runs do: the
    holdout ran): reading them to tune itself fails inside the sandbox."""
    held = with_holdout(target, tmp_path, sandbox="bwrap")
    target.add_hypothesis("01-peek", {"src/mode.txt": "peek\n"})

    run(target, env={"BENCH_PEEK": str(held / "secret.txt")})

    (record,) = experiments(target)
    assert record.status == "discard", (record.status, record.error)
    assert record.decision.holdout is None  # no win on the bench: the holdout never ran


@pytest.mark.e2e
@needs_bwrap
def test_a_checkout_outside_tmp_holds_the_holdout_for_its_own_runs_alone(tmp_path):
    """Your checkout where it usually is, not under /tmp (whose private copy hides it whole):
    the sandbox covers it for every run, the holdout's files in it (ignored, as `python
    loop.py` makes them) shown to the holdout's own runs alone. A candidate that reads them is
    not helped; an honest win is kept with the holdout's evidence."""
    place = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="autoresearch-checkout-"))
    try:
        target = make_target(place / "repo")
        held = with_holdout(target, tmp_path, sandbox="bwrap", require_win="true")
        target.add_hypothesis("01-peek", {"src/mode.txt": "peek\n"})
        target.add_hypothesis("02-honest", {"src/value.txt": "60\n"})

        run(target, env={"BENCH_PEEK": str(held / "secret.txt")})

        peek, honest = experiments(target)
        assert peek.status == "discard", (peek.status, peek.error)
        assert peek.decision.holdout is None  # no win on the bench: the holdout never ran
        assert honest.status == "keep", (honest.status, honest.error)
        assert honest.decision.holdout.verdict == "win"
        assert honest.confinement.tool == "bwrap"
    finally:
        shutil.rmtree(place)


@needs_bwrap
def test_a_confined_agent_cannot_read_the_holdout(target, tmp_path):
    held = with_holdout(target, tmp_path, sandbox="bwrap")
    scratch = tmp_path / "scratch"
    git(target.root, "worktree", "add", "-q", "--detach", str(scratch))
    sandbox = agent_sandbox(target.load(), scratch, [])
    assert sandbox is not None
    log = tmp_path / "agent.log"

    done = LocalRunner(sandbox=sandbox).run(
        f"cat {held / 'secret.txt'}; ls -A {held}", cwd=scratch, env={}, log_path=log,
        timeout_s=60,
    )  # fmt: skip

    assert done.exit_code == 0, log.read_text()
    assert "secret inputs" not in log.read_text()
    assert "run.sh" not in log.read_text()
    assert "No such file or directory" in log.read_text()


@pytest.mark.e2e
@needs_bwrap
def test_a_confined_agent_cannot_read_the_holdout_s_logs(target, tmp_path):
    """After a keep the holdout ran: its logs (its METRIC lines) sit in the session's state,
    in the repository the agent reads. A confined agent reads none of them."""
    with_holdout(target, tmp_path, sandbox="bwrap")
    target.add_hypothesis("01-win", {"src/value.txt": "60\n"})
    run(target)
    logs = session_paths(target.load()).logs
    held = [p for p in logs.rglob("*.log") if "holdout" in p.name]
    assert held and "METRIC" in held[0].read_text()  # there, to the loop
    scratch = tmp_path / "scratch"
    git(target.root, "worktree", "add", "-q", "--detach", str(scratch))
    sandbox = agent_sandbox(target.load(), scratch, [], logs=logs)
    assert sandbox is not None
    log = tmp_path / "agent.log"

    done = LocalRunner(sandbox=sandbox).run(
        f"cat {held[0]}; ls -A {logs}", cwd=scratch, env={}, log_path=log, timeout_s=60
    )

    said = log.read_text()
    assert done.exit_code == 0, said
    assert "METRIC" not in said and "No such file or directory" in said
    assert held[0].parent.name not in said.splitlines()  # nothing listed: an empty directory


@pytest.mark.e2e
@needs_bwrap
def test_a_confined_agent_cannot_read_the_holdout_s_figures_in_the_journal(target, tmp_path):
    """The journal (in your checkout) holds each keep's holdout samples and verdict: a confined
    agent reading it, or what is derived from it, finds nothing there."""
    with_holdout(target, tmp_path, sandbox="bwrap")
    target.add_hypothesis("01-win", {"src/value.txt": "60\n"})
    run(target)
    assert "holdout" in target.journal.read_text()  # there, to the loop and to you
    scratch = tmp_path / "scratch"
    git(target.root, "worktree", "add", "-q", "--detach", str(scratch))
    sandbox = agent_sandbox(target.load(), scratch, [], logs=session_paths(target.load()).logs)
    assert sandbox is not None
    log = tmp_path / "agent.log"
    near = " ".join(str(p) for p in target.journal.parent.glob(f".{target.journal.name}*"))

    done = LocalRunner(sandbox=sandbox).run(
        f"cat {target.journal} {near}; ls -A {target.journal.parent}", cwd=scratch, env={},
        log_path=log, timeout_s=60,
    )  # fmt: skip

    said = log.read_text()
    assert done.exit_code == 0, said
    assert "holdout" not in said.replace(".holdout", ""), said[:2000]


def test_a_holdout_the_repository_tracks_is_refused_before_the_night(target):
    """In the tree, the agent and every candidate would see it: the pre-flight says so."""
    (target.root / "held").mkdir()
    (target.root / "held" / "run.sh").write_text("#!/bin/sh\nexec ./bench.py\n")
    config = target.configure()
    config.write_text(
        config.read_text() + '[holdout]\ncommand = "sh held/run.sh"\nfiles = ["held"]\n'
    )
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "a tracked holdout")
    target.add_hypothesis("01-win", {"src/value.txt": "60\n"})

    with pytest.raises(UserError, match="held is in the repository's tree"):
        run(target)

    assert not target.journal.exists() or experiments(target) == []


def with_equivalence(target, files: str = "") -> None:
    config = target.configure()
    text = '[equivalence]\ncommand = "cat src/answer.txt"\n'
    if files:
        text = f'[equivalence]\ncommand = "cp src/answer.txt out.txt"\nfiles = ["{files}"]\n'
    config.write_text(config.read_text() + text)
    (target.root / "src" / "answer.txt").write_text("grant 1\ngrant 2\ngrant 3\n")
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "an equivalence check")


def test_a_faster_change_that_says_something_else_fails_the_equivalence(target):
    with_equivalence(target)
    target.add_hypothesis(
        "01-drops", {"src/value.txt": "50\n", "src/answer.txt": "grant 1\ngrant 3\n"}
    )
    target.add_hypothesis("02-same", {"src/value.txt": "60\n"})

    run(target)

    drops, same = experiments(target)
    assert drops.status == "checks_failed", (drops.status, drops.error)
    assert "differs from the best's from line 2" in drops.error
    assert "-grant 2" in drops.error
    assert same.status == "keep", (same.status, same.error)


def test_an_equivalence_file_linked_to_the_best_s_is_not_read(target):
    """The candidate's output file a link to a file that says what the best says: refused,
    not compared equal."""
    with_equivalence(target, files="out.txt")
    config = target.config_path
    config.write_text(config.read_text().replace("cp src/answer.txt out.txt", "sh src/emit.sh"))
    (target.root / "src" / "emit.sh").write_text("cp src/answer.txt out.txt\n")
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "the output made by the code")
    target.add_hypothesis(
        "01-link",
        {
            "src/value.txt": "60\n",
            "src/answer.txt": "wrong\n",
            "src/right.txt": "grant 1\ngrant 2\ngrant 3\n",
            "src/emit.sh": "ln -sf src/right.txt out.txt\n",
        },
    )

    run(target)

    (record,) = experiments(target)
    assert record.status == "checks_failed", (record.status, record.error)
    assert "a symbolic link" in record.error


def test_the_agent_s_prompt_says_a_holdout_judges_without_saying_what_it_holds(target, tmp_path):
    """Told that a hidden holdout and an equivalence check judge its change; a discard by the
    holdout shown without the holdout's numbers or metric."""
    with_holdout(target, tmp_path, require_win="true", metric='"time_ms"')
    config = target.config_path
    config.write_text(config.read_text() + '[equivalence]\ncommand = "cat src/value.txt"\n')
    git(target.root, "commit", "-qam", "equivalence")
    target.add_hypothesis("01-overfit", {"src/fast_for.txt": "bench\n"})
    run(target)
    # ideas.md's journal section, which the prompt carries whole, written as you would.
    assert run_cli("ideas", cwd=target.root).returncode == 0
    assert "did not bear out" in target.load().ideas_path.read_text()

    records = experiments(target)
    assert records[0].decision.rule == "holdout"
    context = ProposalContext(
        tried=set(), records=records, tip="0" * 40, worktree=target.root, metric="time_ms",
        direction=Direction.LOWER,
    )  # fmt: skip
    prompt = render_prompt(
        context, target.load(), recent=10, budget_chars=50_000, pivot=None,
        hypothesis_path=tmp_path / "h.patch", max_patch_kib=64,
    )  # fmt: skip
    assert "hidden holdout workload, which you cannot see or run" in prompt
    assert "Output equivalence (`cat src/value.txt`)" in prompt
    assert "did not bear out" in prompt
    assert "held-out-7" not in prompt and "holdout time_ms" not in prompt
    # `history` (and MCP's history and report) say the same, without the holdout's figures.
    shown = run_cli("history", "--json", cwd=target.root)
    assert shown.returncode == 0, shown.stderr
    assert "did not bear out" in shown.stdout and "holdout time_ms" not in shown.stdout
    reviewed = load_history(target.journal, "t")
    assert "holdout time_ms" not in render_text(without_holdout_figures(summarize(reviewed)))


def test_init_offers_both_and_they_load_uncommented(tmp_path):
    repo = tmp_path / "mine"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    assert run_cli("init", "--metric", "wall_ms", cwd=repo).returncode == 0
    config = repo / "autoresearch.toml"
    lines = config.read_text().splitlines()
    start = lines.index("# [equivalence]")
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("# require_win"))
    for i in range(start, end + 1):  # the TOML in the comments, not the prose around it
        if re.match(r"# (\[|\w+ = )", lines[i]):
            lines[i] = lines[i].removeprefix("# ")
    config.write_text("\n".join(lines) + "\n")

    loaded = load_config(config)

    assert loaded.equivalence.command.endswith("| sha256sum")
    assert loaded.holdout.command == "$AUTORESEARCH_HOLDOUT/run.sh"
    assert loaded.holdout_files == [Path.home() / "holdout" / "main"]


@pytest.mark.e2e
@needs_bwrap
def test_a_confined_stand_in_agent_that_reads_the_holdout_finds_nothing(target, tmp_path):
    """The agent CLI tries to read the holdout and writes what it found into its change: the
    kept record's patch says it found nothing (the file is hidden in the agent's sandbox)."""
    from test_agent import edit, use_agent
    from test_sandbox import confine

    held = with_holdout(target, tmp_path)
    io = tmp_path / "agent-io"
    io.mkdir()
    standin = io / "standin_agent.py"
    shutil.copy(Path(__file__).with_name("standin_agent.py"), standin)
    peek = f"""
import pathlib
try:
    found = "read: " + pathlib.Path({str(held / "secret.txt")!r}).read_text()
except OSError as exc:
    found = "failed: " + exc.strerror
pathlib.Path("src/peek.txt").write_text(found + "\\n")
"""
    use_agent(target, io, [edit("60\n", "a win", run=peek)], command=f"{sys.executable} {standin}")
    confine(target, writable=f'["{io}"]')

    run(target)

    (record,) = experiments(target)
    assert record.status == "keep", (record.status, record.error)
    assert record.agent.confinement["tool"] == "bwrap"
    shown = git(target.root, "show", f"{record.kept_commit}:src/peek.txt")
    assert shown == "failed: No such file or directory\n"
