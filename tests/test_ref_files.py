"""Refs read from their files (the session branch's tip, what HEAD names), as git reads them."""

from __future__ import annotations

import subprocess

import pytest

from autoresearch.errors import WorkspaceError
from autoresearch.repo.gitrepo import Repo


def git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


def commit(cwd, message):
    git(
        cwd,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        message,
    )


def rev_parse(cwd, rev):
    return git(cwd, "rev-parse", rev).stdout.strip()


def make(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "a")
    git(repo, "branch", "side")
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"), "side")
    commit(tmp_path / "wt", "b")
    return repo, Repo(tmp_path / "wt")


def test_loose_and_packed_refs_read_as_git_reads_them_from_a_worktree(tmp_path):
    repo, tree = make(tmp_path)
    assert tree.branch_tip("side") == rev_parse(repo, "side")
    assert tree.branch_tip("main") == rev_parse(repo, "main")
    git(repo, "pack-refs", "--all")
    assert tree.branch_tip("side") == rev_parse(repo, "side")
    commit(tmp_path / "wt", "c")
    assert tree.branch_tip("side") == rev_parse(repo, "side")  # loose again, over the packed


def test_a_missing_or_garbled_branch_has_no_tip(tmp_path):
    repo, tree = make(tmp_path)
    assert tree.branch_tip("nope") is None
    (repo / ".git" / "refs" / "heads" / "side").write_text("not a commit\n")
    assert tree.branch_tip("side") is None


def test_a_directory_planted_where_the_ref_was_is_left_to_git(tmp_path):
    repo, tree = make(tmp_path)
    git(repo, "pack-refs", "--all")  # the packed entry would still name the old commit
    (repo / ".git" / "refs" / "heads" / "side").mkdir()
    assert tree.branch_tip("side") == tree.resolve("refs/heads/side")


def test_head_names_its_branch_or_its_commit_as_git_says(tmp_path):
    repo, tree = make(tmp_path)
    checkout = Repo(repo)
    assert (
        checkout.head_ref() == "refs/heads/main" == git(repo, "symbolic-ref", "HEAD").stdout.strip()
    )
    assert tree.head_ref() == "refs/heads/side"  # a worktree's own HEAD
    git(repo, "checkout", "-q", "-b", "elsewhere")
    assert checkout.head_ref() == "refs/heads/elsewhere"
    git(repo, "checkout", "-q", "--detach")
    assert checkout.head_ref() == rev_parse(repo, "HEAD")
    head = repo / ".git" / "HEAD"
    head.unlink()
    head.symlink_to("refs/heads/main")  # the old symlink form: git's word for it
    assert checkout.head_ref() == "refs/heads/main"


def test_head_is_the_commit_git_says_on_a_branch_detached_or_unborn(tmp_path):
    repo, tree = make(tmp_path)
    checkout = Repo(repo)
    assert checkout.head() == rev_parse(repo, "HEAD")
    assert tree.head() == rev_parse(tmp_path / "wt", "HEAD") != checkout.head()
    git(repo, "checkout", "-q", "--detach")
    assert checkout.head() == rev_parse(repo, "HEAD")
    git(repo, "checkout", "-q", "--orphan", "unborn")
    with pytest.raises(WorkspaceError, match="HEAD names no commit"):
        checkout.head()
