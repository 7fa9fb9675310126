"""The session's inotify watches: what they vouch for holds as the trees change under them."""

from __future__ import annotations

import shutil

from autoresearch.repo.watch import TreeWatch, Watches


def _still(watch: TreeWatch) -> int:
    """The watch's count, checked to stand while nothing is written."""
    generation = watch.generation()
    assert watch.generation() == generation
    return generation


def test_a_directory_made_after_the_watch_is_watched_with_everything_under_it(tmp_path):
    watch = TreeWatch([tmp_path])
    before = _still(watch)
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    made = watch.generation()
    assert made != before
    assert _still(watch) == made
    (tmp_path / "a" / "b" / "c" / "f.txt").write_text("x")  # deep in what was made later
    assert watch.generation() != made


def test_a_tree_removed_and_made_again_is_watched_again(tmp_path):
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    watch = TreeWatch([root])
    before = _still(watch)
    shutil.rmtree(root)
    gone = watch.generation()
    assert gone != before and not watch.usable
    assert watch.generation() != gone  # no tree: every look is a "maybe"
    (root / "sub").mkdir(parents=True)
    again = watch.generation()
    assert watch.usable
    settled = _still(watch)
    assert settled >= again
    (root / "sub" / "f.txt").write_text("x")
    assert watch.generation() != settled


def test_the_loop_s_own_files_do_not_count(tmp_path):
    journal = tmp_path / "experiments.jsonl"
    watch = TreeWatch([tmp_path], quiet=lambda path: path == str(journal))
    before = _still(watch)
    journal.write_text("{}\n")
    assert watch.generation() == before
    (tmp_path / "README").write_text("a change of yours")
    assert watch.generation() != before


def test_a_fingerprint_is_taken_again_only_after_a_write(tmp_path):
    watches = Watches()
    taken = []

    def fingerprint():
        taken.append(1)
        return len(taken)

    assert watches.memo(tmp_path, "k", fingerprint) == 1
    assert watches.memo(tmp_path, "k", fingerprint) == 1
    assert watches.memo(tmp_path, "other key", fingerprint) == 2
    (tmp_path / "f.txt").write_text("x")
    assert watches.memo(tmp_path, "k", fingerprint) == 3
    assert watches.memo(tmp_path / "missing", "k", fingerprint) == 4  # unwatched: every time
    assert watches.memo(tmp_path / "missing", "k", fingerprint) == 5


def test_a_tree_too_big_to_watch_is_a_maybe_without_a_walk_at_every_look(tmp_path, monkeypatch):
    import autoresearch.repo.watch as watch_module

    for name in "abc":
        (tmp_path / name).mkdir()
    monkeypatch.setattr(watch_module, "MAX_WATCHES", 2)
    walks = []
    real_walk = watch_module.os.walk
    monkeypatch.setattr(watch_module.os, "walk", lambda top: walks.append(top) or real_walk(top))
    watch = TreeWatch([tmp_path])
    assert not watch.usable and len(walks) == 1
    first = watch.generation()
    assert watch.generation() != first  # every look: something may have been written
    assert len(walks) == 1
