"""Bench hosts through Dask distributed, as the night's executor: one slot per host.

Each job goes to a bench host through Dask (`host.run_job`, holding the worker resource
`cluster.resource`, so that one host measures one job at a time), with the session branch as a
git bundle scattered to every host once per tip (or fetched from `cluster.remote`). What comes
back lands in the one driver (loop/dispatch.py) as every executor's does: a host that died under a
job is a `Lost` (the driver sends it again), a job that broke on the host a broken one; each
host's log tails are copied under the session's logs. A scheduler that goes away takes every
job with it: `outage` waits for it within `cluster.scheduler_grace_s`.
"""

from __future__ import annotations

import contextlib
import socket
import time
import urllib.parse
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError
from typing import Any

from ..bench.jobs import JobResult
from ..config import Config
from ..errors import UserError
from ..loop.executor import Flight, Lost, Outage
from ..loop.session import Session
from ..progress import Progress
from .host import (
    QUIET_WORKER,
    QUIET_WORKER_ENV,
    TELLING_SCHEDULER,
    TELLING_SCHEDULER_ENV,
    profiled_hosts,
    retries_unsaid,
    run_job,
)

__all__ = ["DaskExecutor", "bench_hosts"]

POLL_S = 0.5  # how often a wait looks at the stop flag
HOSTS_EVERY_S = 2.0  # how often the hosts are counted (a scheduler round trip)


@contextlib.contextmanager
def bench_hosts(
    config: Config, scheduler: str, progress: Progress
) -> Iterator[Callable[[Session], DaskExecutor]]:
    """The bench hosts at `scheduler` (a Dask scheduler's address, or `local:N` workers
    started here, each with its own directory and one unit of the bench resource), connected
    before the session opens; what makes the night's executor of them."""
    with connect(config, scheduler, progress) as client:
        yield lambda session: DaskExecutor(session, client)


@contextlib.contextmanager
def connect(config: Config, scheduler: str, progress: Progress) -> Iterator[Any]:
    """A Dask client: to the scheduler at the address, or to `local:N` workers started here."""
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
            stack.enter_context(dask.config.set({**QUIET_WORKER, **TELLING_SCHEDULER}))
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
            # went away: the grace a lost scheduler has to come back (DaskExecutor.outage).
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
        if retries_unsaid(client):
            progress.warn(
                "the scheduler runs a job whose host died again itself, unsaid: start it with "
                + " ".join(f"{name}={value}" for name, value in TELLING_SCHEDULER_ENV.items())
                + " so that each lost host is named and recorded"
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


def bench_workers(client: Any, resource: str) -> list[str]:
    """The workers that can take a job (they hold the bench resource); none while the
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


class DaskExecutor:
    """N slots: the bench hosts a Dask scheduler has, one job each."""

    resumes_flights = True  # a dead driver's experiments are sent again by the next night

    def __init__(self, session: Session, client: Any):
        self.session = session
        self.client = client
        self.futures: dict[int, tuple[Flight, Any]] = {}  # by id(flight)
        self.unsent: list[tuple[Flight, Lost]] = []  # what could not be sent: lost at once
        self._bundle: tuple[str, Any] | None = None  # (tip, scattered bundle)
        self._hosts: set[str] | None = None  # the bench hosts last seen
        self._hosts_seen_at = float("-inf")
        self._slots = 1

    def slots(self) -> int:
        """One per bench host, counted at most every HOSTS_EVERY_S; a host joining or leaving
        is said."""
        now = time.monotonic()
        if now < self._hosts_seen_at + HOSTS_EVERY_S:
            return self._slots
        self._hosts_seen_at = now
        resource = self.session.config.cluster.resource
        hosts = set(bench_workers(self.client, resource))
        if self._hosts is not None:
            progress = self.session.progress
            for address in sorted(hosts - self._hosts):
                progress.info(f"bench host {address} joined ({len(hosts)} now)")
            for address in sorted(self._hosts - hosts):
                progress.warn(f"bench host {address} left ({len(hosts)} now)")
        self._hosts = hosts
        self._slots = max(1, len(hosts))
        return self._slots

    def start(self, flight: Flight) -> None:
        try:
            future = self.client.submit(
                run_job,
                flight.job,
                self._bundle_data(),
                key=f"autoresearch-{flight.key}-{time.time_ns()}",
                resources={self.session.config.cluster.resource: 1},
                pure=False,
                retries=0,
            )
        except Exception as exc:  # a host going away under the bundle's scatter, a lost link
            # Not sent: it comes back as lost with its host, and is sent again from there.
            self._bundle = None
            self.unsent.append((flight, Lost(f"not sent: {type(exc).__name__}: {exc}", sent=False)))
            return
        self.futures[id(flight)] = (flight, future)

    def landed(self, timeout: float) -> list[tuple[Flight, JobResult | Lost]]:
        from distributed import wait

        self.slots()  # says a host that left or joined while the jobs run
        done: list[tuple[Flight, JobResult | Lost]] = [*self.unsent]
        self.unsent.clear()
        if done:
            return done
        with contextlib.suppress(TimeoutError, CancelledError):
            # None yet (back to look at the stop flag), or one cancelled under us: found below.
            pending = [future for _, future in self.futures.values()]
            wait(pending, timeout=timeout, return_when="FIRST_COMPLETED")
        for key, (flight, future) in list(self.futures.items()):
            if future.status == "pending" or self.client.status != "running":
                continue  # a scheduler gone took it with it: outage() says so
            del self.futures[key]
            done.append((flight, self._result(flight, future)))
        return done

    def _result(self, flight: Flight, future: Any) -> JobResult | Lost:
        """What came back: the host's result with its logs copied here, or how it was lost."""
        from distributed import KilledWorker

        try:
            result: JobResult = future.result()
        except (KilledWorker, CancelledError) as exc:
            # The host died under it (Dask already ran it again elsewhere, up to its limit), or
            # took the only copy of the bundle with it: sent again, with a fresh bundle.
            self._bundle = None
            return Lost(f"{type(exc).__name__}: {exc}", host=_last_worker(exc))
        except Exception as exc:  # the job itself broke on the host
            return Lost(f"{type(exc).__name__}: {exc}", broken=True)
        return result.copied(lambda name: self.session.paths.log(flight.exp_id, name))

    def outage(self) -> Outage | None:
        """A scheduler that went away: its futures are gone with it. Waited for (the client
        reconnects within cluster.scheduler_grace_s)."""
        if self.client.status == "running":
            return None
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
        self.futures.clear()
        self.unsent.clear()
        self._bundle = None
        if self.client.status == "running":
            return Outage(True, f"the scheduler at {address} is back")
        if session.stop.is_set():
            why = f"the Dask scheduler at {address} was lost, and a signal stopped the wait"
        else:
            why = (
                f"the Dask scheduler at {address} was lost and did not come back within "
                f"{grace:g} s (cluster.scheduler_grace_s)"
            )
        return Outage(False, why)

    def cancel(self) -> None:
        """The hosts drop the jobs out."""
        for _, future in self.futures.values():
            future.cancel()
        self.futures.clear()
        self.unsent.clear()

    def _bundle_data(self) -> Any:
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


def _last_worker(exc: BaseException) -> str | None:
    """The host a job was lost with, as the scheduler names its workers (their address): the
    last that ran it; unknown for a job cancelled with its bundle."""
    last = getattr(exc, "last_worker", None) if type(exc).__name__ == "KilledWorker" else None
    if last is None:
        return None
    return str(getattr(last, "address", None) or last)
