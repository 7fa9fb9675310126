"""The command line's one edge for what the system says: a disk already full when a night
starts is an `error:` line naming the file system, never a traceback (the session's state on a
tmpfs filled before the night, mounted in a mount namespace of the test's own: `unshare`, as
root or not); a reader who stops reading (`| head`), whose broken pipe is an OSError too, is
not an error at all."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest
from conftest import git


@pytest.mark.e2e
def test_a_night_on_a_full_disk_says_which_file_system_is_full(target, tmp_path):
    mount = tmp_path / "small"
    mount.mkdir()
    config = target.config_path
    config.write_text(
        config.read_text().replace("[session]\n", f'[session]\nstate_dir = "{mount}/state"\n', 1)
    )
    git(target.root, "commit", "-qam", "the state on a small file system")
    target.add_hypothesis("01-win", {"src/value.txt": "80\n"})
    fill = f"dd if=/dev/zero of={mount}/fill bs=1k count=64 2>/dev/null"
    run = shlex.join([sys.executable, "-m", "autoresearch.cli", "run", "--no-confirm"])
    script = f"mount -t tmpfs -o size=32k tmpfs {mount} && {{ {fill}; }}; exec {run}"
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script],
        cwd=target.root,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and f"the file system mounted at {mount} is full" in last


@pytest.mark.e2e
def test_a_reader_who_stopped_reading_is_not_an_error(target):
    """`autoresearch status | head -0`: the first write meets a pipe nobody reads."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "autoresearch.cli", "status"],
            cwd=target.root,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
