"""The one driver: sends jobs to its executor's slots (executor.py) and lands their results
(landing.py), one keep at a time.

A night: send again what a dead driver left in flight -> get ready (the pre-flight here, the
best calibrated, the noise judged) -> repeat: ask the proposers for as many hypotheses as there
are free slots, check each patch and send it; land each result as it comes (replay the rule,
measure a stale win again, the checks and the keep, the record); a keep's new best calibrated
before anything is measured against it.
"""

from __future__ import annotations

import socket
from collections import deque
from typing import Any

from ..bench.jobs import CALIBRATE, EXPERIMENT, Job, JobResult
from ..errors import UserError
from ..journal.records import CalibrationRecord, ConfirmationRecord
from ..proposers import Hypothesis
from ..statuses import Status
from .confirm import confirmation
from .executor import Executor, Flight, Lost
from .flights import announce, flight_marker, resumed_flights
from .landing import Landing
from .lifecycle import Candidate, begin, new_draft
from .proposing import proposal_context
from .session import Session, harness_env
from .stages import (
    preflight_new_session,
    refuse_noise,
    restore_calibration,
    second_look_hypothesis,
    stop_reason,
)

__all__ = ["NOTHING_LEFT", "Night"]

POLL_S = 0.5  # how long the driver waits for a result before it looks at the stop flag again
NOTHING_LEFT = "no hypotheses left: the proposers have none, and none undecided to look at again"


class Night(Landing):
    """Sends jobs to the executor's slots and lands their results, one keep at a time."""

    def __init__(self, session: Session, executor: Executor):
        self.session = session
        self.executor = executor
        self.flights: list[Flight] = []  # out on the executor
        self.again: deque[Flight] = deque()  # to send before asking the proposers for more
        # What the proposers say changes only when a result lands: no asking again till then.
        self.ask = True
        self.calibrations: dict[str, list[CalibrationRecord]] = {}
        self.calibrating: set[str] = set()  # commits a job out may be calibrating
        self.stopped: str | None = None  # why a signal stopped a step between experiments
        if executor.resumes_flights:
            session.paths.flights.mkdir(parents=True, exist_ok=True)
        last = session.journal.digest().calibrations[-1:]
        if last and last[0].get("commit") == session.ws.tip():  # the journal's, of the tip
            self.calibrations[session.ws.tip()] = [CalibrationRecord.from_dict(last[0])]

    # -- the night ---------------------------------------------------------------------------

    def run(self) -> str:
        """Experiments until a stop condition; why it stopped."""
        session = self.session
        self.again.extend(resumed_flights(session))
        reason = self.get_ready()
        while True:
            self.mind_outage()
            reason = reason or self.stopped or stop_reason(session)
            self.fill(proposing=reason is None)
            if not self.flights:
                return reason or NOTHING_LEFT
            self.land_some()
            if session.stop.is_set():
                return self.stopped or self._interrupted()

    def _interrupted(self) -> str:
        if any(self.session.paths.flights.glob("*.json")):
            return "interrupted by a signal (the experiments in flight run again on resume)"
        return "interrupted by a signal"

    def get_ready(self, reuse: bool = False) -> str | None:
        """Before the first experiment: the pre-flight on the base of a new session, the best
        calibrated (`reuse`: the journal's last stands when it measured the tip), the noise
        judged (unless `--accept-noise`; not for a `try`). Why a signal stopped it, or None."""
        session = self.session
        if stopped := preflight_new_session(session):
            return stopped
        if reuse and restore_calibration(session):
            return None
        if not self.calibrate(fresh=False):
            return "interrupted by a signal during calibration"
        if reuse or session.stop_error is not None or session.options.accept_noise:
            return None
        return refuse_noise(session, lambda: self.calibrate(fresh=True))

    def calibrate(self, fresh: bool) -> bool:
        """The tip's calibration, waited for: journaled and adopted as the best's (`fresh`:
        measured again, not one a slot holds). False when a signal stopped it; a calibration
        that failed MAX_BASELINE_FAILURES times in a row leaves `session.stop_error`."""
        flight = Flight(CALIBRATE, parent=self.session.ws.tip(), fresh=fresh)
        while True:
            result = self.await_flight(flight)
            if result is None:
                return False
            if not self.land_calibration(flight, result):
                return self.stopped is None

    def fill(self, proposing: bool) -> None:
        """Send jobs until every slot has one: what is to be sent again first (a new best's
        calibration even when the night is ending), then what the proposers give."""
        session = self.session
        while not session.stop.is_set() and len(self.flights) < self.executor.slots():
            if self.again and (proposing or self.again[0].kind != EXPERIMENT):
                self.send(self.again.popleft())
                continue
            if not proposing or not self.ask:
                return
            out = sum(f.kind == EXPERIMENT for f in self.flights)
            if session.tally.done + out >= session.config.budget.max_experiments:
                return
            hypothesis = self.propose()
            if hypothesis is None:
                self.ask = False  # a proposer that learns from each result waits for one
                return
            flight = self.begin_flight(hypothesis)
            if flight is not None:
                self.send(flight)

    def propose(self) -> Hypothesis | None:
        """The proposers' next hypothesis not already out; with none out, a second look."""
        session = self.session
        context = proposal_context(session)
        flying = {f.candidate.hypothesis.sha256 for f in self.flights if f.candidate}
        context.tried = session.tried | flying
        hypothesis = session.proposer.next(context)
        if hypothesis is None and not self.flights:
            hypothesis = second_look_hypothesis(session)
        for note in context.notes:
            session.progress.warn(note)
        if hypothesis is None or hypothesis.sha256 in flying:
            return None
        return hypothesis

    def begin_flight(self, hypothesis: Hypothesis) -> Flight | None:
        """The driver's half before the bench: number, draft, patch checks. None when the
        hypothesis ended here (its record is written)."""
        session = self.session
        n = session.tally.next_n
        session.tally.next_n += 1
        announce(session, hypothesis, n)
        marker = flight_marker(session, n, self.executor.resumes_flights)
        draft = new_draft(session, hypothesis, n, marker)
        started = begin(session, hypothesis, draft)
        if not isinstance(started, Candidate):
            self.record(draft, started)
            return None
        started.draft.phase("bench")
        return Flight(EXPERIMENT, parent=session.ws.tip(), candidate=started)

    def send(self, flight: Flight) -> None:
        """Out to a slot, with what the night knows of its parent's calibrations."""
        if flight.candidate is not None:
            flight.draft.note(parent_commit=flight.parent)
            flight.draft.save()
        known = self.calibrations.get(flight.parent, [])
        fresh_one = flight.kind == CALIBRATE
        flight.calibrating = fresh_one or (not known and flight.parent not in self.calibrating)
        if flight.calibrating:
            self.calibrating.add(flight.parent)
        flight.job = self.job(flight, known)
        self.executor.start(flight)
        self.flights.append(flight)

    def job(self, flight: Flight, known: list[CalibrationRecord]) -> Job:
        """What a slot needs to measure `flight`."""
        session, candidate = self.session, flight.candidate
        return Job(
            kind=flight.kind,
            exp_id=flight.exp_id,
            config=session.config,
            branch=session.ws.branch,
            parent=flight.parent,
            patch=candidate.hypothesis.patch if candidate is not None else b"",
            paths=tuple(candidate.paths) if candidate is not None else (),
            tip=flight.tip,
            env=harness_env(session),
            runs=flight.runs,
            calibrations=tuple(known),
            calibrate=flight.calibrating,
            fresh=flight.fresh,
            fallbacks=self.fallbacks(flight.parent),
            origin=socket.gethostname(),
            runner=session.options.runner,
        )

    def fallbacks(self, commit: str) -> tuple[CalibrationRecord, ...]:
        """The latest calibration of another best for each kind of host, in landing order."""
        latest: dict[str | None, CalibrationRecord] = {}
        for of, records in self.calibrations.items():
            if of != commit:
                for record in records:
                    latest.pop(record.host_kind, None)
                    latest[record.host_kind] = record
        return tuple(latest.values())

    def land_some(self) -> None:
        """What came back within POLL_S, landed."""
        for flight, result in self.executor.landed(POLL_S):
            self._returned(flight)
            if flight.kind == EXPERIMENT:
                self.land(flight, result)
            elif flight.kind == CALIBRATE and self.land_calibration(flight, result):
                self.again.appendleft(flight)

    def _returned(self, flight: Flight) -> None:
        self.flights.remove(flight)
        self.ask = True
        if flight.calibrating:  # landed or lost: a later job may measure the best's
            flight.calibrating = False
            self.calibrating.discard(flight.parent)

    def await_flight(self, flight: Flight) -> JobResult | Lost | None:
        """Send `flight` with nothing else out and wait for it; None when a signal stopped the
        wait (the job is dropped)."""
        assert not self.flights, "a job waited for is the only one out"
        self.send(flight)
        while True:
            self.mind_outage()
            if flight in self.again:  # an outage the executor came back from: send it again
                self.again.remove(flight)
                self.send(flight)
            if self.session.stop.is_set():
                self.cancel()
                return None
            for landed, result in self.executor.landed(POLL_S):
                self._returned(landed)
                if landed is flight:
                    return result

    def mind_outage(self) -> None:
        """An executor that lost every job out (a scheduler) and came back: they are sent
        again; one that did not: the experiments out are recorded as interrupted (run again
        on resume), and the night stops naming it."""
        outage = self.executor.outage()
        if outage is None:
            return
        session = self.session
        flying = self.flights + list(self.again)
        self.flights = []
        self.calibrating.clear()  # those jobs are gone: the next sent for a best calibrates it
        if outage.back:
            session.progress.info(f"{outage.why}: sending the {len(flying)} job(s) out again")
            self.again = deque(flying)
            return
        for flight in flying:
            if flight.candidate is not None:
                why = outage.why
                self.record(flight.draft, flight.draft.finish(Status.INTERRUPTED, why, error=why))
        self.again.clear()
        if session.stop.is_set():
            return  # the loop ends the night as a signal ends it
        flown = (
            "the experiments in flight are recorded as interrupted and run again when the "
            "session resumes"
            if flying
            else "nothing was in flight; run again once it is back"
        )
        raise UserError(f"{outage.why}: {flown}")

    def confirm(self, **what: Any) -> ConfirmationRecord | None:
        """The session's base against its tip (or what `confirmation` is told), measured by the
        executor and journaled."""
        return confirmation(self.session, self.await_flight, **what)

    def cancel(self) -> None:
        """The jobs out are dropped; their markers stay."""
        self.executor.cancel()
        self.flights = []
