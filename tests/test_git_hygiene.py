"""The loop's git work ignores the user's hooks and signing; kept files are kept even if ignored."""

from __future__ import annotations

import os
import stat

from conftest import experiments, git, run

from autoresearch.repo.state_dir import session_paths


def _hostile_git_config(tmp_path, marker):
    """Signing on with a signer that always fails, and hooks that leave a trace."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for name in ("pre-commit", "post-commit", "post-checkout", "commit-msg"):
        hook = hooks / name
        hook.write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        hook.chmod(hook.stat().st_mode | stat.S_IEXEC)
    config = tmp_path / "hostile-gitconfig"
    config.write_text(
        f"[user]\n\tname = u\n\temail = u@example.com\n"
        f"[commit]\n\tgpgsign = true\n[gpg]\n\tprogram = false\n"
        f"[core]\n\thooksPath = {hooks}\n"
    )
    return config


def test_keep_ignores_user_signing_and_hooks(target, tmp_path, monkeypatch):
    marker = tmp_path / "hooks-ran"
    config = _hostile_git_config(tmp_path, marker)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})

    outcome = run(target)

    assert outcome.kept == 1
    assert [r.status for r in experiments(target)] == ["keep"]
    assert not marker.exists(), marker.read_text()
    # Unsigned: the loop's commit carries no signature.
    assert "gpgsig" not in git(target.root, "cat-file", "commit", "autoresearch/t")


def test_git_hooks_run_when_the_config_asks(target, tmp_path, monkeypatch):
    marker = tmp_path / "hooks-ran"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    hook = hooks / "post-commit"
    hook.write_text(f"#!/bin/sh\necho post-commit >> {marker}\n")
    os.chmod(hook, 0o755)
    text = target.config_path.read_text()
    text = text.replace("[bench]", "[target]\ngit_hooks = true\n\n[bench]")
    target.config_path.write_text(text)
    git(target.root, "commit", "-qam", "hooks on")
    (tmp_path / "cfg").write_text(f"[core]\n\thooksPath = {hooks}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "cfg"))
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})

    run(target)

    assert marker.read_text() == "post-commit\n"


def test_kept_patch_may_add_an_ignored_file(target):
    (target.root / ".gitignore").write_text("experiments.jsonl\nhypotheses/\n*.gen\n")
    git(target.root, "commit", "-qam", "ignore generated files")
    target.add_hypothesis("01-win", {"src/value.txt": "80\n", "src/table.gen": "generated\n"})

    run(target)

    (record,) = experiments(target)
    assert record.status == "keep"
    assert git(target.root, "show", "autoresearch/t:src/table.gen") == "generated\n"
    worktree = session_paths(target.load()).worktree
    assert git(worktree, "status", "--porcelain", "--ignored") == ""


def test_a_failing_keep_commit_loses_nothing_and_stops_the_night(target, tmp_path, monkeypatch):
    """With the user's signing let through and a signer that fails, the commit fails."""
    text = target.config_path.read_text()
    target.config_path.write_text(text.replace("[bench]", "[target]\ngit_hooks = true\n\n[bench]"))
    git(target.root, "commit", "-qam", "hooks and signing on")
    (tmp_path / "cfg").write_text("[commit]\n\tgpgsign = true\n[gpg]\n\tprogram = false\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "cfg"))
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    target.add_hypothesis("02-next", {"src/sentinel.txt": "49\n"})

    outcome = run(target)

    (record,) = experiments(target)
    assert record.status == "interrupted"
    assert "the keep commit of t-0001 failed" in record.error
    assert outcome.interrupted and "keep commit" in outcome.stop_reason
    worktree = session_paths(target.load()).worktree
    assert git(worktree, "status", "--porcelain") == ""

    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "none"))
    run(target)

    first, retry, _ = experiments(target)
    assert (retry.status, retry.retry_of) == ("keep", first.id)
