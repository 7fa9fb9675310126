"""Stop signals: SIGINT, SIGTERM and SIGHUP (the terminal closed) ask for a clean stop.

A second one makes the stop urgent: the running command is killed without its grace period.
Neither cuts the stop short, so that nothing a command started is left running. The CLI
installs the handlers before anything else, so a signal that arrives while the loop is still
starting is a clean stop too, never the default action.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

from ..bench.proc import StopFlag, become_subreaper

__all__ = ["STOP_SIGNALS", "install_stop_handlers", "stop_on_signals"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_installed: StopFlag | None = None  # the process-wide flag, once the CLI installed it


def _handler_for(flag: StopFlag):
    def handler(signum, frame):
        if flag.is_set():
            flag.urgent = True
        flag.set()

    return handler


def install_stop_handlers() -> StopFlag:
    """For the life of the process (the CLI): every stop signal sets one flag."""
    global _installed
    if _installed is None:
        _installed = StopFlag()
        for sig in STOP_SIGNALS:
            signal.signal(sig, _handler_for(_installed))
    return _installed


@contextlib.contextmanager
def stop_on_signals() -> Iterator[StopFlag]:
    """The stop flag of an open session: the process-wide one when the CLI installed it (a
    signal that came before the session stops it at once), else handlers for this block."""
    if _installed is not None:
        become_subreaper()
        yield _installed
        return
    stop = StopFlag()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    become_subreaper()
    previous = {sig: signal.signal(sig, _handler_for(stop)) for sig in STOP_SIGNALS}
    try:
        yield stop
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
