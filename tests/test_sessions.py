"""Sessions are visible and removable: `autoresearch sessions` and `autoresearch clean`."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import git, run_cli

from autoresearch.repo.state_dir import session_paths


def _row(listing: str, name: str) -> str:
    return next(line for line in listing.splitlines() if name in line.split()[:2])


def test_sessions_lists_then_clean_removes(target):
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    assert run_cli("run", cwd=target.root).returncode == 0
    assert run_cli("run", "--session", "other", cwd=target.root).returncode == 0
    trees = len(git(target.root, "worktree", "list").splitlines())

    listing = run_cli("sessions", cwd=target.root)
    assert listing.returncode == 0, listing.stderr
    mine, other = _row(listing.stdout, "t"), _row(listing.stdout, "other")
    assert mine.startswith("*") and "autoresearch/t (+1)" in mine and "1 (1 kept)" in mine
    assert "autoresearch/other (+1)" in other and " MB" in other
    assert "pick another with --session NAME" in listing.stdout
    assert "autoresearch sessions" in run_cli("status", cwd=target.root).stdout

    done = run_cli("clean", "other", cwd=target.root)
    assert done.returncode == 0, done.stderr
    state = session_paths(target.load()).root.parent / "other"
    assert not state.exists()
    assert len(git(target.root, "worktree", "list").splitlines()) == trees - 2
    assert "kept branch autoresearch/other" in done.stdout
    assert "autoresearch/other (+1)" in _row(run_cli("sessions", cwd=target.root).stdout, "other")
    # The other session is untouched, and the user's checkout too.
    assert session_paths(target.load()).worktree.exists()
    assert git(target.root, "status", "--porcelain", "--untracked-files=no") == ""

    done = run_cli("clean", "other", "--branch", cwd=target.root)
    assert done.returncode == 0 and "deleted branch autoresearch/other" in done.stdout
    assert "autoresearch/other" not in git(target.root, "branch", "--list")

    missing = run_cli("clean", "nosuch", cwd=target.root)
    assert missing.returncode == 1
    assert missing.stderr.strip() == "error: no session 'nosuch' here (see `autoresearch sessions`)"


def test_the_state_directory_is_where_git_says_from_every_place_a_target_can_be(target, tmp_path):
    """`status` and the other read-only commands find the session's state from the `.git` they
    read, without GitPython; it is the directory git gives the loop, from the top of the
    checkout, a folder in it, a linked worktree (or a folder in one), and a submodule. A bare
    repository, or none, is the error the loop gives."""
    from autoresearch.errors import WorkspaceError
    from autoresearch.repo.gitrepo import open_repo

    config = target.load()
    linked = tmp_path / "linked"
    git(target.root, "worktree", "add", "-q", "--detach", str(linked))
    sub = tmp_path / "outer"
    sub.mkdir()
    git(sub, "init", "-q")
    git(
        sub, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(target.root), "inner"
    )
    places = [target.root, target.root / "src", linked, linked / "src", sub / "inner" / "src"]
    for place in places:
        placed = dataclasses.replace(config, target=dataclasses.replace(config.target, repo=place))
        git_says = open_repo(place).common_dir / "autoresearch" / config.session.name
        assert session_paths(placed).root == git_says, place
    assert session_paths(config).root.parent == target.root / ".git" / "autoresearch"

    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(target.root), str(bare))
    for place, said in ((bare, "bare repository"), (tmp_path / "none", "does not exist")):
        placed = dataclasses.replace(config, target=dataclasses.replace(config.target, repo=place))
        with pytest.raises(WorkspaceError, match=said):
            session_paths(placed)
