"""A repository with submodules (a C++ library's third_party/benchmark, a vendored data set):
`git worktree add` leaves their folders empty, so every arm's build failed on the unmodified
code. Each tree the loop makes has them checked out from your repository's own copies (no
network: a confined build has none), and a revert puts back what a run wrote into them, as it
does the rest of the tree: nothing one run leaves there reaches the next measurement."""

from __future__ import annotations

import shutil

import pytest
from conftest import git, run_cli

from autoresearch.repo.gitrepo import open_repo
from autoresearch.repo.workspace import BaselineTree, open_workspace


def _with_submodule(tmp_path):
    """A repository whose bench reads vendor/lib/value.txt, from a submodule whose origin is
    gone after the clone (as a registry out of reach is for a confined build)."""
    lib = tmp_path / "lib"
    git(tmp_path, "init", "-q", "-b", "main", str(lib))
    (lib / "value.txt").write_text("7\n")
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "lib")
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "vendor/lib")
    (repo / "src").mkdir()
    (repo / "src" / "code.txt").write_text("x\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "with a submodule")
    shutil.rmtree(lib)
    return repo


def test_each_tree_has_the_submodules_and_a_revert_puts_them_back(tmp_path):
    repo = _with_submodule(tmp_path)
    workspace = open_workspace(repo, "autoresearch/t", tmp_path / "state" / "tree", "HEAD")
    vendored = workspace.path / "vendor" / "lib"
    assert (vendored / "value.txt").read_text() == "7\n"

    # A run writes into the submodule: a file planted, one changed. The revert undoes both.
    (vendored / "planted.txt").write_text("left for the next run\n")
    (vendored / "value.txt").write_text("1\n")
    workspace.revert()
    assert (vendored / "value.txt").read_text() == "7\n"
    assert not (vendored / "planted.txt").exists()

    baseline = BaselineTree(open_repo(repo), tmp_path / "state" / "baseline")
    assert baseline.ensure(workspace.tip())
    assert (baseline.path / "vendor" / "lib" / "value.txt").read_text() == "7\n"
    (baseline.path / "vendor" / "lib" / "value.txt").write_text("1\n")
    baseline.mark_built(workspace.tip())
    assert baseline.ensure(workspace.tip())  # dirty: checked out again
    assert (baseline.path / "vendor" / "lib" / "value.txt").read_text() == "7\n"


@pytest.mark.e2e
def test_check_measures_a_project_whose_bench_reads_a_submodule(tmp_path):
    repo = _with_submodule(tmp_path)
    bench = repo / "bench.sh"
    bench.write_text('#!/bin/sh\nset -e\necho "METRIC t_ms=$(cat vendor/lib/value.txt)"\n')
    bench.chmod(0o755)
    done = run_cli("init", "--metric", "t_ms", "--unit", "ms", "--scope", "src/**", cwd=repo)
    assert done.returncode == 0, done.stderr
    config = repo / "autoresearch.toml"
    config.write_text(config.read_text().replace('"./autoresearch.sh"', '"./bench.sh"', 1))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "autoresearch session")

    checked = run_cli("check", "--no-calibrate", cwd=repo)

    said = checked.stdout + checked.stderr
    assert checked.returncode == 0, said
    assert "t_ms" in said and "ready" in said


def test_a_submodule_git_file_a_run_rewrote_runs_nothing_of_the_run_s_making(tmp_path):
    """A run points a submodule's `.git` at a git directory of its own whose filter touches a
    file: none of the loop's git calls in the tree (the guard's status and diff, the revert)
    may run it, outside the sandbox; the revert puts the submodule's `.git` back."""
    repo = _with_submodule(tmp_path)
    workspace = open_workspace(repo, "autoresearch/t", tmp_path / "state" / "tree", "HEAD")
    vendored = workspace.path / "vendor" / "lib"
    marker = tmp_path / "filter-ran"
    evil = vendored / "own-git"
    git(tmp_path, "init", "-q", "--separate-git-dir", str(evil), str(tmp_path / "scratch"))
    for kind in ("clean", "smudge"):
        git(tmp_path, "--git-dir", str(evil), "config", f"filter.x.{kind}", f"touch {marker}; cat")
    git(tmp_path, "--git-dir", str(evil), "config", "core.worktree", str(vendored))
    (vendored / ".gitattributes").write_text("* filter=x\n")
    git(vendored, "--git-dir", str(evil), "add", "value.txt", ".gitattributes")
    git(vendored, "--git-dir", str(evil), "-c", "user.name=x", "-c", "user.email=x@y", "commit",
        "-qm", "the run's own")  # fmt: skip
    marker.unlink(missing_ok=True)
    (vendored / ".git").write_text(f"gitdir: {evil}\n")
    (vendored / "value.txt").write_text("9\n")

    workspace.tree.status_paths()
    workspace.tree.run("diff", "HEAD", "--name-only")
    workspace.revert()

    assert not marker.exists()
    assert (vendored / "value.txt").read_text() == "7\n"
    admin = repo / ".git" / "worktrees"
    assert (vendored / ".git").read_text().startswith(f"gitdir: {admin}")
