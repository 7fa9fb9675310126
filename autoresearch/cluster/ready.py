"""Before the first experiment sent to bench hosts, as before the serial loop's
(loop/stages.get_ready): a new session's pre-flight on the driver (where the checks run), the
best calibrated on a host, and a bench too noisy for the effect asked for measured once more
there, then refused (loop/stages.refuse_noise, the one verdict the serial loop and `check`
give). Without it a cluster would spend the night on experiments no rule could keep, or whose
every keep the checks refuse, and `--accept-noise` would mean nothing on bench hosts."""

from __future__ import annotations

import contextlib
from concurrent.futures import CancelledError
from typing import TYPE_CHECKING

from ..loop.best_profile import profile_best_aside
from ..loop.session import harness_env
from ..loop.stages import (
    MAX_BASELINE_FAILURES,
    preflight_new_session,
    refuse_noise,
    say_best,
)
from .hostrun import HostRun
from .landing import MAX_WORKER_LOSSES

if TYPE_CHECKING:
    from .dispatch import Driver

__all__ = ["get_ready"]

POLL_S = 0.5  # how often the wait looks at the stop flag


def get_ready(driver: Driver) -> str | None:
    """The pre-flight (a new session's, unless `session.preflight` is off), the best
    calibrated on a host, the noise judged (unless `--accept-noise`) and the best profiled
    (with a `[profile]`). Why a signal stopped it, or None; a calibration that failed
    MAX_BASELINE_FAILURES times in a row leaves `session.stop_error`, which the loop's
    stop_reason says."""
    session = driver.session
    if stopped := preflight_new_session(session):
        return stopped
    if not calibrate_on_a_host(driver, fresh=False):
        return "interrupted by a signal during calibration"
    if session.stop_error is None and not session.options.accept_noise:
        stopped = refuse_noise(session, lambda: calibrate_on_a_host(driver, fresh=True))
    if session.stop_error is None and stopped is None:
        profile_best_aside(session, session.ws.tip(), harness_env(session))
    return stopped


def calibrate_on_a_host(driver: Driver, fresh: bool) -> bool:
    """The tip's calibration from a bench host, journaled and adopted as the best's (`fresh`:
    measured again, not the one the host holds). False when a signal stopped it."""
    session = driver.session
    tip = session.ws.tip()
    pairs = session.config.bench.calibration_runs // 2
    job = driver.job("calibrate", f"calibration-{tip[:12]}", tip, fresh=fresh)
    failures = losses = 0
    while True:
        session.progress.info(
            f"calibrating {tip[:10]} on a bench host: {pairs} runs in each arm, alternating"
        )
        result = _wait(driver, driver.submit(job, f"calibration-{failures}-{losses}"))
        if result is None:
            return False
        if isinstance(result, HostRun) and result.calibration is not None:
            break
        if driver.client.status != "running":
            # The scheduler went away with the job: waited for within its grace and sent
            # again, or the night stops naming it, as mid-night (Driver.mind_scheduler).
            driver.mind_scheduler()
            if session.stop.is_set():
                return False
            continue
        if _lost(result) and losses + 1 < MAX_WORKER_LOSSES:  # as an experiment's (landing)
            losses += 1
            session.progress.warn(
                f"the calibration was lost with the bench host running it "
                f"({type(result).__name__}: {result}); sending it again"
            )
            continue
        failures += 1
        why = result.detail if isinstance(result, HostRun) else f"{type(result).__name__}: {result}"
        session.progress.warn(f"the calibration of the best failed ({failures} in a row): {why}")
        if failures >= MAX_BASELINE_FAILURES:
            session.stop_error = (
                f"the best's calibration failed {failures} times in a row on the bench hosts "
                f"(the last: {why}): fix the bench or the hosts, and run again to resume"
            )
            return True
    # A fresh one always stands; one the host held, when this driver has not taken it up.
    if fresh or result.calibration_new or driver.unadopted(result.calibration):
        driver.journal_calibration(result.calibration, result.name)
    else:  # the one this driver took up before (a resumed night): said, as one measured is
        say_best(session, "best", f"the calibration {result.name} holds, taken up again")
    return True


def _lost(result: HostRun | Exception) -> bool:
    """A job lost with its host (killed under it, or cancelled with it), not one that failed."""
    from distributed import KilledWorker

    return isinstance(result, (KilledWorker, CancelledError))


def _wait(driver: Driver, future) -> HostRun | Exception | None:
    """The job's result, or what it raised (lost with its host, broken on it); None when a
    signal stopped the wait (the job is cancelled)."""
    from distributed import wait

    session = driver.session
    while future.status == "pending":
        if session.stop.is_set():
            future.cancel()
            return None
        # A future cancelled under the wait (its host lost) is found by its status.
        with contextlib.suppress(TimeoutError, CancelledError):
            wait([future], timeout=POLL_S)
    try:
        return future.result()
    except Exception as exc:  # cancelled, a host lost under it, the job broken on the host
        driver.drop_bundle()  # a host that died may have taken the only copy with it
        return exc
