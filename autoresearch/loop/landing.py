"""What comes back from an executor, landed: one path for every executor.

An experiment's result: a slot lost under it sends it again (up to MAX_WORKER_LOSSES); its
failure becomes its record; else the rule is replayed on its runs with the calibration it was
judged by (the decision is the driver's, wherever the runs were made), a win whose best moved
meanwhile is measured again on the new best, and the rest concludes as every experiment does
(lifecycle.conclude: the checks under the guard and the seal, keep or revert), and is
journaled. A calibration's result: journaled and adopted as the best's, or counted as a
failure of the best. Nothing here knows which executor measured.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace

from ..bench.holdout_runs import holdout_verdict
from ..bench.jobs import JobResult
from ..decide.calibration import Calibration, calibrated_config
from ..errors import UserError
from ..journal.decision import Decision
from ..journal.draft import Draft, now_iso
from ..journal.placement import HostFacts, LostHost, StaleWin
from ..journal.records import CalibrationRecord, ExperimentRecord
from ..statuses import RemeasureWhen, Status
from .best_profile import profile_best
from .executor import CALIBRATE, Executor, Flight, Lost
from .lifecycle import Measured, conclude, tampered
from .retention import enforce_log_budget
from .session import Session
from .stages import (
    MAX_BASELINE_FAILURES,
    account,
    announce_calibration,
    say_best,
)

__all__ = ["MAX_WORKER_LOSSES", "Landing"]

MAX_WORKER_LOSSES = 3  # slots lost under one job before it is recorded as a crash


class Landing:
    """What a result needs to land; mixed into the driver, whose session and queues it uses."""

    session: Session
    executor: Executor
    calibrations: dict[str, list[CalibrationRecord]]  # journaled, by commit
    again: deque[Flight]  # sent again before the proposers are asked for more
    stopped: str | None  # why a signal stopped a step between experiments
    last: ExperimentRecord | None = None  # the last record journaled

    def land(self, flight: Flight, result: JobResult | Lost) -> None:
        """An experiment's result, journaled (or the experiment sent again)."""
        session = self.session
        session.progress.about(flight.draft.fields["n"], flight.draft.started_at)
        if isinstance(result, Lost):
            self._lost(flight, result)
            return
        if result.calibration is not None and (
            result.calibration_new or self.unadopted(result.calibration)
        ):
            self.journal_calibration(result.calibration, result.name)
        if result.name is not None:
            flight.facts = HostFacts(
                patch=str(flight.candidate.patch_file),  # type: ignore[union-attr]
                host=result.name,
                worker=result.worker,
                environment=dict(result.environment),
                started_at=result.started_at,
                ended_at=result.ended_at,
                stale=flight.stale,
                lost=flight.facts.lost,
            )
            flight.draft.note(cluster=flight.facts.to_dict())
        if result.confinement is not None:
            flight.draft.note(confinement=result.confinement.to_dict())
        measured = Measured.of(result)
        if result.failure is not None:
            self._failed(flight, result, measured)
            return
        decision = replay(session, result)
        moved = flight.parent != session.ws.tip()
        if decision.status == Status.KEEP and moved and self._stale(flight, decision, measured):
            return
        checks = flight.parent == session.ws.tip()
        record = conclude(
            session,
            flight.candidate,  # type: ignore[arg-type]  # an experiment's
            decision,
            measured,
            guard=flight.here,
            checks=checks,
            applied=flight.here is not None,
        )
        self.record(flight.draft, record)
        if record.status == Status.KEEP and result.name is not None and record.kept_commit:
            session.progress.info(
                f"kept {record.id} (measured on {result.name}); new best {record.kept_commit[:10]}"
            )

    def _lost(self, flight: Flight, lost: Lost) -> None:
        """The slot died under it: sent again; the job broke there: undecided, runs again on a
        later night."""
        if lost.broken:
            why = f"the bench host could not run it: {lost.why}"
            self.record(flight.draft, flight.draft.finish(Status.INTERRUPTED, why, error=why))
            return
        flight.losses += 1
        if lost.sent:  # the record says which hosts died under it, and when
            gone = LostHost(host=lost.host, at=now_iso(), why=lost.why)
            flight.facts = replace(flight.facts, lost=[*flight.facts.lost, gone])
            flight.draft.note(cluster=flight.facts.to_dict())
        host = f"bench host {lost.host}" if lost.host else "the bench host running it"
        if flight.losses < MAX_WORKER_LOSSES:
            said = f"{host} was lost while it measured it" if lost.sent else "it was not sent"
            self.session.progress.warn(
                f"{flight.exp_id}: {said} ({lost.why}); measuring it again on another"
            )
            self.again.appendleft(flight)
            return
        why = f"{flight.losses} bench hosts died running it: {lost.why}"
        self.record(flight.draft, flight.draft.finish(Status.CRASH, why, error=why))

    def _failed(self, flight: Flight, result: JobResult, measured: Measured) -> None:
        """A measurement that failed, as its status; the driver's trees put back when it was
        measured in them."""
        session = self.session
        status = result.failure
        assert status is not None
        why = result.detail if result.name is None else f"on {result.name}: {result.detail}"
        if status == Status.TAMPERED and flight.here is not None:
            record = tampered(session, flight.here, flight.draft, why, measured)
            self.record(flight.draft, record)
            return
        if result.name is None:  # measured in the driver's own trees
            session.ws.revert()
        if status == Status.TAMPERED:
            session.progress.warn(f"tampering detected: {why}")
        if status == Status.APPLY_FAILED and session.attempts.get(
            flight.candidate.hypothesis.sha256  # type: ignore[union-attr]
        ):
            why = f"no longer applies to the current best {flight.parent[:10]}: {why}"
        self.record(flight.draft, flight.draft.finish(status, why, error=why, **measured.fields()))

    def _stale(self, flight: Flight, decision: Decision, measured: Measured) -> bool:
        """A win against a best that has moved: measured again when the keeps since touched its
        files (or always, `cluster.remeasure_when`): True when it ended or went out again; else
        it is kept on its measurement, committed on the new best, and said so."""
        session = self.session
        tip = session.ws.tip()
        moved = self.moved_files(flight.parent, tip)
        always = session.config.cluster.remeasure_when == RemeasureWhen.ALWAYS
        candidate = flight.candidate
        assert candidate is not None
        if always or moved & set(candidate.paths):
            self.measure_again(flight, decision, measured)
            return True
        session.progress.info(
            f"{flight.exp_id} won against {flight.parent[:10]}; the keeps since, up to "
            f"{tip[:10]}, touched none of its files: kept on that measurement"
        )
        flight.facts = replace(flight.facts, kept_on=tip)
        flight.draft.note(cluster=flight.facts.to_dict())
        flight.parent = tip
        return False

    def moved_files(self, old: str, new: str) -> set[str]:
        """The files the keeps from `old` to `new` changed."""
        listed = self.session.ws.source.must("diff", "--name-only", "-z", old, new)
        return {path for path in listed.split("\0") if path}

    def measure_again(self, flight: Flight, decision: Decision, measured: Measured) -> None:
        """A win against a best that has moved: never kept on that evidence (its record, when
        it ends here, holds it all the same)."""
        session = self.session
        measured = replace(measured, decision=decision)
        flight.draft.note(asi={"result": decision.reason})
        primary = decision.evidence
        host = flight.facts.host or "here"
        stale = StaleWin(
            flight.parent, host, primary.change_pct, [primary.ci_low_pct, primary.ci_high_pct]
        )
        flight.facts = replace(flight.facts, stale=[*flight.stale, stale])
        flight.draft.note(cluster=flight.facts.to_dict())
        tip = session.ws.tip()
        candidate = flight.candidate
        assert candidate is not None
        applied = session.ws.apply(candidate.patch_file)
        session.ws.revert()
        if not applied.ok:
            why = (
                f"it won against {flight.parent[:10]}, but does not apply to the new best "
                f"{tip[:10]}: {applied.message}"
            )
            finished = flight.draft.finish(Status.APPLY_FAILED, why, error=why, **measured.fields())
            self.record(flight.draft, finished)
            return
        if len(flight.stale) > session.config.cluster.remeasure:
            why = (
                f"it won {len(flight.stale)} times against a best that had moved by the time "
                f"it landed (cluster.remeasure = {session.config.cluster.remeasure}); undecided"
            )
            finished = flight.draft.finish(Status.INCONCLUSIVE, why, **measured.fields())
            self.record(flight.draft, finished)
            return
        session.progress.info(
            f"{flight.exp_id} won against {flight.parent[:10]}, but the best is now "
            f"{tip[:10]}: measuring it again there before it may be kept"
        )
        flight.parent = tip
        self.again.appendleft(flight)

    def record(self, draft: Draft, record: ExperimentRecord) -> None:
        """Journal it, then forget its marker: in that order, so that nothing is lost. A keep
        is the new best: calibrated before anything is measured against it."""
        session = self.session
        session.progress.about(record.n, draft.started_at)
        account(session, record)
        self.last = record
        draft.marker.unlink(missing_ok=True)
        enforce_log_budget(session)
        if record.status == Status.KEEP and record.kept_commit:
            self.again.appendleft(Flight(CALIBRATE, parent=record.kept_commit))

    def land_calibration(self, flight: Flight, result: JobResult | Lost) -> bool:
        """A calibration's result: journaled and adopted, or said as the one the slot holds;
        a failure counted (MAX_BASELINE_FAILURES in a row stop the night: `stop_error`).
        True when it is to be measured again."""
        session = self.session
        if isinstance(result, Lost) and not result.broken:
            flight.losses += 1
            if result.sent:  # its record says which hosts died under it, and when
                gone = LostHost(host=result.host, at=now_iso(), why=result.why)
                flight.facts = replace(flight.facts, lost=[*flight.facts.lost, gone])
            if flight.losses < MAX_WORKER_LOSSES:
                host = f"bench host {result.host}" if result.host else "the bench host"
                session.progress.warn(
                    f"the calibration was lost with {host} running it ({result.why}); "
                    "sending it again"
                )
                return True
        if isinstance(result, JobResult) and result.calibration is not None:
            session.tally.baseline_failures = 0
            calibration = result.calibration
            if flight.facts.lost:
                calibration = replace(calibration, lost=[g.to_dict() for g in flight.facts.lost])
            if flight.fresh or result.calibration_new or self.unadopted(calibration):
                self.journal_calibration(calibration, result.name)
            else:  # the one this night took up before (a resumed night), said as measured
                say_best(session, "best", f"the calibration {result.name} holds, taken up again")
            return False
        if isinstance(result, JobResult) and result.failure == Status.INTERRUPTED:
            self.stopped = "interrupted by a signal during calibration"
            return False
        return self._calibration_failed(result)

    def _calibration_failed(self, result: JobResult | Lost) -> bool:
        session = self.session
        why = result.why if isinstance(result, Lost) else result.detail
        if isinstance(result, JobResult) and result.name is not None:
            why = f"on {result.name}: {why}"
        session.tally.baseline_failures += 1
        failures = session.tally.baseline_failures
        session.progress.warn(f"the calibration of the best failed ({failures} in a row): {why}")
        if failures < MAX_BASELINE_FAILURES:
            return True
        session.stop_error = (
            f"the best's bench failed {failures} times in a row (the last in its calibration: "
            f"{why}): the bench or the machine is broken; fix it, and run again to resume"
        )
        return False

    def unadopted(self, calibration: CalibrationRecord) -> bool:
        """A slot's calibration of the best that this night has not taken up: one a host
        measured for a driver that died before it landed."""
        session = self.session
        current = session.calibration.commit if session.calibration is not None else None
        return calibration.commit == session.ws.tip() and calibration.commit != current

    def journal_calibration(self, calibration: CalibrationRecord, host: str | None) -> None:
        """A calibration, journaled; the tip's adopted as the best's, said, and profiled."""
        session = self.session
        record = replace(calibration, host=host) if host is not None else calibration
        session.journal.append(record)
        self.calibrations.setdefault(record.commit, []).append(record)
        if record.commit == session.ws.tip():  # the best: adopted and said
            announce_calibration(session, record, host)
            profile_best(session, record.commit)
            return
        noise = record.noise_pct.get(session.config.metric.name) or 0.0
        session.progress.info(
            f"calibrated {record.commit[:10]} on {host} (no longer the best): noise "
            f"{noise:.2f}%, threshold {record.threshold_pct or 0:.2f}%"
        )


def replay(session: Session, result: JobResult) -> Decision:
    """The decision rule on a slot's samples, with the calibration it judged by: the decision
    is the driver's, wherever the runs were made."""
    if result.calibration is None:  # a slot measures an experiment by one: only with a bug
        raise UserError("the result holds no calibration to judge it by")
    config = calibrated_config(session.config, result.calibration)
    judge = Calibration.from_record(result.calibration, config.metric.name).judge(config)
    decision = judge.replay(*result.samples)
    if decision is None:  # the slot stopped before a look: only with a bug; say so
        raise UserError("the runs end before any look of the rule")
    if decision.status != Status.KEEP or not config.holdout.command:
        return decision
    if result.holdout is None:  # a slot runs the holdout before a keep: only with a bug
        raise UserError("the result holds no holdout runs to judge its keep by")
    name = config.holdout_metric.name
    best, candidate = result.holdout
    return holdout_verdict(
        config,
        decision,
        best.samples.get(name, []),
        candidate.samples.get(name, []),
        result.holdout_seconds,
    )
