"""What every measured run is handed: the METRIC channel, and the variables every run has.

A run that is measured or looked at (a bench run of either arm, in any phase; the sentinel
command's, the holdout's, the equivalence run, the profile) is handed the same world: the
channel at one descriptor number (handed.py), a file with no name in the session's logs (its
name would say which run it is: `candidate-3.log.metrics`), and the same variables whatever
the phase: where the holdout's files are and where a profile goes are set for every run,
not announced to the run that uses them. After the run what it wrote there is kept beside
its log, where the metrics are read from (metrics.py).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from .handed import CHANNEL_FD
from .metrics import MAX_CHANNEL_BYTES, METRIC_FD_ENV, metric_channel

if TYPE_CHECKING:
    from ..config import Config

__all__ = ["HOLDOUT_ENV", "PROFILE_ENV", "PROFILE_NAME", "channel_for", "keep_channel", "run_env"]

HOLDOUT_ENV = "AUTORESEARCH_HOLDOUT"  # the holdout's first file: where its command finds them
PROFILE_ENV = "AUTORESEARCH_PROFILE_OUT"  # where `[profile] command` writes its profile
PROFILE_NAME = ".autoresearch-profile"  # in the tree: the one place a confined run keeps


def run_env(config: Config, cwd: Path) -> dict[str, str]:
    """The variables of every measured run in the tree `cwd`, whatever it is."""
    env = {METRIC_FD_ENV: str(CHANNEL_FD)}
    if config.holdout.command and config.holdout_files:
        env[HOLDOUT_ENV] = str(config.holdout_files[0])
    if config.profile.command:
        env[PROFILE_ENV] = str(cwd / PROFILE_NAME)
    return env


def channel_for(log: Path) -> int:
    """A new channel for the run logged at `log`: a file without a name among the session's
    logs (one directory for every run), on disk like its log (a run that fills it fills the
    disk, not the loop's memory)."""
    logs = log.parent.parent
    logs.mkdir(parents=True, exist_ok=True)
    try:
        return os.open(logs, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
    except OSError:  # a file system without unnamed files: one named, then unlinked
        path = logs / ".metric-channel"
        path.unlink(missing_ok=True)
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o600)
        path.unlink()
        return fd


def keep_channel(fd: int, log: Path) -> None:
    """What the run wrote to its channel, beside its log (metrics.run_output reads it there):
    at most one byte past MAX_CHANNEL_BYTES, which is enough for the reader to refuse it."""
    with contextlib.suppress(OSError):
        os.lseek(fd, 0, os.SEEK_SET)
    data = b""
    with contextlib.suppress(OSError):
        while len(data) <= MAX_CHANNEL_BYTES and (chunk := os.read(fd, 1 << 20)):
            data += chunk
    path = metric_channel(log)
    path.write_bytes(data[: MAX_CHANNEL_BYTES + 1])
