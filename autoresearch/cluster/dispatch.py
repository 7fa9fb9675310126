"""The loop on several bench hosts: experiments measured side by side, kept one at a time.

The driver is the loop of loop.py with the measuring sent out: it asks the proposers, checks
each patch against the scope, sends it to a bench host through Dask (`host.run_job`, holding
the worker resource `cluster.resource`, so that one host measures one experiment at a time), and
lands the results as they come: the decision rule replayed on the returned samples, the checks
and the keep commit here, on the session branch, one record each.

Keeps stay serial: a win measured against a best that has moved since (another experiment was
kept meanwhile) is measured again when the keeps since touched one of its files (always, with
`cluster.remeasure_when = "always"`): its patch is applied to the new best and measured again
(up to `cluster.remeasure` times), or recorded `apply_failed` when it no longer applies; else
it is kept on its measurement, committed on the new best, and said so (landing.py). A host
that dies takes nothing with it: Dask runs its job again elsewhere, and the record is written
once, here, when a result lands. A driver that dies leaves a marker per
experiment in flight (state `flights/`): the next run sends those again before asking for more.
"""

from __future__ import annotations

import contextlib
import socket
import time
import urllib.parse
from collections import deque
from collections.abc import Iterator
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

from ..config import Config
from ..errors import UserError
from ..journal.draft import Draft
from ..journal.records import CalibrationRecord
from ..loop.confirm import announce, confirmation_record, with_holdout
from ..loop.lifecycle import Candidate, begin, new_draft
from ..loop.proposing import proposal_context
from ..loop.session import RunOptions, Session, harness_env, open_session
from ..loop.stages import (
    SessionOutcome,
    confirm_wanted,
    second_look_hypothesis,
    session_outcome,
    stop_reason,
)
from ..progress import Progress
from ..proposers import Hypothesis
from ..repo.state_dir import read_inflight
from ..statuses import Status
from .host import QUIET_WORKER, QUIET_WORKER_ENV, Job, profiled_hosts, run_job
from .landing import Flight, Landing
from .ready import get_ready

__all__ = ["run_cluster_session"]

POLL_S = 0.5  # how often the driver looks at the stop flag while results are out
HOSTS_EVERY_S = 2.0  # how often it asks which bench hosts are there (a scheduler round trip)


def run_cluster_session(
    config: Config,
    scheduler: str,
    options: RunOptions | None = None,
    progress: Progress | None = None,
) -> SessionOutcome:
    """The session's loop with its experiments measured on the cluster at `scheduler`."""
    progress = progress or Progress()
    with (
        connect(config, scheduler, progress) as client,
        open_session(config, options, progress) as session,
    ):
        driver = Driver(session, client)
        try:
            reason = driver.loop()
        finally:
            driver.cancel()
            session.proposer.close()
        session.progress.info(f"stopped: {reason}")
        return session_outcome(
            session, reason, driver.confirm() if confirm_wanted(session) else None
        )


@contextlib.contextmanager
def connect(config: Config, scheduler: str, progress: Progress) -> Iterator[Any]:
    """A Dask client: to the scheduler at the address, or to `local:N` workers started here
    (each with its own directory and one unit of the bench resource)."""
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError:
        raise UserError(
            "a cluster needs Dask distributed: pip install 'autoresearch[cluster]'"
        ) from None
    resource = config.cluster.resource
    timeout = config.cluster.connect_timeout_s
    with contextlib.ExitStack() as stack:
        if scheduler.startswith("local:"):
            workers = int(scheduler.removeprefix("local:"))
            stack.enter_context(dask.config.set(QUIET_WORKER))  # handed to each worker
            cluster = stack.enter_context(
                LocalCluster(
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    resources={resource: 1},
                    dashboard_address=":0",
                )
            )
            address = cluster.scheduler_address
        else:
            address = scheduler
        try:
            _reachable(address, timeout)
            # The client's timeout is also how long it tries to reconnect to a scheduler that
            # went away: the grace a lost scheduler has to come back (Driver.mind_scheduler).
            grace = config.cluster.scheduler_grace_s
            client = stack.enter_context(Client(address, timeout=grace))
            client.wait_for_workers(1, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            raise UserError(
                f"cannot reach a Dask scheduler with workers at {scheduler} within {timeout:g} s "
                f"(cluster.connect_timeout_s): {exc}"
            ) from None
        hosts = bench_workers(client, resource)
        if not hosts:
            raise UserError(
                f"the workers at {scheduler} offer no '{resource}' resource: start each bench "
                f"host's worker with --resources {resource}=1 (cluster.resource)"
            )
        progress.info(f"cluster {address}: {len(hosts)} bench host(s)")
        profiled = profiled_hosts(client, hosts)
        if profiled:
            progress.warn(
                f"{len(profiled)} bench host(s) run Dask's profiler beside the bench (a sample "
                "every 10 ms): start their workers with "
                + " ".join(f"{name}={value}" for name, value in QUIET_WORKER_ENV.items())
            )
        yield client


def _reachable(address: str, timeout: float) -> None:
    """A TCP scheduler's port answers within `timeout` (the client itself would wait the whole
    grace of a lost scheduler for a mistyped address)."""
    parsed = urllib.parse.urlsplit(address)
    if parsed.scheme != "tcp" or parsed.hostname is None or parsed.port is None:
        return
    deadline = time.monotonic() + timeout
    while True:  # a scheduler starting beside the driver: refused until it listens
        try:
            left = max(0.1, deadline - time.monotonic())
            socket.create_connection((parsed.hostname, parsed.port), timeout=left).close()
            return
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(POLL_S / 5)


def bench_workers(client, resource: str) -> list[str]:
    """The workers that can take an experiment (they hold the bench resource); none while the
    scheduler is away."""
    try:
        workers = client.scheduler_info(n_workers=-1).get("workers", {})
    except OSError:  # the connection closed under the call (CommClosedError is one)
        return []
    return [
        address
        for address, info in workers.items()
        if (info.get("resources") or {}).get(resource, 0) >= 1
    ]


class Driver(Landing):
    """Sends experiments to bench hosts and lands their results, one keep at a time."""

    def __init__(self, session: Session, client):
        self.session = session
        self.client = client
        self.flights: list[Flight] = []
        self.again: deque[Flight] = deque()  # to send before asking the proposers for more
        self._bundle: tuple[str, Any] | None = None  # (tip, scattered bundle)
        # What the proposers say changes only when a result lands: no asking again till then.
        self._ask = True
        self._hosts: set[str] | None = None  # the bench hosts last seen (mind_hosts)
        self.calibrations: dict[str, list[CalibrationRecord]] = {}
        self.calibrating: set[str] = set()
        self._hosts_seen_at = float("-inf")
        session.paths.flights.mkdir(parents=True, exist_ok=True)

    # -- the loop ----------------------------------------------------------------------------

    def loop(self) -> str:
        session = self.session
        self.resume_flights()
        reason = get_ready(self)
        while True:
            self.mind_scheduler()
            self.mind_hosts()
            reason = reason or stop_reason(session)
            if reason is None:
                self.fill()
            if not self.flights:
                return reason or (
                    "no hypotheses left: the proposers have none, and none undecided to look "
                    "at again"
                )
            self.land_some()
            if session.stop.is_set():
                return "interrupted by a signal (the experiments in flight run again on resume)"

    def mind_scheduler(self) -> None:
        """A scheduler that went away: its futures are gone with it. Wait for it to come back
        (the client reconnects within cluster.scheduler_grace_s) and send what was in flight
        again; past the grace, record those experiments as interrupted (run again on resume)
        and stop with the address named."""
        if self.client.status == "running":
            return
        session, address = self.session, self.client.scheduler.address
        grace = session.config.cluster.scheduler_grace_s
        session.progress.warn(
            f"lost the Dask scheduler at {address}: waiting up to {grace:g} s for it to come "
            "back (cluster.scheduler_grace_s)"
        )
        # The client gives up by itself at the grace (its timeout): wait for it to say which.
        while self.client.status in ("connecting", "newly-created"):
            if session.stop.is_set():
                break
            time.sleep(POLL_S)
        flying = self.flights + list(self.again)
        self.flights, self._bundle = [], None
        self.again = deque(flying)
        self.calibrating.clear()  # those jobs are gone: the next sent for a best calibrates it
        if self.client.status == "running":
            session.progress.info(
                f"the scheduler at {address} is back: sending the {len(flying)} experiment(s) "
                "in flight again"
            )
            return
        why = f"the Dask scheduler at {address} was lost and did not come back within {grace:g} s"
        if session.stop.is_set():
            why = f"the Dask scheduler at {address} was lost, and a signal stopped the wait"
        for flight in flying:
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
        raise UserError(f"{why} (cluster.scheduler_grace_s): {flown}")

    def mind_hosts(self) -> None:
        """Say when a bench host joins or leaves (a host that dies leaves: Dask sends what it
        was measuring to another, and the driver says so when it lands)."""
        now = time.monotonic()
        if now < self._hosts_seen_at + HOSTS_EVERY_S:
            return
        self._hosts_seen_at = now
        hosts = set(bench_workers(self.client, self.session.config.cluster.resource))
        if self._hosts is not None:
            for address in sorted(hosts - self._hosts):
                self.session.progress.info(f"bench host {address} joined ({len(hosts)} now)")
            for address in sorted(self._hosts - hosts):
                self.session.progress.warn(f"bench host {address} left ({len(hosts)} now)")
        self._hosts = hosts

    def fill(self) -> None:
        """Send experiments until every bench host has one."""
        session = self.session
        # Asked last: the hosts are counted (a scheduler round trip) only when there is
        # something to send.
        while (
            not session.stop.is_set()
            and (self.again or self._ask)
            and len(self.flights) < self.slots()
        ):
            if self.again:
                self.send(self.again.popleft())
                continue
            cap = session.config.budget.max_experiments
            if session.tally.done + len(self.flights) >= cap or not self._ask:
                return
            context = proposal_context(session)
            flying = {f.candidate.hypothesis.sha256 for f in self.flights}
            context.tried = session.tried | flying
            hypothesis = session.proposer.next(context)
            if hypothesis is None and not self.flights:
                hypothesis = second_look_hypothesis(session)
            for note in context.notes:
                session.progress.warn(note)
            # A proposer that learns from each result (a sweep) proposes the next point only
            # once the last has landed: wait for it.
            if hypothesis is None or hypothesis.sha256 in flying:
                self._ask = False
                return
            flight = self.start(hypothesis)
            if flight is not None:
                self.send(flight)

    def slots(self) -> int:
        return max(1, len(bench_workers(self.client, self.session.config.cluster.resource)))

    def start(self, hypothesis: Hypothesis) -> Flight | None:
        """The driver's half before the bench: number, draft, patch checks. None when the
        hypothesis ended here (its record is written)."""
        session = self.session
        n = session.tally.next_n
        session.tally.next_n += 1
        session.progress.experiment(n, None, hypothesis.title)
        # Scope and protection here; whether it applies, the host finds (three-way included).
        draft = new_draft(session, hypothesis, n, session.paths.flights / f"{n:04d}.json")
        started = begin(session, hypothesis, draft)
        if not isinstance(started, Candidate):
            self.record(draft, started)
            return None
        started.draft.note(cluster={"patch": str(started.patch_file)})
        started.draft.phase("bench")
        return Flight(started, parent=session.ws.tip())

    def send(self, flight: Flight) -> None:
        flight.draft.note(parent_commit=flight.parent)
        flight.draft.save()
        # A new best is calibrated by one job; the others judge by their kind's latest
        # calibration until it lands, then take it up (host.Host.calibration).
        known = self.calibrations.get(flight.parent, [])
        flight.calibrating = not known and flight.parent not in self.calibrating
        if flight.calibrating:
            self.calibrating.add(flight.parent)
        job = self.job(
            "experiment",
            flight.exp_id,
            flight.parent,
            patch=flight.candidate.hypothesis.patch,
            paths=tuple(flight.candidate.paths),
            calibrations=tuple(known),
            calibrate=flight.calibrating,
            fallbacks=self.fallbacks(flight.parent),
        )
        flight.future = self.submit(job, f"{flight.exp_id}-{len(flight.stale)}-{flight.losses}")
        self.flights.append(flight)

    def job(self, kind: str, exp_id: str, parent: str, **more: Any) -> Job:
        """A job for a host (host.Job), with what every one carries: the config, the session
        branch, the harness's environment, this machine's name, the executor."""
        session = self.session
        return Job(
            kind=kind,
            exp_id=exp_id,
            config=session.config,
            branch=session.ws.branch,
            parent=parent,
            env=harness_env(session),
            origin=socket.gethostname(),
            executor=session.options.executor,
            **more,
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

    def submit(self, job: Job, key: str):
        return self.client.submit(
            run_job,
            job,
            self.bundle(),
            key=f"autoresearch-{key}-{time.time_ns()}",
            resources={self.session.config.cluster.resource: 1},
            pure=False,
            retries=0,
        )

    def bundle(self):
        """The session branch as a git bundle, sent through Dask once per tip; None when the
        hosts fetch from `cluster.remote`."""
        session = self.session
        if session.config.cluster.remote:
            return None
        tip = session.ws.tip()
        if self._bundle is None or self._bundle[0] != tip:
            path = session.paths.root / "session.bundle"
            session.ws.source.must(
                "bundle", "create", "--quiet", str(path), f"refs/heads/{session.ws.branch}"
            )
            data = path.read_bytes()
            path.unlink()
            # On every host: one that dies does not take the only copy with it.
            self._bundle = (tip, self.client.scatter(data, hash=False, broadcast=True))
        return self._bundle[1]

    # -- results -----------------------------------------------------------------------------

    def land_some(self) -> None:
        from distributed import wait

        futures = [f.future for f in self.flights]
        with contextlib.suppress(TimeoutError, CancelledError):
            # None yet (back to look at the stop flag), or one cancelled under us: found below.
            wait(futures, timeout=POLL_S, return_when="FIRST_COMPLETED")
        for flight in [f for f in self.flights if f.future.status != "pending"]:
            self.flights.remove(flight)
            self.land(flight)

    # -- restarts, the end -------------------------------------------------------------------

    def resume_flights(self) -> None:
        """Experiments a dead driver left in flight: sent again, under their own numbers."""
        session = self.session
        recorded = {r.id for records in session.attempts.values() for r in records}
        for path in sorted(session.paths.flights.glob("*.json")):
            marker = read_inflight(path) or {}
            fields = marker.get("fields") or {}
            patch = Path((fields.get("cluster") or {}).get("patch") or "")
            if fields.get("id") in recorded or not patch.is_file():
                path.unlink()
                continue
            hypothesis = Hypothesis(
                title=fields.get("title") or patch.stem,
                patch=patch.read_bytes(),
                hypothesis=(fields.get("asi") or {}).get("hypothesis"),
                mechanism=(fields.get("asi") or {}).get("mechanism"),
                expected_effect=(fields.get("asi") or {}).get("expected_effect"),
                source=fields.get("source"),
                proposer=fields.get("proposer"),
                proposal=fields.get("proposal"),
                family=fields.get("family"),
            )
            if hypothesis.sha256 in session.tried:
                path.unlink()
                continue
            draft = Draft(marker=path, fields=fields, phases=marker.get("phases") or {})
            session.progress.info(
                f"{fields['id']} was in flight when the driver stopped: sending it again"
            )
            session.tally.next_n = max(session.tally.next_n, int(fields.get("n", 0)) + 1)
            candidate = Candidate(hypothesis, draft, patch, fields.get("touched_files") or [])
            flight = Flight(candidate, parent=session.ws.tip())
            self.again.append(flight)

    def cancel(self) -> None:
        """Futures of a driver that stops: the hosts drop them; their markers stay."""
        for flight in self.flights + list(self.again):
            if flight.future is not None:
                flight.future.cancel()

    def confirm(self) -> float | None:
        """The session's base against its tip on one bench host."""
        session = self.session
        base, tip = session.base_commit, session.ws.tip()
        runs = session.config.decision.confirm_runs
        session.progress.info(
            f"confirming on a bench host: {base[:10]} against {tip[:10]}, {runs} runs each"
        )
        job = self.job("confirm", f"confirmation-{tip[:12]}", base, tip=tip, runs=runs)
        try:
            result = self.submit(job, "confirm").result()
        except Exception as exc:  # a lost host: the headline waits for `autoresearch confirm`
            session.progress.warn(
                f"confirmation lost with its bench host ({type(exc).__name__}: {exc}); "
                "run `autoresearch confirm` for the headline"
            )
            return None
        host = result.name
        if result.failure is not None:
            session.progress.warn(f"confirmation failed on {host}: {result.detail}")
            return None
        measured = self.copy_logs(job.exp_id, result)
        record = confirmation_record(
            session.config,
            base,
            tip,
            runs,
            result.samples,
            measured.bench_logs,
            host=host,
        )
        if result.holdout is not None:
            best, held_tip = result.holdout
            held = (best.samples, held_tip.samples)
            record = with_holdout(session.config, record, held, result.holdout_seconds)
        session.journal.append(record)
        announce(session.config, record, session.progress)
        return record.change_pct
