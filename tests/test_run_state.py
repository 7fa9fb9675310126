"""Every bench run starts from the state its arm's build left: nothing a run writes in its
tree is there for the next run of either arm, and after a discard the build output a tree
keeps is the best's again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import dedent, experiments, git, local_cluster, run, run_cli, run_on_hosts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoresearch.filestate import FileState
from autoresearch.loop.session import RunOptions
from autoresearch.progress import Progress
from autoresearch.repo.watch import TreeWatch

# A make-like build: out/value.txt made from src/value.txt when it is missing or older, and a
# candidate that plants one dated 2100 (src/mode.txt "plant") in its own build.
MAKE = dedent(
    """
    #!/usr/bin/env python3
    import os
    from pathlib import Path

    root = Path(__file__).resolve().parent
    source, built = root / "src" / "value.txt", root / "out" / "value.txt"
    built.parent.mkdir(exist_ok=True)
    if not built.exists() or built.stat().st_mtime < source.stat().st_mtime:
        built.write_text(source.read_text())
    mode = root / "src" / "mode.txt"
    if mode.exists() and mode.read_text().strip() == "plant":
        built.write_text("10\\n")
        os.utime(built, (4102444800, 4102444800))  # 2100-01-01: never older than a source
    """
)


def with_make_like_build(target) -> None:
    """The target built by make.py, its out/ kept across reverts, its checks before a keep."""
    config = target.configure(build="./make.py", checks_when="keep")
    config.write_text(config.read_text().replace("[bench]\n", '[bench]\nkeep = ["out/"]\n', 1))
    (target.root / "make.py").write_text(MAKE)
    os.chmod(target.root / "make.py", 0o755)
    (target.root / ".gitignore").write_text("out/\n")
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "a make-like build")


@pytest.mark.e2e
@pytest.mark.parametrize("sandbox", ["off", "auto"])
def test_a_candidate_that_memoizes_in_its_tree_is_slow_every_run(target, sandbox):
    """Slow the first time, fast once it finds the file it left in its tree: each run finds
    none, so it is the null it is."""
    target.configure(sandbox=sandbox)
    git(target.root, "commit", "-qam", "config", "--allow-empty")
    target.add_hypothesis("01-memo", {"src/mode.txt": "memo\n"})

    run(target)

    (record,) = experiments(target)
    assert record.status == "discard", (record.status, record.error)
    assert not (target.root / "src" / "memo.txt").exists()


@pytest.mark.parametrize("cache", ["XDG_CACHE_HOME", "MEMO_CACHE"])
def test_a_candidate_that_memoizes_in_its_arm_s_cache_is_slow_every_run(target, cache):
    """The same memo in the arm's own cache (the default XDG_CACHE_HOME, or a toolchain's
    cache the config names): the caches are put back after every run too."""
    config = target.configure(sandbox="bwrap")
    if cache == "MEMO_CACHE":
        text = config.read_text().replace(
            'mode = "bwrap"\n', 'mode = "bwrap"\ncaches = { MEMO_CACHE = "memo" }\n'
        )
        config.write_text(text)
    git(target.root, "commit", "-qam", "config", "--allow-empty")
    target.add_hypothesis("01-memo", {"src/mode.txt": "cachememo\n"})

    run(target)

    (record,) = experiments(target)
    assert record.status == "discard", (record.status, record.error)


def test_build_output_a_discarded_candidate_planted_is_not_the_next_one_s(target):
    """A candidate whose build plants an output dated 2100 and is discarded (its checks fail)
    leaves nothing the next, honest null's incremental build would take for fresh."""
    with_make_like_build(target)
    target.add_hypothesis("01-plant", {"src/mode.txt": "plant\n", "src/broken.txt": "x\n"})
    target.add_hypothesis("02-null", {"src/notes.txt": "an honest change that does nothing\n"})

    run(target)

    first, second = experiments(target)
    assert first.status == "checks_failed", (first.status, first.error)
    assert second.status == "discard", (second.status, second.error)


def test_a_planted_build_output_does_not_reach_the_next_try(target, tmp_path):
    """The same, one `try` per process: the best's build output is put back from disk."""
    with_make_like_build(target)
    plant = target.add_hypothesis("plant", {"src/mode.txt": "plant\n", "src/broken.txt": "x\n"})
    null = target.add_hypothesis("null", {"src/notes.txt": "an honest change that does nothing\n"})

    for patch in (plant.rename(tmp_path / plant.name), null.rename(tmp_path / null.name)):
        run_cli("try", "--patch", str(patch), "--title", patch.stem, cwd=target.root, timeout=300)

    assert [r.status for r in experiments(target)] == ["checks_failed", "discard"]


@pytest.mark.e2e
def test_a_planted_build_output_does_not_reach_the_next_job_on_a_bench_host(target, tmp_path):
    """The same on a bench host (one, so that both jobs land on it): the next job's candidate
    tree is put back to the output of its last unpatched build (its calibration)."""
    with_make_like_build(target)
    target.add_hypothesis("01-plant", {"src/mode.txt": "plant\n", "src/broken.txt": "x\n"})
    target.add_hypothesis("02-null", {"src/notes.txt": "an honest change that does nothing\n"})

    with local_cluster(tmp_path, workers=1) as cluster:
        options = RunOptions(confirm=False, accept_noise=True)
        run_on_hosts(target.load(), cluster.scheduler_address, options, Progress(quiet=True))

    assert [r.status for r in experiments(target)] == ["checks_failed", "discard"]


# A run's writes in its tree, as hypothesis draws them (`_act` makes each).
WRITES = st.lists(
    st.tuples(
        st.sampled_from(["write", "rewrite", "redate", "mkdir", "nested", "move", "delete"]),
        st.integers(0, 5),
    ),
    max_size=8,
)
FIXTURE = [HealthCheck.function_scoped_fixture]  # tmp_path: each example makes its own tree


@settings(max_examples=40, deadline=None, suppress_health_check=FIXTURE)
@given(WRITES)
def test_putting_back_what_the_watch_saw_is_putting_back_after_a_walk(tmp_path, steps):
    """A run's writes, put back from the paths the inotify watch saw written (repo/watch.py)
    and by a walk of the whole tree: the same removals, the same tree after."""
    trees = []
    for name in ("watched", "walked"):
        root = tmp_path / f"{len(os.listdir(tmp_path))}-{name}"
        for i in range(6):
            (root / f"d{i % 2}").mkdir(parents=True, exist_ok=True)
            (root / f"d{i % 2}" / f"f{i}").write_text("kept")
        trees.append(root)
    outcomes = []
    for root in trees:
        watch = TreeWatch([root], collect=True)
        state = FileState.take([root])
        for action, i in steps:
            _act(root, action, i)
        touched = watch.touched() if root.name.endswith("watched") else None
        assert touched is not None or root.name.endswith("walked")
        removed = state.restore(touched=touched)
        watch.close()
        listing = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
        outcomes.append((sorted(os.path.relpath(r, root) for r in removed), listing))
    assert outcomes[0] == outcomes[1]


@settings(max_examples=40, deadline=None, suppress_health_check=FIXTURE)
@given(WRITES)
def test_a_state_brought_up_to_date_from_what_was_written_is_a_state_taken_now(tmp_path, steps):
    """The arm's state kept from one measurement to the next (bench/armstate.py): updated
    from the paths the watch saw written, it is what a walk of the tree finds."""
    root = tmp_path / str(len(os.listdir(tmp_path)))
    for i in range(6):
        (root / f"d{i % 2}").mkdir(parents=True, exist_ok=True)
        (root / f"d{i % 2}" / f"f{i}").write_text("kept")
    watch = TreeWatch([root], collect=True)
    state = FileState.take([root])
    for action, i in steps:
        _act(root, action, i)
    touched = watch.touched()
    watch.close()
    assert touched is not None
    assert state.updated(touched).entries == FileState.take([root]).entries
    # A watch not asked to keep what was written keeps nothing (a night's writes would pile up).
    plain = TreeWatch([root])
    (root / "later").write_text("x")
    assert plain.changed() and plain.touched() is None
    plain.close()


def _act(root: Path, action: str, i: int) -> None:
    """One write a run might make in its tree."""
    target = root / f"d{i % 2}" / f"f{i}"
    if action == "write":
        (root / f"memo{i}").write_text("memo")
    elif action == "rewrite" and target.exists():
        target.write_text("changed")
    elif action == "redate" and target.exists():
        os.utime(target, (4102444800, 4102444800))  # dated 2100
    elif action == "mkdir":
        (root / f"new{i}" / "deep").mkdir(parents=True, exist_ok=True)
        (root / f"new{i}" / "deep" / "x").write_text("x")
    elif action == "nested":
        (root / f"d{i % 2}" / f"sub{i}").mkdir(exist_ok=True)
        (root / f"d{i % 2}" / f"sub{i}" / "y").write_text("y")
    elif action == "move" and target.exists():
        target.rename(root / f"moved{i}")
    elif action == "delete" and target.exists():
        target.unlink()
