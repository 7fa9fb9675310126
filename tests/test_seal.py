"""Where confinement cannot reach (these targets run unconfined: `[sandbox] mode = "off"`): a
candidate that changes the repository, your checkout or the journal is `tampered`, never kept,
and what it changed is put back."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import eventually, experiments, git, run, spawn_loop
from test_sandbox import confine

from autoresearch.journal.store import read_journal
from autoresearch.repo.state_dir import session_paths

# what the candidate's bench does -> what the record says
CASES = {
    "hook": "hooks/pre-commit was added",
    "fsmonitor": "config was changed",
    "hookspath": "config was changed",
    "email": "config was changed",
    "exclude": "info/exclude was changed",
    "branch": "your checkout was switched from main to elsewhere",
    "untracked": "untracked files appeared in your checkout: dropped.txt",
    "replace": "ref refs/replace/",
    "journal-forge": "was appended to",
    "journal-wipe": "was emptied",
}


def repository_state(root: Path) -> dict:
    """What the user would check the next morning: the git directory's files, refs, branch,
    untracked files, the journal's bytes."""
    common = root / ".git"
    files = {}
    for rel in (
        "config",
        "info/exclude",
        *(f"hooks/{p.name}" for p in (common / "hooks").iterdir()),
    ):
        path = common / rel
        files[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None
    refs = git(root, "for-each-ref", "--format=%(refname) %(objectname)")
    return {
        "files": files,
        "refs": "\n".join(r for r in refs.splitlines() if "autoresearch/" not in r),
        "branch": git(root, "symbolic-ref", "HEAD"),
        "status": git(root, "status", "--porcelain", "--untracked-files=all"),
    }


@pytest.mark.parametrize("what", list(CASES))
def test_a_candidate_that_changes_the_repository_is_tampered_and_put_back(target, what):
    # A real 20% win besides: without the seal, each of these would be kept.
    target.add_hypothesis(
        "01-tamper", {"src/mode.txt": f"tamper-{what}\n", "src/value.txt": "80\n"}
    )
    target.add_hypothesis("02-win", {"src/value.txt": "80\n"})
    target.load()  # the session is opened by the run; the state the user had before it:
    before = repository_state(target.root)

    run(target)

    first, second = experiments(target)
    assert first.status == "tampered", (first.status, first.error)
    assert CASES[what] in first.error, first.error
    assert "NOT put back" not in first.error
    assert first.kept_commit is None
    after = repository_state(target.root)
    if what == "untracked":  # named, never deleted from your checkout
        assert (target.root / "dropped.txt").exists()
        (target.root / "dropped.txt").unlink()
        after = repository_state(target.root)
    assert after == {**before, "status": after["status"]}
    assert after["status"] == before["status"] or what == "untracked"
    assert not (target.root / "fsmonitor-ran").exists()  # never ran inside the loop's git
    # The journal holds what the loop wrote, nothing forged or lost; the next one was measured.
    journal = read_journal(target.journal)
    assert [r.status for r in journal.experiments] == ["tampered", second.status]
    assert not journal.warnings
    assert second.status == "keep"
    assert target.branch_log() == ["02-win", "synthetic target"]


def test_a_stash_taken_from_your_checkout_is_popped_back(target):
    (target.root / "README").write_text("your uncommitted work\n")
    target.add_hypothesis("01-tamper", {"src/mode.txt": "tamper-stash\n", "src/value.txt": "80\n"})

    run(target)

    (record,) = experiments(target)
    assert record.status == "tampered"
    assert "NOT put back" not in record.error
    assert (target.root / "README").read_text() == "your uncommitted work\n"
    assert git(target.root, "stash", "list") == ""


def test_an_untracked_file_written_into_the_baseline_never_gets_a_loss_kept(target):
    """The candidate is 10% slower and writes `200` where the baseline's bench reads it: the
    best would measure at 200 and the loss would look like a 45% win."""
    target.add_hypothesis(
        "01-loss", {"src/mode.txt": "tamper-baseline-untracked\n", "src/value.txt": "110\n"}
    )
    target.add_hypothesis("02-win", {"src/value.txt": "80\n"})

    run(target)

    first, second = experiments(target)
    assert first.status == "tampered", (first.status, first.error)
    assert "the baseline worktree was written to during the candidate's run" in first.error
    paths = session_paths(target.load())
    assert not (paths.baseline / "src" / "override.txt").exists()
    assert second.status == "keep"
    assert second.decision.metrics["time_ms"].baseline_median == pytest.approx(100)


@pytest.mark.e2e
def test_another_session_writing_beside_the_run_is_not_tampering(target):
    """Sessions share the journal and the repository: another one's record and its branch,
    appearing while this session's candidate runs, are neither flagged nor taken back."""
    target.add_hypothesis(
        "01-win", {"src/mode.txt": "tamper-other-session\n", "src/value.txt": "80\n"}
    )

    run(target)

    (record,) = experiments(target)
    assert record.status == "keep", record.error
    journal = read_journal(target.journal)
    assert sorted({r.session for r in journal.sessions}) == ["other", "t"]
    assert git(target.root, "rev-parse", "--verify", "-q", "autoresearch/other").strip()


def test_refs_rewritten_in_place_are_seen_without_asking_git_after_every_run(tmp_path):
    from autoresearch.repo.gitrepo import Repo
    from autoresearch.repo.seal import RepoSeal

    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "f.txt").write_text("1\n")
    git(root, "add", "f.txt")
    git(root, "commit", "-q", "-m", "one")
    first = git(root, "rev-parse", "HEAD").strip()
    git(root, "commit", "-q", "--allow-empty", "-m", "two")
    git(root, "tag", "packed", first)
    git(root, "pack-refs", "--all")
    git(root, "branch", "loose", first)
    seal = RepoSeal(Repo(root), tmp_path / "journal.jsonl")
    asked = []
    run_git = seal.checkout.run
    seal.checkout.run = lambda *args, **kw: asked.append(args[0]) or run_git(*args, **kw)
    assert seal.changes(checkout=False) == [] and seal.changes(checkout=False) == []
    assert "for-each-ref" not in asked  # nothing where refs live changed since the seal

    # The same bytes count, the file's times put back: its change time still moves.
    second = git(root, "rev-parse", "HEAD").strip()
    for path in (root / ".git/refs/heads/loose", root / ".git/packed-refs"):
        was = path.stat()
        path.write_text(path.read_text().replace(first, second))
        os.utime(path, ns=(was.st_atime_ns, was.st_mtime_ns))
    found = seal.changes(checkout=False)
    assert "ref refs/heads/loose was moved" in found and "ref refs/tags/packed was moved" in found
    assert seal.restore() == [] and seal.changes(checkout=False) == []

    # A link where refs live: what it points at could change unseen, so git is asked each time.
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (root / ".git/refs/links").symlink_to(outside)
    asked.clear()
    seal.changes(checkout=False), seal.changes(checkout=False)
    assert asked.count("for-each-ref") == 2


# -- what is yours, not the candidate's --------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.parametrize("how", ["redirect", "tee"])
@pytest.mark.parametrize("mode", ["off", "auto"])
def test_the_loops_own_log_in_your_checkout_is_not_tampering(target, how, mode):
    """`autoresearch run > night.log 2>&1` (or `| tee night.log`) from the checkout's top, the
    log not ignored: the loop's own lines grow an untracked file of your checkout while the
    candidate runs. That is the loop's writing, not the candidate's: the win is kept."""
    if mode != "off":
        confine(target, mode)
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    command = f"{shlex.quote(sys.executable)} -m autoresearch.cli run"
    shell = (
        f"{command} > night.log 2>&1" if how == "redirect" else f"{command} 2>&1 | tee night.log"
    )

    done = subprocess.run(
        ["bash", "-c", shell],
        cwd=target.root,
        start_new_session=True,
        timeout=300,
        stdout=subprocess.DEVNULL,
    )

    log = (target.root / "night.log").read_text()
    assert done.returncode == 0, log
    (record,) = experiments(target)
    assert record.status == "keep", record.error
    assert "keep" in log


@pytest.mark.e2e
def test_what_you_do_in_your_checkout_during_a_confined_night_is_yours(target, tmp_path):
    """Confined, a candidate cannot write your checkout or the repository at all: a file you
    write there and a commit you make on your branch while it is measured are yours. The win
    is kept, and your commit stays where you put it."""
    confine(target)
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    paths = session_paths(target.load())
    loop = spawn_loop(target, {"BENCH_SLEEP_S": "0.3"})
    try:
        eventually(lambda: _phase(paths.inflight) == "bench", what="the candidate's bench")
        (target.root / "notes.txt").write_text("my notes\n")
        (target.root / "README").write_text("edited by hand\n")
        git(target.root, "commit", "-qam", "my own commit")
        mine = git(target.root, "rev-parse", "HEAD").strip()
        _, err = loop.communicate(timeout=300)
    finally:
        loop.kill()
        loop.wait()

    assert loop.returncode == 0, err
    (record,) = experiments(target)
    assert record.status == "keep", record.error
    assert git(target.root, "rev-parse", "main").strip() == mine
    assert (target.root / "notes.txt").read_text() == "my notes\n"


def _phase(marker: Path) -> str | None:
    try:
        return json.loads(marker.read_text()).get("phase")
    except (OSError, ValueError):
        return None


@pytest.mark.e2e
@pytest.mark.parametrize("mode", ["off", "auto"])
def test_a_worktree_s_git_file_pointed_at_your_repository_moves_nothing_of_yours(target, mode):
    """The candidate's bench rewrites its tree's `.git` to `gitdir: <your repository>/.git`:
    a git call that found its repository through that file would reset, clean and check out
    your checkout. The loop's git calls name their repository themselves: your branch, your
    staged work and your files stay exactly as they were, and the change is never kept."""
    if mode != "off":
        confine(target, mode)
    target.add_hypothesis(
        "01-redirect", {"src/value.txt": "80\n", "src/mode.txt": "tamper-gitdir\n"}
    )
    target.add_hypothesis("02-win", {"src/speedup-b.txt": "0.8\n"})
    (target.root / "README").write_text("staged work of yours\n")
    git(target.root, "add", "README")
    (target.root / "notes.txt").write_text("untracked work of yours\n")
    before = _yours(target)

    run(target)

    assert _yours(target) == before
    statuses = [r.status for r in experiments(target)]
    assert statuses[0] != "keep" and statuses[-1] == "keep", statuses
    worktree = session_paths(target.load()).worktree
    assert (worktree / ".git").read_text().startswith("gitdir: ")
    assert git(worktree, "rev-parse", "--git-common-dir").strip() != ".git"


def _yours(target) -> tuple:
    """What you would look at: HEAD and its branch, the index's contents, your files."""
    status = git(target.root, "status", "--porcelain", "--untracked-files=all").splitlines()
    return (
        git(target.root, "symbolic-ref", "HEAD"),
        git(target.root, "rev-parse", "HEAD"),
        git(target.root, "diff", "--cached"),
        status,
        (target.root / "README").read_text(),
        (target.root / "notes.txt").read_text(),
    )


def test_an_earlier_record_edited_far_back_in_the_journal_is_caught_and_put_back(target):
    """Unconfined, a candidate rewrites an earlier record's verdict (`discard` to `keep`, the
    same length, kilobytes before the journal's end, where the tail's hash does not reach):
    the edit is tampering, and the journal is put back byte for byte."""
    target.add_hypothesis("01-loss", {"src/value.txt": "150\n"})
    for n in range(2, 5):  # records after it: the edit lies well before the hashed tail
        target.add_hypothesis(f"0{n}-same", {"src/sentinel.txt": f"{50 + n / 10}\n"})
    run(target)
    before = target.journal.read_bytes()
    assert len(before) > 8 * 1024 and b'"status": "discard"' in before
    target.add_hypothesis(
        "05-edit", {"src/value.txt": "80\n", "src/mode.txt": "tamper-journal-edit\n"}
    )

    run(target)

    records = experiments(target)
    assert records[-1].status == "tampered", records[-1].error
    assert "the journal" in records[-1].error and "rewritten" in records[-1].error
    assert target.journal.read_bytes()[: len(before)] == before
    assert [r.status for r in records[:4]].count("keep") == 0


@pytest.mark.e2e
@pytest.mark.parametrize("sandbox", ["off", "auto"])
def test_a_filter_your_git_config_defines_never_runs_on_a_candidate_s_tree(
    target, tmp_path, monkeypatch, sandbox
):
    """The candidate's build writes a .gitattributes that selects a filter and a diff driver
    your global git config defines: the loop's own git calls in its tree (the guard's diff, the
    keep's add) would run them outside the sandbox. They run nowhere; the experiment goes on."""
    ran = tmp_path / "driver-ran"
    config = tmp_path / "gitconfig"
    config.write_text(
        '[filter "evil"]\n'
        f"\tclean = touch {ran}; cat\n\tsmudge = cat\n\tprocess = touch {ran}\n\trequired\n"
        '[diff "evil"]\n'
        f"\ttextconv = touch {ran}; cat\n\tcommand = touch {ran}\n"
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    target.configure(build="./build.py", sandbox=sandbox)
    git(target.root, "commit", "-qam", "a build")
    target.add_hypothesis(
        "01-win", {"src/value.txt": "80\n", "src/mode.txt": "tamper-attributes@build\n"}
    )

    run(target)

    assert not ran.exists()
    (record,) = experiments(target)
    assert record.status in ("keep", "tampered"), (record.status, record.error)
