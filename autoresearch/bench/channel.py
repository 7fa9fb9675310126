"""What every measured run is handed: the METRIC channel, and the variables every run has.

A run that is measured or looked at (a bench run of either arm, in any phase; the sentinel
command's, the holdout's, the equivalence run, the profile) is handed the same world: the
channel at one descriptor number (handed.py), a pipe (a file's name would say which run it is:
`candidate-3.log.metrics`; a file could be written over), and the same variables whatever
the phase: where the holdout's files are and where a profile goes are set for every run,
not announced to the run that uses them. After the run what it wrote there is kept beside
its log, where the metrics are read from (metrics.py).
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from .handed import CHANNEL_FD
from .metrics import MAX_CHANNEL_BYTES, METRIC_FD_ENV, metric_channel

if TYPE_CHECKING:
    from ..config import Config

__all__ = ["HOLDOUT_ENV", "PROFILE_ENV", "PROFILE_NAME", "Channel", "run_env"]

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


class Channel:
    """One run's METRIC channel: a pipe, whose write end the run is handed and whose read end
    the loop drains as it runs. A pipe only grows: what was written to it cannot be taken back
    or written over (a file could be reopened through /proc, truncated, and written anew by a
    process the workload left behind once the bench script had reported), so a forged line
    can only come beside the real one, and a metric reported twice fails the run
    (metrics.parse_metrics). At most one byte past MAX_CHANNEL_BYTES is kept: enough for the
    reader to refuse it; the rest is drained, so that a run writing more never blocks."""

    def __init__(self) -> None:
        self.read_end, self.write_end = os.pipe()
        self._data = bytearray()
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            while chunk := os.read(self.read_end, 1 << 16):
                room = MAX_CHANNEL_BYTES + 1 - len(self._data)
                if room > 0:
                    self._data += chunk[:room]
        except OSError:
            pass
        finally:
            os.close(self.read_end)

    def keep(self, log: Path, timeout_s: float = 10.0) -> None:
        """The run is over: its writers' ends close with its processes (a process that held
        one past it is given `timeout_s`); what came is written beside its log."""
        self.close()
        self._thread.join(timeout_s)
        metric_channel(log).write_bytes(bytes(self._data))

    def close(self) -> None:
        """Our write end closed, once: a second close of its number would close whatever
        another thread opened under it since (an agent's git call, whose exec-status pipe then
        read this channel and hung its thread and the run's clean-up behind it)."""
        end, self.write_end = self.write_end, -1
        if end >= 0:
            with contextlib.suppress(OSError):
                os.close(end)
