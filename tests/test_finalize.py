"""`autoresearch finalize`: a night's keeps as independent branches from its base."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest
from conftest import experiments, git, run, run_cli, unified_patch

from autoresearch.journal.store import read_journal
from autoresearch.repo.state_dir import session_paths


def _three_keeps(target) -> None:
    """Two wins in files of their own, and a third that builds on the first one's file."""
    for name in ("a", "b"):
        (target.root / "src" / f"speedup-{name}.txt").write_text("1.0\n")
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "two knobs")
    target.add_hypothesis("01-a", {"src/speedup-a.txt": "0.8\n"}, mechanism="less a")
    target.add_hypothesis("02-b", {"src/speedup-b.txt": "0.8\n"})
    (target.queue / "03-more-a.patch").write_text(
        "Title: 03-more-a\n\n" + unified_patch("src/speedup-a.txt", "0.8\n", "0.6\n")
    )
    run(target)
    assert [r.status for r in experiments(target)] == ["keep", "keep", "keep"]


def _show(target, rev: str, path: str) -> str | None:
    shown = git(target.root, "ls-tree", "--name-only", rev, "--", path)
    return git(target.root, "show", f"{rev}:{path}") if shown else None


@pytest.mark.e2e
def test_finalize_splits_the_keeps_that_share_no_file_and_their_union_is_the_tip(target):
    _three_keeps(target)
    head = git(target.root, "rev-parse", "HEAD").strip()
    base = git(target.root, "rev-parse", "main").strip()

    dry = run_cli("finalize", "--dry-run", cwd=target.root)
    assert dry.returncode == 0, dry.stderr
    assert "3 kept commits" in dry.stdout and "in 2 independent groups" in dry.stdout
    assert "together: they share src/speedup-a.txt" in dry.stdout
    assert "the branches together equal the session's tip: yes" in dry.stdout
    assert git(target.root, "branch", "--list", "autoresearch/t-*") == ""

    done = run_cli("finalize", cwd=target.root)
    assert done.returncode == 0, done.stderr
    assert "wrote 2 local branches; nothing pushed" in done.stdout
    listed = git(target.root, "branch", "--list", "--format=%(refname:short)", "autoresearch/t-*")
    first, second = listed.split()
    assert first == "autoresearch/t-01-01-a" and second == "autoresearch/t-02-02-b"
    # Each branch is cut from the base and carries only its own files, in the order kept.
    subjects = git(target.root, "log", "--reverse", "--format=%s", f"{base}..{first}")
    assert [s.split(":")[0] for s in subjects.splitlines()] == ["01-a", "03-more-a"], subjects
    assert len(git(target.root, "rev-list", f"{base}..{second}").split()) == 1
    assert _show(target, first, "src/speedup-a.txt").strip() == "0.6"
    assert _show(target, first, "src/speedup-b.txt").strip() == "1.0"
    assert _show(target, second, "src/speedup-b.txt").strip() == "0.8"
    assert _show(target, second, "src/speedup-a.txt").strip() == "1.0"
    # Merged, they are the session's tip; the user's checkout did not move.
    tip = git(target.root, "rev-parse", "autoresearch/t").strip()
    git(target.root, "checkout", "-q", "-b", "merged", first)
    git(target.root, "merge", "-q", "--no-edit", second)
    assert git(target.root, "diff", "--stat", "merged", tip) == ""
    git(target.root, "checkout", "-q", "main")
    assert git(target.root, "rev-parse", "HEAD").strip() == head

    # Again: the same content, nothing to refuse, and it says nothing changed. Other work under
    # the name is not overwritten.
    tips = git(target.root, "rev-parse", first, second)
    again = run_cli("finalize", cwd=target.root)
    assert again.returncode == 0, again.stderr
    assert "wrote" not in again.stdout
    assert "2 branches already held the same commits: unchanged" in again.stdout
    assert git(target.root, "rev-parse", first, second) == tips
    git(target.root, "branch", "-f", second, "main")
    refused = run_cli("finalize", cwd=target.root)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"error: branch {second} exists and holds other work: delete it, pick another "
        "--prefix, or pass --force to overwrite it"
    )
    assert (
        git(target.root, "rev-parse", second).strip()
        == git(target.root, "rev-parse", "main").strip()
    )
    assert run_cli("finalize", "--force", cwd=target.root).returncode == 0
    assert _show(target, second, "src/speedup-b.txt").strip() == "0.8"


def test_finalize_says_when_nothing_was_kept(target):
    target.add_hypothesis("01-loss", {"src/value.txt": "130\n"})
    run(target)
    done = run_cli("finalize", cwd=target.root)
    assert done.returncode == 1
    assert done.stderr.strip() == "error: session 't' kept nothing: its branch is at its base"


def test_finalize_confirms_each_branch_against_the_base(target):
    """Each branch's own headline: its tree measured side by side with the base, journaled as a
    confirmation of the branch's tip; the session's worktree is back at its tip afterwards."""
    _three_keeps(target)
    done = run_cli("finalize", "--confirm", "--runs", "3", cwd=target.root)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "autoresearch/t-01-01-a: -40.00% (95% CI -40.00% to -40.00%, 3 pairs" in "\n".join(lines)
    assert any(x.startswith("autoresearch/t-02-02-b: -20.00% ") for x in lines), lines
    confirmations = read_journal(target.journal).confirmations
    tips = git(target.root, "rev-parse", "autoresearch/t-01-01-a", "autoresearch/t-02-02-b")
    assert [c.tip_commit for c in confirmations] == tips.split()
    assert [round(c.change_pct, 6) for c in confirmations] == [-40.0, -20.0]
    assert [c.branch for c in confirmations] == ["autoresearch/t-01-01-a", "autoresearch/t-02-02-b"]
    # A branch's figure is not the session's headline.
    status = json.loads(run_cli("status", "--json", cwd=target.root).stdout)
    assert status["confirmation"] is None and status["change_pct"] == pytest.approx(-52.0)
    worktree = session_paths(target.load()).worktree
    assert git(worktree, "status", "--porcelain") == ""
    tip = git(target.root, "rev-parse", "autoresearch/t").strip()
    assert git(worktree, "rev-parse", "HEAD").strip() == tip
    # Each branch's pull request: its own confirmation in the title, its own keeps only.
    first = run_cli("pr", "--branch", "autoresearch/t-01-01-a", cwd=target.root)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("# perf: time_ms -40.0% (100 ms → 60 ms)\n")
    assert "| 1 | -20.0% | 01-a | less a |" in first.stdout and "03-more-a" in first.stdout
    assert "02-b" not in first.stdout and "src/speedup-b.txt" not in first.stdout
    second = run_cli("pr", "--branch", "autoresearch/t-02-02-b", cwd=target.root).stdout
    assert second.startswith("# perf: time_ms -20.0% (100 ms → 80 ms)\n")
    assert "01-a" not in second and "| 2 | -20.0% | 02-b |" in second
    # Its own bench runs: its experiment's and its confirmation's, not the session's.
    (own,) = [r for r in read_journal(target.journal).experiments if r.title == "02-b"]
    assert f"- Bench runs: {len(own.bench_durations_s) + 2 * 3} in all" in second
    unknown = run_cli("pr", "--branch", "main", cwd=target.root)
    assert unknown.returncode == 1
    assert "branch main is none of the session's finalized groups" in unknown.stderr


def test_a_branch_that_gains_only_on_top_of_another_is_said_not_to_stand_alone(target):
    """b's keep was judged on a best that held a's change; alone it slows the bench down. The
    branches share no file, so finalize cuts them apart, and its confirmation says so."""
    for name in ("a", "b"):
        (target.root / "src" / f"speedup-{name}.txt").write_text("1.0\n")
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "two knobs")
    target.add_hypothesis("01-a", {"src/speedup-a.txt": "0.8\n"})
    target.add_hypothesis("02-b-on-a", {"src/speedup-b.txt": "0.8 speedup-a\n"})
    run(target)
    assert [r.status for r in experiments(target)] == ["keep", "keep"]

    done = run_cli("finalize", "--confirm", "--runs", "3", cwd=target.root)
    assert done.returncode == 0, done.stderr
    first, second = (x for x in done.stdout.splitlines() if x.startswith("autoresearch/t-0"))
    assert first.startswith("autoresearch/t-01-01-a: -20.00% ") and "not a win" not in first
    assert second.startswith("autoresearch/t-02-02-b-on-a: +30.00% ")
    assert second.endswith(
        "; not a win on its own: its keeps gained on top of the other branches' changes, so it "
        "goes in with them or after them"
    )


@pytest.mark.e2e
def test_each_keep_s_contribution_to_the_tip_flags_dead_weight_and_drop_leaves_it_out(target):
    """Three wins in files of their own (a, b, c), one that helps only on top of a (d), and one
    that does what c did and more (e), kept after it: c is dead weight in the final tip. Each
    keep is taken out of the tip and measured against it; `--drop` then cuts the branches
    without c, their union checked against the tip without it."""
    for name, content in (
        ("a", "0.8"),
        ("b", "0.85"),
        ("c", "0.9"),
        ("d", "0.8 speedup-a"),
        ("e", "0.7 !speedup-c"),
    ):
        target.add_hypothesis(
            f"0{'abcde'.index(name) + 1}-{name}", {f"src/speedup-{name}.txt": f"{content}\n"}
        )
    run(target)
    assert [r.status for r in experiments(target)] == ["keep"] * 5
    tip = git(target.root, "rev-parse", "autoresearch/t").strip()

    done = run_cli("finalize", "--contributions", "--runs", "3", cwd=target.root)

    assert done.returncode == 0, done.stderr
    lines = {line.split(":")[0].strip(): line for line in done.stdout.splitlines()[1:]}
    expected = {"#1 01-a": -50.77, "#2 02-b": -15.0, "#4 04-d": -20.0, "#5 05-e": -22.22}
    for name, change in expected.items():
        assert f": {change:+.2f}% " in lines[name] and lines[name].endswith(": contributes")
    assert ": +0.00% " in lines["#3 03-c"] and lines["#3 03-c"].endswith(": dead weight")
    assert (
        "`autoresearch finalize --drop 3 --confirm` cuts the branches without them" in done.stdout
    )
    contributions = [c for c in read_journal(target.journal).confirmations if c.left_out]
    assert len(contributions) == 5 and {c.tip_commit for c in contributions} == {tip}
    # Never the session's headline: the tip is still unconfirmed, its change the keeps'.
    status = json.loads(run_cli("status", "--json", cwd=target.root).stdout)
    assert status["confirmation"] is None
    # The review says them: the report, the PR.
    report = run_cli("report", cwd=target.root).stdout
    assert "  #3       +0.0%  03-c: dead weight (-0.0% to +0.0%, 3 pairs)" in report
    pr = run_cli("pr", cwd=target.root).stdout
    assert "| 1 | 01-a | -50.8% (-50.8% to -50.8%, 3 pairs) | contributes |" in pr
    assert "| 3 | 03-c | +0.0% (-0.0% to +0.0%, 3 pairs) | dead weight |" in pr

    dropped = run_cli("finalize", "--drop", "3", "--confirm", "--runs", "3", cwd=target.root)

    assert dropped.returncode == 0, dropped.stderr
    out = dropped.stdout
    assert "4 kept commits" in out and "in 4 independent groups" in out
    assert "left out: #3 03-c: src/speedup-c.txt" in out
    assert "the branches together equal the session's tip without #3: yes" in out
    branches = [x for x in out.splitlines() if x.startswith("autoresearch/t-0")]
    assert [b.split(":")[0] for b in branches] == [
        "autoresearch/t-01-01-a",
        "autoresearch/t-02-02-b",
        "autoresearch/t-03-04-d",
        "autoresearch/t-04-05-e",
    ]
    assert "not a win on its own" in branches[2]  # d helps only on top of a
    assert "speedup-c" not in git(
        target.root, "ls-tree", "-r", "--name-only", "autoresearch/t-04-05-e"
    )
    unknown = run_cli("finalize", "--drop", "9", "--dry-run", cwd=target.root)
    assert unknown.returncode == 1
    assert (
        "--drop 9: no kept experiment #9 in session 't' (kept: #1, #2, #3, #4, #5)"
        in unknown.stderr
    )


GH_STANDIN = """#!{python}
# A stand-in for the GitHub CLI's `gh pr create`, with the flags finalize relies on (as gh's
# manual gives them); it records what it was asked and prints a pull request's URL, as gh does.
import argparse, json, os, sys
parser = argparse.ArgumentParser(prog="gh")
parser.add_argument("group", choices=["pr"])
parser.add_argument("command", choices=["create"])
parser.add_argument("--head", required=True)
parser.add_argument("--title", required=True)
parser.add_argument("--body-file", required=True)
parser.add_argument("--base")
args = parser.parse_args()
with open(os.environ["GH_RECORD"], "a") as handle:
    body = open(args.body_file, encoding="utf-8").read()
    handle.write(json.dumps({{**vars(args), "body": body}}) + "\\n")
print("https://github.com/example/repo/pull/" + str(sum(1 for _ in open(os.environ["GH_RECORD"]))))
"""


@pytest.mark.e2e
def test_open_prs_pushes_each_branch_and_opens_its_pull_request_with_gh(target, tmp_path):
    _three_keeps(target)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(target.root, "remote", "add", "origin", str(remote))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"
    gh.write_text(GH_STANDIN.format(python=sys.executable))
    gh.chmod(0o755)
    record = tmp_path / "gh.jsonl"
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "GH_RECORD": str(record)}

    done = run_cli("finalize", "--open-prs", "--into", "main", cwd=target.root, env=env)

    assert done.returncode == 0, done.stderr
    branches = ["autoresearch/t-01-01-a", "autoresearch/t-02-02-b"]
    assert f"{branches[0]}: https://github.com/example/repo/pull/1" in done.stdout
    assert f"{branches[1]}: https://github.com/example/repo/pull/2" in done.stdout
    pushed = git(remote, "for-each-ref", "--format=%(refname:short) %(objectname)")
    local = git(target.root, "rev-parse", *branches).split()
    assert sorted(pushed.splitlines()) == [f"{b} {c}" for b, c in zip(branches, local, strict=True)]
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    assert [c["head"] for c in calls] == branches and {c["base"] for c in calls} == {"main"}
    for call, branch in zip(calls, branches, strict=True):
        described = run_cli("pr", "--branch", branch, cwd=target.root).stdout
        assert described == call["body"]
        assert described.startswith(f"# {call['title']}\n")


def test_open_prs_without_gh_says_so_and_writes_nothing(target, tmp_path):
    _three_keeps(target)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(target.root, "remote", "add", "origin", str(remote))
    bin_dir = tmp_path / "bin"  # git alone on the PATH: no gh
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git"))

    done = run_cli("finalize", "--open-prs", cwd=target.root, env={"PATH": str(bin_dir)})

    assert done.returncode == 1
    assert "error: --open-prs needs the GitHub CLI (gh) on PATH" in done.stderr
    assert git(remote, "for-each-ref") == ""
    assert git(target.root, "branch", "--list", "autoresearch/t-0*") == ""


def test_a_keep_a_later_one_built_on_is_said_so_and_cannot_be_dropped_alone(target):
    """03 rewrites the line 01 added: 01 cannot be taken out of the tip alone."""
    _three_keeps(target)

    done = run_cli("finalize", "--contributions", "--runs", "3", cwd=target.root)

    assert done.returncode == 0, done.stderr
    first = next(x for x in done.stdout.splitlines() if x.startswith("  #1 01-a: "))
    assert first.startswith("  #1 01-a: a later keep builds on it (")
    assert any(x.startswith("  #2 02-b: -20.00% ") for x in done.stdout.splitlines())
    dropped = run_cli("finalize", "--drop", "1", cwd=target.root)
    assert dropped.returncode == 1
    assert "error: cannot leave out #1: a later keep builds on it" in dropped.stderr
    assert git(target.root, "branch", "--list", "autoresearch/t-0*") == ""
