"""Build output declared in `[bench] keep` survives the reverts between experiments, so the
next build is incremental; each arm keeps its own, never one shared between them."""

from __future__ import annotations

import sys

import pytest
from conftest import experiments, git, run

from autoresearch.repo.gitrepo import open_repo
from autoresearch.repo.state_dir import session_paths
from autoresearch.repo.workspace import BaselineTree, Workspace, open_workspace

BUILD = f"""#!{sys.executable} -S
import os
from pathlib import Path

root = Path(__file__).resolve().parent
# An object built once and reused (incremental), and a product every build writes anew.
lib, product = root / "target" / "deps" / "lib.o", root / "target" / "product"
earlier = lib.read_text() if lib.exists() else "fresh"
with open(os.environ["BUILD_LOG"], "a") as log:
    log.write(f"{{root.name}} {{earlier}}\\n")
if not lib.exists():
    lib.parent.mkdir(parents=True, exist_ok=True)
    lib.write_text(root.name)
product.write_text(root.name)
"""


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text("one\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    return repo


def test_a_revert_keeps_the_declared_build_output_and_nothing_else(repo, tmp_path):
    ws = open_workspace(repo, "autoresearch/t", tmp_path / "wt", "HEAD", keep=("target/",))
    (ws.path / "target" / "deps").mkdir(parents=True)
    (ws.path / "target" / "deps" / "lib.o").write_text("object\n")
    (ws.path / "stray.txt").write_text("left by a run\n")
    (ws.path / "a.txt").write_text("changed\n")

    ws.revert()
    assert (ws.path / "target" / "deps" / "lib.o").read_text() == "object\n"
    assert not (ws.path / "stray.txt").exists()
    assert (ws.path / "a.txt").read_text() == "one\n"

    Workspace(ws.source, ws.tree, ws.branch).revert()  # nothing declared: nothing kept
    assert not (ws.path / "target").exists()


def test_the_baseline_moved_to_a_new_best_keeps_its_build_output(repo, tmp_path):
    source = open_repo(repo)
    first = source.resolve("HEAD")
    (repo / "a.txt").write_text("two\n")
    git(repo, "commit", "-qam", "two")
    tree = BaselineTree(source, tmp_path / "baseline", keep=("target/",))
    tree.ensure(first)
    (tree.path / "target").mkdir()
    (tree.path / "target" / "cache").write_text("warm\n")
    (tree.path / "junk").write_text("x\n")

    assert tree.ensure(source.resolve("HEAD")) is True
    assert (tree.path / "a.txt").read_text() == "two\n"
    assert (tree.path / "target" / "cache").read_text() == "warm\n"
    assert not (tree.path / "junk").exists()


@pytest.mark.e2e
@pytest.mark.parametrize("keep", [True, False])
def test_each_arm_builds_on_its_own_earlier_output_through_a_night(
    target, tmp_path, keep, monkeypatch
):
    (target.root / "keepbuild.py").write_text(BUILD)
    (target.root / "keepbuild.py").chmod(0o755)
    config = target.configure(build="./keepbuild.py").read_text()
    if keep:
        target.config_path.write_text(config.replace("[bench]\n", '[bench]\nkeep = ["target/"]\n'))
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "an incremental build")
    target.add_hypothesis("01-win", {"src/value.txt": "70\n"})
    target.add_hypothesis("02-null", {"src/other.txt": "x\n"})
    target.add_hypothesis("03-null", {"src/sentinel.txt": "50.0\n"})
    log = tmp_path / "builds.log"
    monkeypatch.setenv("BUILD_LOG", str(log))

    run(target)

    assert [r.status for r in experiments(target)] == ["keep", "discard", "discard"]
    builds = [line.split() for line in log.read_text().splitlines()]
    trees = {tree for tree, _ in builds}
    assert len(trees) == 2  # the baseline's tree and the candidate's
    for tree in trees:
        earlier = [seen for name, seen in builds if name == tree]
        if keep:  # built fresh once, then always on its own output: never the other arm's
            assert earlier[0] == "fresh" and set(earlier[1:]) == {tree}, builds
        else:
            assert earlier.count("fresh") >= len(earlier) - 1, builds
    worktree = session_paths(target.load()).worktree.name
    candidate = [seen for name, seen in builds if name == worktree]
    assert len(candidate) >= 4 and (candidate.count("fresh") == 1) == keep, builds
