"""This machine as the night's executor: one slot, the session's own two worktrees.

A job is measured when the driver asks for what landed (the one slot is the driver's own
thread, so that a signal stops it as it stops everything else). An experiment's candidate is
applied in the session's worktree and measured there against the best's tree under the tree
guard and the seal of the driver's own checkout; it stays applied, under that guard, for the
checks and the keep (landing.py: `Flight.here`). A calibration measures the best against
itself in the two trees; a confirmation the base against a tip.
"""

from __future__ import annotations

from ..bench.calibrate import CalibrationFailed, calibrate
from ..bench.jobs import CALIBRATE, CONFIRM, JobResult
from ..bench.measure import BASELINE, CANDIDATE, PairMeasurement, measure_pair
from ..decide.calibration import Calibration, calibrated_config
from ..errors import UserError
from ..statuses import Status
from .executor import Flight, Lost
from .lifecycle import measure_guarded, session_guard
from .session import Session, StopRequested, log_label, marker, prepare_best

__all__ = ["LocalExecutor"]


class LocalExecutor:
    """One slot: the session's worktrees, here."""

    # An experiment that dies with the driver is recorded as interrupted on the next run
    # (recovery.py), its one marker `inflight.json`: nothing but the driver was measuring it.
    resumes_flights = False

    def __init__(self, session: Session):
        self.session = session
        self.queue: list[Flight] = []

    def slots(self) -> int:
        return 1

    def start(self, flight: Flight) -> None:
        self.queue.append(flight)

    def landed(self, timeout: float) -> list[tuple[Flight, JobResult | Lost]]:
        done: list[tuple[Flight, JobResult | Lost]] = []
        while self.queue:
            flight = self.queue.pop(0)
            done.append((flight, self.measure(flight)))
        return done

    def outage(self) -> None:
        return None  # the driver's own machine: if it is gone, so is the night

    def cancel(self) -> None:
        self.queue.clear()

    def measure(self, flight: Flight) -> JobResult:
        assert flight.job is not None
        if flight.job.kind == CALIBRATE:
            return self._calibrate(flight)
        if flight.job.kind == CONFIRM:
            return self._confirm(flight)
        return self._experiment(flight)

    def _experiment(self, flight: Flight) -> JobResult:
        """The candidate applied in the session's worktree, built and run against the best,
        alternating, until the rule decides; left applied for the landing."""
        session, job, candidate = self.session, flight.job, flight.candidate
        assert job is not None and candidate is not None
        applied = session.ws.apply(candidate.patch_file)
        if not applied.ok:
            why = applied.message
            return JobResult(failure=Status.APPLY_FAILED, failed_arm=CANDIDATE, detail=why)
        try:
            prepare_best(session, session.ws.tip(), flight.exp_id)
        except StopRequested as exc:
            session.ws.revert()
            return JobResult(failure=Status.INTERRUPTED, detail=str(exc))
        if not job.calibrations:  # the driver calibrates the best before it sends one
            raise UserError(f"{flight.exp_id}: no calibration of {job.parent[:10]} to judge by")
        calibration = job.calibrations[-1]
        config = calibrated_config(job.config, calibration)
        judge = Calibration.from_record(calibration, config.metric.name).judge(config)
        flight.here = session_guard(session, candidate.paths)
        harness = session.harness(flight.draft.running)

        def progress(arm: str, i: int) -> None:
            if arm == BASELINE:
                session.progress.phase(f"bench pair {i} (decides by {judge.cap})")

        pair = measure_guarded(
            harness,
            (session.baseline_tree.path, session.ws.path),
            lambda name: session.paths.log(flight.exp_id, name),
            flight.here,
            judge=judge,
            on_run=progress,
        )
        confinement = harness.confinement(session.ws.path)
        return JobResult.of_pair(pair, calibration=calibration, confinement=confinement)

    def _calibrate(self, flight: Flight) -> JobResult:
        """The best against itself in both trees (the worktree is clean at the tip: recovery,
        a keep and a revert all end there)."""
        session, tip = self.session, flight.parent
        label = log_label(session, "calibration")
        pairs = session.config.bench.calibration_runs // 2
        session.progress.info(f"calibrating on {tip[:10]}: {pairs} runs in each arm, alternating")
        try:
            prepare_best(session, tip, label)
            record = calibrate(
                session.config,
                session.harness(marker(session, "calibration")),
                arms=(session.baseline_tree.path, session.ws.path),
                commit=tip,
                logs=lambda name: session.paths.log(label, name),
                on_run=lambda arm, i: (
                    session.progress.info(f"calibration pair {i}/{pairs}")
                    if arm == BASELINE
                    else None
                ),
            )
        except StopRequested as exc:
            return JobResult(failure=Status.INTERRUPTED, detail=str(exc))
        except CalibrationFailed as exc:
            return JobResult(failure=Status.BASELINE_FAILED, failed_arm=BASELINE, detail=str(exc))
        finally:
            session.ws.revert()
            session.paths.inflight.unlink(missing_ok=True)
        if record is None:
            return JobResult(failure=Status.INTERRUPTED, detail="calibration stopped by a signal")
        session.ws.mark_built()  # built at the best: its kept output is the best's
        return JobResult(calibration=record, calibration_new=True)

    def _confirm(self, flight: Flight) -> JobResult:
        """The base's tree against the worktree at the tip, `runs` pairs (and the holdout's)."""
        session, job = self.session, flight.job
        assert job is not None and job.tip is not None
        label = log_label(session, "confirmation")
        try:
            prepare_best(session, job.parent, label)
        except StopRequested as exc:
            session.paths.inflight.unlink(missing_ok=True)
            return JobResult(failure=Status.INTERRUPTED, detail=str(exc))
        pair = self._measure_tip(job.tip, job.runs, label)
        return JobResult.of_pair(pair)

    def _measure_tip(self, tip: str, runs: int, label: str) -> PairMeasurement:
        session = self.session
        session.ws.revert()
        if tip != session.ws.tip():
            session.ws.show(tip)
        harness = session.harness(marker(session, "confirmation"))
        try:
            pair = measure_pair(
                harness,
                (session.baseline_tree.path, session.ws.path),
                lambda name: session.paths.log(label, name),
                pairs=runs,
                holdout_pairs=runs if session.config.holdout.command else 0,
                on_run=lambda arm, i: (
                    session.progress.info(f"confirmation pair {i}/{runs}")
                    if arm == BASELINE
                    else None
                ),
            )
            if pair.failure is None and tip == session.ws.tip():
                session.ws.mark_built()  # the tip's own build: the reverts after it keep it
        finally:
            session.paths.inflight.unlink(missing_ok=True)
            session.ws.revert()
        return pair
