"""The driver's half after a bench host measured: replay the rule on the host's runs, re-measure
a win whose best has moved, then conclude as every experiment concludes (loop/lifecycle.py:
the checks here under the guard and the seal, keep or not), and journal."""

from __future__ import annotations

from concurrent.futures import CancelledError
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..bench.holdout_runs import holdout_verdict
from ..decide.calibration import Calibration, calibrated_config
from ..errors import UserError
from ..journal.decision import Decision
from ..journal.draft import Draft
from ..journal.placement import HostFacts, StaleWin
from ..journal.records import CalibrationRecord, ExperimentRecord
from ..loop.best_profile import profile_best_aside
from ..loop.lifecycle import Candidate, Measured, conclude
from ..loop.retention import enforce_log_budget
from ..loop.session import Session, harness_env
from ..loop.stages import account, announce_calibration
from ..statuses import RemeasureWhen, Status
from .hostrun import HostRun

__all__ = ["Flight", "Landing"]

MAX_WORKER_LOSSES = 3  # hosts lost under one experiment before it is recorded as a crash


@dataclass
class Flight:
    """An experiment out on a bench host, and what it needs to land."""

    candidate: Candidate
    parent: str
    future: Any = None
    losses: int = 0  # hosts that died under it
    facts: HostFacts = field(default_factory=HostFacts)  # the record's `cluster`, once landed
    calibrating: bool = False  # the job that may measure its parent's calibration

    @property
    def exp_id(self) -> str:
        return self.candidate.exp_id

    @property
    def stale(self) -> list[StaleWin]:
        """Its wins measured against a best that had moved by the time they landed."""
        return self.facts.stale

    @property
    def draft(self) -> Draft:
        return self.candidate.draft


class Landing:
    """What a result needs to land; mixed into the driver, whose session and queue it uses."""

    session: Session
    client: Any  # the Dask client
    calibrations: dict[str, list[CalibrationRecord]]  # the hosts' calibrations, by commit
    calibrating: set[str]  # commits a job in flight may be calibrating
    again: Any  # deque[Flight]: sent again before the proposers are asked for more
    _bundle: Any  # the scattered bundle of the best: dropped when a host is lost with it

    def land(self, flight: Flight) -> None:
        from distributed import KilledWorker

        session = self.session
        self._ask = True
        session.progress.about(flight.draft.fields["n"], flight.draft.started_at)
        if flight.calibrating:  # landed or lost: a later job may measure the best's
            flight.calibrating = False
            self.calibrating.discard(flight.parent)
        if self.client.status != "running":
            # The scheduler went away and took the future with it, not a host: the loop waits
            # for it to come back and sends this again (Driver.mind_scheduler).
            self.again.append(flight)
            return
        try:
            result = flight.future.result()
        except (KilledWorker, CancelledError) as exc:
            # The host died under it (Dask already ran it again elsewhere, up to its limit), or
            # took the only copy of the bundle with it: send it again, with a fresh bundle.
            self.drop_bundle()
            flight.losses += 1
            if flight.losses < MAX_WORKER_LOSSES:
                session.progress.warn(
                    f"{flight.exp_id}: lost with the bench host running it "
                    f"({type(exc).__name__}: {exc}); sending it again"
                )
                self.again.appendleft(flight)
                return
            why = f"{flight.losses} bench hosts died running it: {exc}"
            self.record(flight.draft, flight.draft.finish(Status.CRASH, why, error=why))
            return
        except Exception as exc:  # the job itself broke on the host: undecided, runs again
            why = f"the bench host could not run it: {type(exc).__name__}: {exc}"
            self.record(flight.draft, flight.draft.finish(Status.INTERRUPTED, why, error=why))
            return
        self.settle(flight, result)

    def drop_bundle(self) -> None:
        """A host lost may have taken the only copy of the bundle: the next job sends it anew."""
        self._bundle = None

    def settle(self, flight: Flight, result: HostRun) -> None:
        """A host's result, journaled: its failure as the loop maps it, or the rule's decision
        on its samples (measured again first when a keep since touched its files)."""
        session = self.session
        host = result.name
        calibration = result.calibration
        if calibration is not None and (result.calibration_new or self.unadopted(calibration)):
            self.journal_calibration(calibration, host)
        flight.facts = HostFacts(
            patch=str(flight.candidate.patch_file),
            host=host,
            worker=result.worker,
            environment=dict(result.environment),
            started_at=result.started_at,
            ended_at=result.ended_at,
            stale=flight.stale,
        )
        flight.draft.note(cluster=flight.facts.to_dict())
        if result.confinement is not None:  # as the serial loop notes its own runs'
            flight.draft.note(confinement=result.confinement.to_dict())
        measured = self.copy_logs(flight.exp_id, result)
        if result.failure is not None:
            status = result.failure  # mapped on the host, as the loop maps it
            why = f"on {host}: {result.detail}"
            finished = flight.draft.finish(status, why, error=why, **measured.fields())
            self.record(flight.draft, finished)
            return
        decision = self.replay(result)
        tip = session.ws.tip()
        if decision.status == Status.KEEP and flight.parent != tip:
            moved = self.moved_files(flight.parent, tip)
            always = session.config.cluster.remeasure_when == RemeasureWhen.ALWAYS
            if always or moved & set(flight.candidate.paths):
                self.measure_again(flight, decision, host, measured)
                return
            # The keeps since touched none of its files: kept on its evidence against the best
            # it was measured on (parent_commit), committed on the new one, and said so.
            session.progress.info(
                f"{flight.exp_id} won against {flight.parent[:10]}; the keeps since, up to "
                f"{tip[:10]}, touched none of its files: kept on that measurement"
            )
            flight.facts = replace(flight.facts, kept_on=tip)
            flight.draft.note(cluster=flight.facts.to_dict())
            flight.parent = tip
        self.finish(flight, decision, measured)

    def moved_files(self, old: str, new: str) -> set[str]:
        """The files the keeps from `old` to `new` changed."""
        listed = self.session.ws.source.must("diff", "--name-only", "-z", old, new)
        return {path for path in listed.split("\0") if path}

    def replay(self, result: HostRun) -> Decision:
        """The decision rule on the host's samples, with the host's own calibration: the
        decision is the driver's."""
        if result.calibration is None:  # a host measures an experiment by one: only with a bug
            raise UserError("the host's result holds no calibration to judge it by")
        config = calibrated_config(self.session.config, result.calibration)
        judge = Calibration.from_record(result.calibration, config.metric.name).judge(config)
        decision = judge.replay(*result.samples)
        if decision is None:  # the host stopped before a look: only with a bug; say so
            raise UserError("the host's runs end before any look of the rule")
        if decision.status != Status.KEEP or not config.holdout.command:
            return decision
        if result.holdout is None:  # a host runs the holdout before a keep: only with a bug
            raise UserError("the host's result holds no holdout runs to judge its keep by")
        name = config.holdout_metric.name
        best, candidate = result.holdout
        return holdout_verdict(
            config,
            decision,
            best.samples.get(name, []),
            candidate.samples.get(name, []),
            result.holdout_seconds,
        )

    def measure_again(
        self, flight: Flight, decision: Decision, host: str, measured: Measured
    ) -> None:
        """A win against a best that has moved: never kept on that evidence (its record, when
        it ends here, holds it all the same)."""
        session = self.session
        measured = replace(measured, decision=decision)
        flight.draft.note(asi={"result": decision.reason})
        primary = decision.evidence
        stale = StaleWin(
            flight.parent, host, primary.change_pct, [primary.ci_low_pct, primary.ci_high_pct]
        )
        flight.facts = replace(flight.facts, stale=[*flight.stale, stale])
        flight.draft.note(cluster=flight.facts.to_dict())
        tip = session.ws.tip()
        applied = session.ws.apply(flight.candidate.patch_file)
        session.ws.revert()
        if not applied.ok:
            why = (
                f"it won against {flight.parent[:10]}, but does not apply to the new best "
                f"{tip[:10]}: {applied.message}"
            )
            self.record(
                flight.draft,
                flight.draft.finish(Status.APPLY_FAILED, why, error=why, **measured.fields()),
            )
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

    def finish(self, flight: Flight, decision: Decision, measured: Measured) -> None:
        """Concluded as every experiment is (loop/lifecycle.py), on the driver: the checks run
        only against the best it was measured on."""
        session = self.session
        checks = flight.parent == session.ws.tip()
        record = conclude(
            session, flight.candidate, decision, measured, checks=checks, applied=False
        )
        self.record(flight.draft, record)
        if record.status == Status.KEEP and record.kept_commit is not None:
            host = record.cluster.host if record.cluster is not None else None
            session.progress.info(
                f"kept {record.id} (measured on {host}); new best {record.kept_commit[:10]}"
            )

    def record(self, draft: Draft, record: ExperimentRecord) -> None:
        """Journal it, then forget its marker: in that order, so that nothing is lost."""
        self.session.progress.about(record.n, draft.started_at)
        account(self.session, record)
        draft.marker.unlink(missing_ok=True)
        enforce_log_budget(self.session)  # between landings, as between serial experiments
        if record.status == Status.KEEP and record.kept_commit:  # the new best's, as serially
            profile_best_aside(self.session, record.kept_commit, harness_env(self.session))

    def unadopted(self, calibration: CalibrationRecord) -> bool:
        """A host's calibration of the best that this driver has not taken up: one a host
        measured for a driver that died before it landed."""
        session = self.session
        current = session.calibration.commit if session.calibration is not None else None
        return calibration.commit == session.ws.tip() and calibration.commit != current

    def journal_calibration(self, calibration: CalibrationRecord, host: str) -> None:
        """A host's calibration, journaled; the tip's adopted as the best's."""
        session = self.session
        record = replace(calibration, host=host)
        session.journal.append(record)
        self.calibrations.setdefault(record.commit, []).append(record)
        if record.commit == session.ws.tip():  # the best: adopted and said as serially
            announce_calibration(session, record, host)
            return
        noise = record.noise_pct.get(session.config.metric.name) or 0.0
        session.progress.info(
            f"calibrated {record.commit[:10]} on {host} (no longer the best): noise "
            f"{noise:.2f}%, threshold {record.threshold_pct or 0:.2f}%"
        )

    def copy_logs(self, exp_id: str, result: HostRun) -> Measured:
        """The host's log tails under the session's logs; what the record says of them."""
        session = self.session
        for name, text in result.logs.items():
            path = session.paths.log(exp_id, Path(name).stem)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        arms = result.arms
        return Measured(
            bench_logs=[
                str(session.paths.log(exp_id, Path(name).stem)) for name in result.log_names
            ],
            bench_durations_s=[d for arm in arms for d in arm.durations],
            bench_tail=arms[1].tail,
        )
