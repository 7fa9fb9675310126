"""Patches are bytes; a bad file in the queue is a record and the night goes on."""

from __future__ import annotations

import os
import subprocess

from conftest import experiments, git, run


def git_bytes(cwd, *args: str) -> bytes:
    """git's output as bytes: text mode would turn CRLF into LF."""
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=True).stdout


def _diff(target, rel: str, new: bytes) -> bytes:
    """`git diff` of the change, made by git itself: the bytes a user would queue."""
    path = target.root / rel
    old = path.read_bytes()
    path.write_bytes(new)
    patch = git_bytes(target.root, "diff", "--binary", "--", rel)
    path.write_bytes(old)
    return patch


def test_crlf_file_diff_applies_and_is_kept_byte_for_byte(target):
    (target.root / "src" / "win.txt").write_bytes(b"line one\r\nline two\r\n")
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "a CRLF file")
    patch = _diff(target, "src/value.txt", b"80\n") + _diff(
        target, "src/win.txt", b"line one\r\nline 2\r\n"
    )
    (target.queue / "01-crlf.patch").write_bytes(b"Title: crlf\n\n" + patch)

    run(target)

    (record,) = experiments(target)
    assert record.status == "keep", record.error
    shown = git_bytes(target.root, "show", "autoresearch/t:src/win.txt")
    assert shown == b"line one\r\nline 2\r\n"


def test_lone_carriage_return_is_content_not_a_newline(target):
    patch = _diff(target, "src/value.txt", b"80\n") + _diff(
        target, "src/mode.txt", b"ok\rnot a newline\n"
    )
    (target.queue / "01-cr.patch").write_bytes(b"Title: cr\n\n" + patch)

    run(target)

    (record,) = experiments(target)
    saved = sorted((target.root / ".git/autoresearch/t/patches").iterdir())
    assert saved[0].read_bytes() == patch
    assert record.status == "keep", record.error
    kept = git_bytes(target.root, "show", f"{record.kept_commit}:src/mode.txt")
    assert kept == b"ok\rnot a newline\n"


def test_latin1_patch_applies_as_bytes(target):
    (target.root / "src" / "name.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    git(target.root, "add", "-A")
    git(target.root, "commit", "-qm", "a latin-1 file")
    patch = _diff(target, "src/value.txt", b"80\n") + _diff(
        target, "src/name.txt", "caf\xe9 cr\xe8me\n".encode("latin-1")
    )
    (target.queue / "01-latin1.patch").write_bytes("Title: caf\xe9\n\n".encode("latin-1") + patch)

    run(target)

    (record,) = experiments(target)
    assert record.status == "keep", record.error
    assert record.title == "caf\ufffd"
    shown = git_bytes(target.root, "show", "autoresearch/t:src/name.txt")
    assert shown == "caf\xe9 cr\xe8me\n".encode("latin-1")


def test_bad_files_in_the_queue_are_records_and_the_night_goes_on(target):
    (target.queue / "01-dir.patch").mkdir()
    os.symlink(target.root / "nowhere", target.queue / "02-dangling.patch")
    target.add_hypothesis("03-sidecar", {"src/value.txt": "95\n"})
    (target.queue / "03-sidecar.json").write_text("{not json")
    target.add_hypothesis("04-win", {"src/value.txt": "80\n"})

    outcome = run(target)

    records = experiments(target)
    assert [(r.title, r.status) for r in records] == [
        ("01-dir", "apply_failed"),
        ("02-dangling", "apply_failed"),
        ("03-sidecar", "apply_failed"),
        ("04-win", "keep"),
    ]
    assert "not a regular file" in records[0].error
    assert "symbolic link to nothing" in records[1].error
    assert "03-sidecar.json: not valid JSON" in records[2].error
    assert all(r.bench_logs == [] for r in records[:3])
    assert outcome.stop_reason.startswith("no hypotheses left: the proposers have none")

    # Fixed, the sidecar's hypothesis is new and runs.
    (target.queue / "03-sidecar.json").write_text('{"title": "fixed"}')
    run(target)
    assert [(r.title, r.status) for r in experiments(target)][-1][0] == "fixed"


def test_a_path_that_is_not_utf8_is_recorded_not_a_crash(target):
    name = b"src/caf\xe9.txt"
    patch = (
        b"diff --git a/" + name + b" b/" + name + b"\nnew file mode 100644\n--- /dev/null\n"
        b"+++ b/" + name + b"\n@@ -0,0 +1 @@\n+x\n"
    )
    (target.queue / "01-latin1-name.patch").write_bytes(b"Title: odd name\n\n" + patch)
    target.add_hypothesis("02-win", {"src/value.txt": "80\n"})

    run(target)

    first, second = experiments(target)
    assert first.status in ("discard", "keep", "apply_failed"), first.error
    assert all("\ufffd" in f or f.isascii() for f in first.touched_files)
    assert second.status == "keep"


def test_a_header_naming_a_path_git_does_not_touch_is_kept_without_it(target):
    """`diff --git` names one path, the +++ line another: git applies to the latter."""
    patch = (
        "diff --git a/src/ghost.txt b/src/value.txt\n--- a/src/value.txt\n+++ b/src/value.txt\n"
        "@@ -1 +1 @@\n-100\n+80\n"
    )
    (target.queue / "01-odd-header.patch").write_text("Title: odd header\n\n" + patch)

    outcome = run(target)

    (record,) = experiments(target)
    assert record.status == "keep", record.error
    assert not outcome.interrupted
    shown = git(target.root, "show", "--name-only", "--format=", "autoresearch/t").split()
    assert shown == ["src/value.txt"]
