"""The loop on several bench hosts: experiments measured side by side, kept one at a time.

The driver is the loop of loop.py with the measuring sent out: it asks the proposers, checks
each patch against the scope, sends it to a bench host through Dask (`host.run_job`, holding
the worker resource `cluster.resource`, so that one host measures one experiment at a time), and
lands the results as they come: the decision rule replayed on the returned samples, the checks
and the keep commit here, on the session branch, one record each.

Keeps stay serial and honest: a win measured against a best that has moved since (another
experiment was kept meanwhile) is not kept on that evidence; its patch is applied to the new
best and measured again (up to `cluster.remeasure` times), or recorded `apply_failed` when it no
longer applies. A host that dies takes nothing with it: Dask runs its job again elsewhere, and
the record is written once, here, when a result lands. A driver that dies leaves a marker per
experiment in flight (state `flights/`): the next run sends those again before asking for more.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import CancelledError
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..bench.measure import BASELINE, CANDIDATE
from ..config import Config
from ..decide.calibration import Calibration
from ..decide.rule import Decision
from ..errors import UserError
from ..journal.draft import Draft
from ..journal.records import CalibrationRecord, ExperimentRecord
from ..loop.confirm import announce, confirmation_record
from ..loop.driver import (
    SessionOutcome,
    account,
    adopt_calibration,
    confirm_wanted,
    second_look_hypothesis,
    session_outcome,
    stop_reason,
)
from ..loop.experiment import check_patch, keep, new_draft, run_checks, save_patch, wants_checks
from ..loop.session import RunOptions, Session, harness_env, open_session, proposal_context
from ..loop.session_dir import read_inflight
from ..progress import Progress
from ..proposers import Hypothesis
from ..statuses import Status
from .host import Job, run_job

__all__ = ["run_cluster_session"]

MAX_WORKER_LOSSES = 3  # hosts lost under one experiment before it is recorded as a crash
POLL_S = 0.5  # how often the driver looks at the stop flag while results are out


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
        open_session(config, options, progress) as run,
    ):
        driver = Driver(run, client)
        try:
            reason = driver.loop()
        finally:
            driver.cancel()
            run.proposer.close()
        run.progress.info(f"stopped: {reason}")
        return session_outcome(run, reason, driver.confirm() if confirm_wanted(run) else None)


@contextlib.contextmanager
def connect(config: Config, scheduler: str, progress: Progress) -> Iterator[Any]:
    """A Dask client: to the scheduler at the address, or to `local:N` workers started here
    (each with its own directory and one unit of the bench resource)."""
    try:
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
            cluster = stack.enter_context(
                LocalCluster(
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    resources={resource: 1},
                    dashboard_address=None,
                )
            )
            address = cluster.scheduler_address
        else:
            address = scheduler
        try:
            client = stack.enter_context(Client(address, timeout=timeout))
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
        yield client


def bench_workers(client, resource: str) -> list[str]:
    """The workers that can take an experiment (they hold the bench resource)."""
    workers = client.scheduler_info(n_workers=-1).get("workers", {})
    return [
        address
        for address, info in workers.items()
        if (info.get("resources") or {}).get(resource, 0) >= 1
    ]


@dataclass
class Flight:
    """An experiment out on a bench host, and what it needs to land."""

    hypothesis: Hypothesis
    draft: Draft
    patch_file: Path
    paths: list[str]
    parent: str
    future: Any = None
    losses: int = 0  # hosts that died under it
    stale: list[dict[str, Any]] = field(default_factory=list)

    @property
    def exp_id(self) -> str:
        return self.draft.fields["id"]


class Driver:
    def __init__(self, run: Session, client):
        self.run = run
        self.client = client
        self.flights: list[Flight] = []
        self.again: deque[Flight] = deque()  # to send before asking the proposers for more
        self._bundle: tuple[str, Any] | None = None  # (tip, scattered bundle)
        # What the proposers say changes only when a result lands: no asking again till then.
        self._ask = True
        run.paths.flights.mkdir(parents=True, exist_ok=True)

    # -- the loop ----------------------------------------------------------------------------

    def loop(self) -> str:
        run = self.run
        self.resume_flights()
        reason = None
        while True:
            reason = reason or stop_reason(run)
            if reason is None:
                self.fill()
            if not self.flights:
                return reason or (
                    "no hypotheses left: the proposers have none, and none undecided to look "
                    "at again"
                )
            self.land_some()
            if run.stop.is_set():
                return "interrupted by a signal (the experiments in flight run again on resume)"

    def fill(self) -> None:
        """Send experiments until every bench host has one."""
        run = self.run
        # Asked last: the hosts are counted (a scheduler round trip) only when there is
        # something to send.
        while (
            not run.stop.is_set() and (self.again or self._ask) and len(self.flights) < self.slots()
        ):
            if self.again:
                self.send(self.again.popleft())
                continue
            cap = run.config.budget.max_experiments
            if run.tally.done + len(self.flights) >= cap or not self._ask:
                return
            context = proposal_context(run)
            flying = {f.hypothesis.sha256 for f in self.flights}
            context.tried = run.tried | flying
            hypothesis = run.proposer.next(context)
            if hypothesis is None and not self.flights:
                hypothesis = second_look_hypothesis(run)
            for note in context.notes:
                run.progress.warn(note)
            # A proposer that learns from each result (a sweep) proposes the next point only
            # once the last has landed: wait for it.
            if hypothesis is None or hypothesis.sha256 in flying:
                self._ask = False
                return
            flight = self.start(hypothesis)
            if flight is not None:
                self.send(flight)

    def slots(self) -> int:
        return max(1, len(bench_workers(self.client, self.run.config.cluster.resource)))

    def start(self, hypothesis: Hypothesis) -> Flight | None:
        """The driver's half before the bench: number, draft, patch checks. None when the
        hypothesis ended here (its record is written)."""
        run = self.run
        n = run.tally.next_n
        run.tally.next_n += 1
        draft = new_draft(run, hypothesis, n, run.paths.flights / f"{n:04d}.json")
        run.progress.experiment(n, None, hypothesis.title)
        draft.phase("apply")
        if hypothesis.problem is not None:
            self.record(draft, draft.finish(hypothesis.problem_status, hypothesis.problem))
            return None
        patch_file = save_patch(run, n, hypothesis)
        # Scope and protection here; whether it applies, the host finds (three-way included).
        paths, problem = check_patch(run, hypothesis, patch_file)
        draft.note(touched_files=paths)
        if problem is not None:
            self.record(draft, draft.finish(problem.kind, problem.message, error=problem.message))
            return None
        draft.note(cluster={"patch": str(patch_file)})
        draft.phase("bench")
        return Flight(hypothesis, draft, patch_file, paths, parent=run.ws.tip())

    def send(self, flight: Flight) -> None:
        run = self.run
        flight.draft.note(parent_commit=flight.parent)
        flight.draft.save()
        job = Job(
            kind="experiment",
            exp_id=flight.exp_id,
            config=run.config,
            branch=run.ws.branch,
            parent=flight.parent,
            patch=flight.hypothesis.patch,
            env=harness_env(run, flight.exp_id),
        )
        flight.future = self.submit(job, f"{flight.exp_id}-{len(flight.stale)}-{flight.losses}")
        self.flights.append(flight)

    def submit(self, job: Job, key: str):
        return self.client.submit(
            run_job,
            job,
            self.bundle(),
            key=f"autoresearch-{key}-{time.time_ns()}",
            resources={self.run.config.cluster.resource: 1},
            pure=False,
            retries=0,
        )

    def bundle(self):
        """The session branch as a git bundle, sent through Dask once per tip; None when the
        hosts fetch from `cluster.remote`."""
        run = self.run
        if run.config.cluster.remote:
            return None
        tip = run.ws.tip()
        if self._bundle is None or self._bundle[0] != tip:
            path = run.paths.root / "session.bundle"
            run.ws.source.must(
                "bundle", "create", "--quiet", str(path), f"refs/heads/{run.ws.branch}"
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

    def land(self, flight: Flight) -> None:
        from distributed import KilledWorker

        run = self.run
        self._ask = True
        run.progress.about(flight.draft.fields["n"], flight.draft.started_at)
        try:
            result = flight.future.result()
        except (KilledWorker, CancelledError) as exc:
            # The host died under it (Dask already ran it again elsewhere, up to its limit), or
            # took the only copy of the bundle with it: send it again, with a fresh bundle.
            self._bundle = None
            flight.losses += 1
            if flight.losses < MAX_WORKER_LOSSES:
                run.progress.warn(
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
        host = _host_name(result)
        calibration = result.get("calibration") or {}
        if result.get("calibration_new") or self.unadopted(calibration.get("commit")):
            self.journal_calibration(result, host)
        flight.draft.note(
            cluster={
                "patch": str(flight.patch_file),
                "host": host,
                "worker": result.get("worker"),
                "environment": result.get("environment"),
                "started_at": result.get("started_at"),
                "ended_at": result.get("ended_at"),
                "stale": flight.stale,
            }
        )
        measured = self.copy_logs(flight.exp_id, result)
        if result.get("failure"):
            status = result["failure"]  # mapped on the host, as the loop maps it
            why = f"on {host}: {result['detail']}"
            self.record(flight.draft, flight.draft.finish(status, why, error=why, **measured))
            return
        decision = self.replay(result)
        measured |= {"decision": decision.to_dict(), "sentinels": decision.sentinels}
        flight.draft.note(asi={"result": decision.reason})
        if decision.status == Status.KEEP and flight.parent != run.ws.tip():
            self.measure_again(flight, decision, host, measured)
            return
        self.finish(flight, decision, measured)

    def replay(self, result: dict[str, Any]) -> Decision:
        """The decision rule on the host's samples, with the host's own calibration: the
        decision is the driver's."""
        config = self.run.config
        record = CalibrationRecord.from_dict(result["calibration"])
        judge = Calibration.from_record(record, config.metric.name).judge(config)
        decision = judge.replay(result[BASELINE]["samples"], result[CANDIDATE]["samples"])
        if decision is None:  # the host stopped before a look: only with a bug; say so
            raise UserError("the host's runs end before any look of the rule")
        return decision

    def measure_again(self, flight: Flight, decision: Decision, host: str, measured) -> None:
        """A win against a best that has moved: never kept on that evidence."""
        run = self.run
        primary = decision.metrics[run.config.metric.name]
        flight.stale.append(
            {
                "parent": flight.parent,
                "host": host,
                "change_pct": primary.get("change_pct"),
                "ci_pct": [primary.get("ci_low_pct"), primary.get("ci_high_pct")],
            }
        )
        tip = run.ws.tip()
        applied = run.ws.apply(flight.patch_file)
        run.ws.revert()
        if not applied.ok:
            why = (
                f"it won against {flight.parent[:10]}, but does not apply to the new best "
                f"{tip[:10]}: {applied.message}"
            )
            self.record(
                flight.draft, flight.draft.finish(Status.APPLY_FAILED, why, error=why, **measured)
            )
            return
        if len(flight.stale) > run.config.cluster.remeasure:
            why = (
                f"it won {len(flight.stale)} times against a best that had moved by the time "
                f"it landed (cluster.remeasure = {run.config.cluster.remeasure}); undecided"
            )
            self.record(flight.draft, flight.draft.finish(Status.INCONCLUSIVE, why, **measured))
            return
        run.progress.info(
            f"{flight.exp_id} won against {flight.parent[:10]}, but the best is now "
            f"{tip[:10]}: measuring it again there before it may be kept"
        )
        flight.parent = tip
        self.again.appendleft(flight)

    def finish(self, flight: Flight, decision: Decision, measured: dict[str, Any]) -> None:
        """Checks, keep or not, the record: as loop.run_experiment ends, on the driver."""
        run, draft = self.run, flight.draft
        applied = False
        if wants_checks(run.config, decision) and flight.parent == run.ws.tip():
            if not self.apply(flight, measured):
                return
            applied = True
            draft.phase("checks")
            checks = run_checks(run, flight.exp_id, draft)
            measured["checks"] = checks.to_dict()
            if not checks.ok:
                run.ws.revert()
                status = Status.INTERRUPTED if checks.interrupted else Status.CHECKS_FAILED
                why = f"checks {checks.describe()}; log: {checks.log_path}"
                self.record(draft, draft.finish(status, why, **measured))
                return
        if decision.status != Status.KEEP:
            if applied:
                run.ws.revert()
            self.record(draft, draft.finish(decision.status, decision.reason, **measured))
            return
        if not applied and not self.apply(flight, measured):
            return
        draft.phase("commit")
        record = keep(run, draft, flight.hypothesis, decision, flight.paths, measured)
        self.record(draft, record)
        if record.status == Status.KEEP:
            host = (record.cluster or {}).get("host")
            run.progress.info(
                f"kept {record.id} (measured on {host}); new best {record.kept_commit[:10]}"
            )

    def apply(self, flight: Flight, measured: dict[str, Any]) -> bool:
        """The patch in the driver's worktree, on the best it was measured against."""
        applied = self.run.ws.apply(flight.patch_file)
        if not applied.ok:
            why = f"measured on a bench host, but does not apply here: {applied.message}"
            self.record(flight.draft, flight.draft.finish(Status.APPLY_FAILED, why, **measured))
        return applied.ok

    def record(self, draft: Draft, record: ExperimentRecord) -> None:
        """Journal it, then forget its marker: in that order, so that nothing is lost."""
        self.run.progress.about(record.n, draft.started_at)
        account(self.run, record)
        draft.marker.unlink(missing_ok=True)

    def unadopted(self, commit: str | None) -> bool:
        """A host's calibration of the best that this driver has not taken up: one a host
        measured for a driver that died before it landed."""
        run = self.run
        current = run.calibration.commit if run.calibration is not None else None
        return commit is not None and commit == run.ws.tip() and commit != current

    def journal_calibration(self, result: dict[str, Any], host: str) -> None:
        run = self.run
        record = CalibrationRecord.from_dict({**result["calibration"], "host": host})
        run.journal.append(record)
        noise = record.noise_pct.get(run.config.metric.name) or 0.0
        run.progress.info(
            f"calibrated {record.commit[:10]} on {host}: noise {noise:.2f}%, "
            f"threshold {record.threshold_pct or 0:.2f}%"
        )
        for warning in record.warnings:
            run.progress.warn(f"{host}: {warning}")
        if record.commit == run.ws.tip():
            adopt_calibration(run, record)
        if run.baseline is None and record.commit == run.base_commit:
            run.baseline = run.best_median

    def copy_logs(self, exp_id: str, result: dict[str, Any]) -> dict[str, Any]:
        """The host's log tails under the session's logs; the record's fields for them."""
        run = self.run
        for name, text in (result.get("logs") or {}).items():
            path = run.paths.log(exp_id, Path(name).stem)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        arms = [result.get(BASELINE) or {}, result.get(CANDIDATE) or {}]
        return {
            "bench_logs": [
                str(run.paths.log(exp_id, Path(name).stem))
                for arm in arms
                for name in arm.get("logs", [])
            ],
            "bench_durations_s": [d for arm in arms for d in arm.get("durations", [])],
            "bench_tail": arms[1].get("tail"),
        }

    # -- restarts, the end -------------------------------------------------------------------

    def resume_flights(self) -> None:
        """Experiments a dead driver left in flight: sent again, under their own numbers."""
        run = self.run
        recorded = {r.id for records in run.attempts.values() for r in records}
        for path in sorted(run.paths.flights.glob("*.json")):
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
            if hypothesis.sha256 in run.tried:
                path.unlink()
                continue
            draft = Draft(marker=path, fields=fields, phases=marker.get("phases") or {})
            run.progress.info(
                f"{fields['id']} was in flight when the driver stopped: sending it again"
            )
            run.tally.next_n = max(run.tally.next_n, int(fields.get("n", 0)) + 1)
            flight = Flight(
                hypothesis, draft, patch, fields.get("touched_files") or [], parent=run.ws.tip()
            )
            self.again.append(flight)

    def cancel(self) -> None:
        """Futures of a driver that stops: the hosts drop them; their markers stay."""
        for flight in self.flights + list(self.again):
            if flight.future is not None:
                flight.future.cancel()

    def confirm(self) -> float | None:
        """The session's base against its tip on one bench host."""
        run = self.run
        base, tip = run.base_commit, run.ws.tip()
        runs = run.config.decision.confirm_runs
        run.progress.info(
            f"confirming on a bench host: {base[:10]} against {tip[:10]}, {runs} runs each"
        )
        job = Job(
            kind="confirm",
            exp_id=f"confirmation-{tip[:12]}",
            config=run.config,
            branch=run.ws.branch,
            parent=base,
            tip=tip,
            runs=runs,
            env=harness_env(run, "confirmation"),
        )
        try:
            result = self.submit(job, "confirm").result()
        except Exception as exc:  # a lost host: the headline waits for `autoresearch confirm`
            run.progress.warn(
                f"confirmation lost with its bench host ({type(exc).__name__}: {exc}); "
                "run `autoresearch confirm` for the headline"
            )
            return None
        host = _host_name(result)
        if result.get("failure"):
            run.progress.warn(f"confirmation failed on {host}: {result['detail']}")
            return None
        measured = self.copy_logs(job.exp_id, result)
        record = confirmation_record(
            run.config,
            base,
            tip,
            runs,
            (result[BASELINE]["samples"], result[CANDIDATE]["samples"]),
            measured["bench_logs"],
            host=host,
        )
        run.journal.append(record)
        announce(run.config, record, run.progress)
        return record.change_pct


def _host_name(result: dict[str, Any]) -> str:
    worker = result.get("worker") or ""
    return f"{result.get('host')} ({worker})" if worker else str(result.get("host"))
