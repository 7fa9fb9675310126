"""What a careless user, a misbehaving agent or a hostile candidate hands the loop: each is a
record or a one-line answer, and the night goes on."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import (
    experiments,
    git,
    loud_losses_past_a_small_log_budget,
    run,
    run_cli,
    unified_patch,
)
from test_agent import edit, use_agent

from autoresearch.agents.tries import TRY_ENV
from autoresearch.bench.proc import process_started
from autoresearch.proposers.base import MAX_TITLE_CHARS
from autoresearch.repo.state_dir import session_paths


def test_queue_entries_that_are_not_bounded_regular_files_are_refused_unread(target):
    queue = target.queue
    os.mkfifo(queue / "01-fifo.patch")  # opening it to read would wait for a writer forever
    (queue / "02-zero.patch").symlink_to("/dev/zero")  # reading it would fill the memory
    with open(queue / "03-huge.patch", "wb") as handle:  # sparse: 65 MB on paper only
        handle.truncate(65 * 1024 * 1024)
    (queue / "04-dir.patch").mkdir()
    target.add_hypothesis("05-win", {"src/value.txt": "80\n"})

    run(target)

    records = experiments(target)
    assert [r.status for r in records] == ["apply_failed"] * 4 + ["keep"]
    errors = [r.error for r in records[:4]]
    assert "not a regular file (a FIFO); not read" in errors[0]
    assert "not a regular file (a character device); not read" in errors[1]
    assert "68,157,440 bytes, more than the 67,108,864 a patch file may have" in errors[2]
    assert "not a regular file (a directory)" in errors[3]


def test_a_nul_byte_in_a_text_hunk_is_binary_content(target):
    patch = unified_patch("src/value.txt", "100\n", "80\n").replace("+80", "+8\0" + "0")
    (target.queue / "01-nul.patch").write_text("Title: a NUL byte\n\n" + patch)

    run(target)

    (record,) = experiments(target)
    assert record.status == "scope_violation"
    assert record.error == "the patch carries binary content"


def run_twice(target) -> None:
    """A night, then a second run as a user would resume it: both end cleanly (exit 0)."""
    for _ in range(2):
        done = run_cli("run", cwd=target.root)
        assert done.returncode == 0, done.stderr


def test_a_gitlink_in_a_patch_is_refused_unmeasured_and_the_night_goes_on(target):
    """A gitlink (mode 160000, a submodule's entry) applies as an empty directory and cannot
    be committed: refused by the patch checks, beside a real win, before any bench time."""
    tip = git(target.root, "rev-parse", "HEAD").strip()
    gitlink = (
        "diff --git a/src/sub b/src/sub\nnew file mode 160000\n"
        f"index 0000000..{tip}\n--- /dev/null\n+++ b/src/sub\n@@ -0,0 +1 @@\n"
        f"+Subproject commit {tip}\n"
    )
    win = unified_patch("src/value.txt", "100\n", "80\n")
    (target.queue / "01-gitlink.patch").write_text("Title: a win and a gitlink\n\n" + win + gitlink)
    target.add_hypothesis("02-win", {"src/value.txt": "70\n"})

    run_twice(target)

    first, second = experiments(target)
    assert first.status == "scope_violation" and "gitlink" in first.error, first.error
    assert not first.bench_logs
    assert second.status == "keep"


@pytest.mark.e2e
def test_a_change_its_run_made_uncommittable_is_a_failure_and_the_night_goes_on(target):
    """The candidate's build makes a repository of the directory its patch adds a file to
    (what its bench runs do there is undone after each run; its build's output stays): git's
    add skips the file, the keep's commit would fail on every run. That experiment is the
    failure, recorded once; the next hypothesis is kept and no resume replays it."""
    target.configure(build="./build.py")
    git(target.root, "commit", "-qam", "a build")
    target.add_hypothesis(
        "01-nest",
        {
            "src/nested/a.txt": "x\n",
            "src/value.txt": "80\n",
            "src/mode.txt": "tamper-nest@build\n",
        },
    )
    target.add_hypothesis("02-win", {"src/value.txt": "70\n"})

    run_twice(target)

    first, second = experiments(target)
    assert first.status == "apply_failed", (first.status, first.error)
    assert "src/nested/a.txt" in first.error and "cannot commit" in first.error, first.error
    assert second.status == "keep"
    assert target.branch_log()[0] == "02-win"
    assert git(session_paths(target.load()).worktree, "status", "--porcelain") == ""


def test_a_20_mb_title_is_cut_and_the_keep_commits(target):
    title = "faster " * (3 * 1024 * 1024)  # 21 MB on one header line
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"}, title=title)

    run(target)

    (record,) = experiments(target)
    assert record.status == "keep", record.error
    assert len(record.title) == MAX_TITLE_CHARS and record.title.endswith("…")
    assert target.branch_log()[0] == record.title
    assert git(session_paths(target.load()).worktree, "status", "--porcelain") == ""


@pytest.mark.e2e
def test_a_bench_that_prints_without_end_keeps_a_capped_log(target):
    text = target.config_path.read_text()
    target.config_path.write_text(
        text.replace("preflight = false", "preflight = false\nmax_run_log_mb = 1")
    )
    git(target.root, "commit", "-qam", "logs capped at 1 MB a run")
    target.add_hypothesis("01-loud-win", {"src/mode.txt": "loud\n", "src/value.txt": "80\n"})

    run(target, env={"BENCH_LOUD_MB": "5"})

    (record,) = experiments(target)
    assert record.status == "keep", record.error  # its METRIC line, printed last, was read
    log = Path(record.bench_logs[-1])
    assert log.stat().st_size < 1.1 * 1024 * 1024
    text = log.read_text()
    assert "bytes of output cut here" in text
    assert text.rstrip().splitlines()[-1].startswith("METRIC")


def test_a_clean_stop_after_a_failed_calibration_leaves_no_marker(target):
    """A best whose bench always fails: three calibrations in a row fail, and the night stops
    by itself (exit 3, the reason said), with no marker of a phase left behind."""
    git(target.root, "rm", "-q", "bench.py")
    (target.root / "bench.py").write_text("#!/bin/sh\nexit 3\n")
    os.chmod(target.root / "bench.py", 0o755)
    git(target.root, "add", "bench.py")
    git(target.root, "commit", "-qm", "a bench that fails")

    done = run_cli("run", cwd=target.root)

    assert done.returncode == 3, done.stderr
    assert "stopped: the best's bench failed 3 times in a row" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not session_paths(target.load()).inflight.exists()
    status = run_cli("status", cwd=target.root)
    assert "in flight" not in status.stdout and "died" not in status.stdout, status.stdout


def _try_files(target, name: str) -> Path:
    tries = session_paths(target.load()).root / "tries"
    tries.mkdir(parents=True, exist_ok=True)
    (tries / f"{name}.log").write_text("try: started\ntry: the last line it printed\n")
    return tries


@pytest.mark.parametrize(
    ("pid", "outcome", "expected"),
    [
        (None, None, "the last line it printed"),  # no pid file
        ("garbled", None, "the last line it printed"),
        ("-5", None, "the last line it printed"),
        ("1", "[1, 2, 3]", "its outcome file is not a try's outcome"),
        ("1", "{not json", "its outcome file is not JSON"),
        ("1", '{"exit_code": "x"}', "its outcome file is not a try's outcome"),
    ],
)
def test_result_answers_every_state_of_a_try_file(target, pid, outcome, expected):
    run_cli("status", cwd=target.root)  # the session's state directory exists
    name = "try-20260101T000000"
    tries = _try_files(target, name)
    if pid is not None:
        # pid 1 is alive but not the try's (its start time is not the one written): ended.
        (tries / f"{name}.pid").write_text(f"{pid} 1")
    if outcome is not None:
        (tries / f"{name}.json").write_text(outcome)

    done = run_cli("result", name, cwd=target.root, timeout=60)

    assert "Traceback" not in done.stderr, done.stderr
    answer = json.loads(done.stdout)
    assert answer["status"] == "error" and expected in answer["error"], answer
    assert answer["log"] == str(tries / f"{name}.log")  # where to read why
    assert done.returncode == 1


def test_result_is_not_fooled_by_a_reused_pid(target):
    """A try's pid file names its process by pid, start time and the try id it carries in its
    environment: a pid the system gave to another process since (another start time, or the
    same start time but not this try, as init's own pid 1 is) is a try that ended. A process
    whose environment reads as nothing, as a try's does while exec lays it out, is named by
    its start time: it runs on (with no start time to name it, it is not the try)."""
    name = "try-20260101T000001"
    tries = _try_files(target, name)
    env = {**os.environ, TRY_ENV: name}
    sleeper = subprocess.Popen(["sleep", "60"], env=env)
    stranger = subprocess.Popen(["sleep", "60"])
    # What a try in exec's first steps reads as: no environment yet, its own start time.
    unread = subprocess.Popen(["sleep", "60"], env={})
    answers = {}
    try:
        started = process_started(sleeper.pid)
        cases = {
            "alive": f"{sleeper.pid} {started}",
            "unread": f"{unread.pid} {process_started(unread.pid)}",
            "unread, no start time": f"{unread.pid}",
            "reused": f"{sleeper.pid} {started - 1}",  # the same pid, another start time
            "init": "1",  # no start time: pid 1 is alive, and not a try
            "stranger": f"{stranger.pid} {process_started(stranger.pid)}",
        }
        for case, text in cases.items():
            (tries / f"{name}.pid").write_text(text)
            answers[case] = json.loads(run_cli("result", name, cwd=target.root).stdout)
    finally:
        for proc in (sleeper, stranger, unread):
            proc.kill()
            proc.wait()
    assert answers["alive"]["status"] == answers["unread"]["status"] == "running"
    for case in ("reused", "init", "stranger", "unread, no start time"):
        assert answers[case]["status"] == "error", (case, answers[case])


def test_odd_try_ids_are_named(target):
    for odd in ("try-../x", "../../etc/passwd", "try-a b"):
        done = run_cli("result", odd, cwd=target.root)
        assert done.returncode == 1 and "is not a try id" in done.stderr, done.stderr


# -- a misbehaving agent ---------------------------------------------------------------------


def test_an_agent_that_breaks_its_scratch_tree_does_not_end_the_night(target, tmp_path):
    """It deletes its tree's .git, or writes garbage there: that proposal is an agent_failed
    record saying what it broke, the tree is made again, and the next proposal's win is
    kept. An agent that breaks it every time leaves a record each time, not a night of
    nothing."""
    garble = "import pathlib; pathlib.Path('.git').write_text('gitdir: /nowhere\\n')"
    # Pointed at your repository: the loop's own `git add` and `read-tree` there would have
    # replaced your index and moved your HEAD.
    redirect = f"import pathlib; pathlib.Path('.git').write_text('gitdir: {target.root}/.git')"
    use_agent(
        target,
        tmp_path,
        [
            edit("90\n", "breaks its tree", break_git=True),
            edit("85\n", "garbles its tree", run=garble),
            edit("84\n", "points its tree at yours", run=redirect),
            edit("80\n", "a real win"),
        ],
    )
    (target.root / "README").write_text("staged work of yours\n")
    git(target.root, "add", "README")
    yours = (git(target.root, "rev-parse", "HEAD"), git(target.root, "diff", "--cached"))

    done = run_cli("run", cwd=target.root, timeout=300)

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    records = experiments(target)
    assert [r.status for r in records] == ["agent_failed"] * 3 + ["keep"]
    assert "the agent broke its scratch tree" in records[0].error, records[0].error
    assert "its .git is gone" in records[0].error
    assert "the agent broke its scratch tree" in records[1].error, records[1].error
    assert f"rewritten to point at {target.root.resolve()}/.git" in records[2].error
    assert target.branch_log()[0] == "a real win"
    assert (git(target.root, "rev-parse", "HEAD"), git(target.root, "diff", "--cached")) == yours


def test_an_agent_that_always_breaks_its_scratch_tree_leaves_a_record_each_time(target, tmp_path):
    use_agent(target, tmp_path, [edit("90\n", "breaks its tree", break_git=True)] * 3)

    done = run_cli("run", cwd=target.root, timeout=300)

    assert done.returncode == 0, done.stderr
    assert [r.status for r in experiments(target)] == ["agent_failed"] * 3


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        ({"hypothesis_special": "fifo"}, "not a regular file (a FIFO)"),
        ({"hypothesis_special": "zero"}, "not a regular file (a character device)"),
    ],
)
def test_a_hypothesis_file_that_is_not_a_file_is_refused_unread(target, tmp_path, step, expected):
    use_agent(target, tmp_path, [edit("90\n", "odd file", **step), edit("80\n", "a real win")])

    done = run_cli("run", cwd=target.root, timeout=300)

    assert done.returncode == 0, done.stderr
    first, *_, last = experiments(target)
    assert first.status == "refused" and expected in first.error, first.error
    assert last.status == "keep"


def test_an_agent_reporting_infinite_tokens_and_a_huge_title(target, tmp_path):
    idea = {
        "title": "t" * 300_000,
        "hypothesis": "h" * 100_000,
        "family": "work",
        "input_tokens": 1e400,  # json.dumps writes Infinity; a hand-written 1e400 reads the same
        "output_tokens": -3,
        "cost_usd": 0.01,
    }
    step = edit("80\n", "x", hypothesis_text=json.dumps(idea).replace("Infinity", "1e400"))
    use_agent(target, tmp_path, [step])

    done = run_cli("run", cwd=target.root, timeout=300)

    assert done.returncode == 0, done.stderr
    (record,) = experiments(target)
    assert record.status == "keep", record.error
    assert len(record.title) == MAX_TITLE_CHARS
    assert len(record.asi.hypothesis) <= 4000
    usage = record.agent.usage
    assert usage.input_tokens is None and usage.output_tokens is None
    assert usage.cost_usd == 0.01


@pytest.mark.e2e
def test_a_session_s_logs_past_their_budget_are_pruned_between_experiments(target):
    loud_losses_past_a_small_log_budget(target, 3)

    done = run_cli("run", "--accept-noise", cwd=target.root, env={"BENCH_LOUD_MB": "1"})

    assert done.returncode == 0, done.stderr
    assert "the session's logs passed session.max_logs_mb = 1" in done.stderr
    assert [r.status for r in experiments(target)] == ["discard"] * 3
    logs = session_paths(target.load()).logs
    assert not (logs / "t-0001").exists() and (logs / "t-0003").exists()


def test_an_unconfined_agent_that_changes_the_repository_is_refused_and_put_back(target, tmp_path):
    reach = (
        "import pathlib, subprocess\n"
        "common = pathlib.Path(subprocess.run(['git', 'rev-parse', '--path-format=absolute',"
        " '--git-common-dir'], capture_output=True, text=True).stdout.strip())\n"
        "(common / 'hooks' / 'post-checkout').write_text('#!/bin/sh\\n')\n"
        "subprocess.run(['git', 'config', 'core.fsmonitor', 'touch /tmp/owned'])\n"
    )
    use_agent(target, tmp_path, [edit("90\n", "reaches", run=reach), edit("80\n", "honest")])
    config_before = (target.root / ".git" / "config").read_text()

    done = run_cli("run", cwd=target.root, timeout=300)

    assert done.returncode == 0, done.stderr
    first, second = experiments(target)
    assert first.status == "refused" and first.agent.refusal == "reach", first.error
    assert "hooks/post-checkout was added" in first.error and "(put back)" in first.error
    assert not (target.root / ".git" / "hooks" / "post-checkout").exists()
    assert (target.root / ".git" / "config").read_text() == config_before
    assert second.status == "keep"


def test_a_patch_an_unconfined_agent_drops_into_your_queue_is_removed_and_named(target, tmp_path):
    """The queue directory is yours (ignored by git, so no seal of the checkout sees it): a
    patch the agent writes there would be measured by the queue proposer as if you had
    queued it. It is removed, named in the refusal, and never measured."""
    planted = target.queue / "99-planted.patch"
    drop = f"import pathlib; pathlib.Path({str(planted)!r}).write_text('Title: planted\\n')"
    use_agent(target, tmp_path, [edit("90\n", "plants", run=drop), edit("80\n", "honest")])
    text = target.config_path.read_text()
    target.config_path.write_text(text + '\n[[proposer]]\nkind = "queue"\ndir = "hypotheses"\n')

    done = run_cli("run", cwd=target.root, timeout=300)

    assert done.returncode == 0, done.stderr
    records = experiments(target)
    assert [r.status for r in records] == ["refused", "keep"], [r.error for r in records]
    assert "99-planted.patch" in records[0].error and "removed" in records[0].error
    assert not planted.exists()


def test_an_agent_that_writes_into_the_measurement_trees_is_refused_and_they_are_scrubbed(
    target, tmp_path
):
    """Unconfined, an agent plants a file the baseline's bench reads (the best would measure
    slow) and an ignored one no revert of the tree removes: refused as a reach, both trees
    scrubbed, and the next proposal is measured against the best as it is."""
    paths = session_paths(target.load())
    plant = (
        "import pathlib\n"
        f"base = pathlib.Path({str(paths.baseline)!r})\n"
        "(base / 'src' / 'override.txt').write_text('200\\n')\n"
        "(base / 'hypotheses').mkdir(exist_ok=True)\n"
        "(base / 'hypotheses' / 'ignored.txt').write_text('kept by a plain revert')\n"
    )
    use_agent(target, tmp_path, [edit("90\n", "plants", run=plant), edit("80\n", "honest")])

    done = run_cli("run", cwd=target.root, timeout=300)

    assert done.returncode == 0, done.stderr
    first, second = experiments(target)
    assert first.status == "refused" and first.agent.refusal == "reach", first.error
    assert "measurement trees were written to" in first.error and "(put back)" in first.error
    assert second.status == "keep"
    assert second.evidence().baseline_median == 100.0
    assert not (paths.baseline / "src" / "override.txt").exists()
    assert not (paths.baseline / "hypotheses" / "ignored.txt").exists()


def test_terminal_control_characters_in_a_title_are_shown_inert(target):
    """A title that would set your terminal's title and clear its screen: written out as
    text in the record, the progress line and the report, never sent to the terminal."""
    title = "faster\x1b]0;pwned\x07\x1b[2J\x9b31m win"
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"}, title=title)

    done = run_cli("run", cwd=target.root)
    report = run_cli("report", cwd=target.root)

    assert done.returncode == 0, done.stderr
    (record,) = experiments(target)
    assert record.title == "faster\\x1b]0;pwned\\x07\\x1b[2J\\u009b31m win"
    for said in (done.stderr, done.stdout, report.stdout, report.stderr):
        assert "\x1b" not in said and "\x07" not in said and "\x9b" not in said
    assert "faster\\x1b]0;pwned" in done.stderr and "faster\\x1b]0;pwned" in report.stdout
