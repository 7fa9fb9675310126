"""Bench hosts in this process: the executor the contract suite's fast tier drives.

`FakeHosts` has N slots, each a host clone of its own measured with the hosts' own code
(autoresearch/cluster/host.py's `measure_job`, the session branch fetched from the repository),
so that a job is measured exactly as on a bench host, without Dask. What a scheduler and a
network decide (the order results come back in, a host dying under a job, a scheduler going
away) the test decides, in seconds:

- every job out is measured against the parent it was sent with before any result is handed
  back, and results come back one per `landed` call: two wins sent against one best land one
  after the other, the second against a best that has moved;
- `lose(exp_id)` returns that job's next result as lost with its host (`Lost`);
  `break_on(exp_id)` as a job that broke on its host;
- `lose_scheduler(after=k, back=...)` takes every job out with it once k results have landed
  and jobs are out, the scheduler coming back or not;
- `leave(name)` takes a host away (one slot fewer from then on).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from autoresearch.bench.jobs import Job, JobResult
from autoresearch.cluster.host import measure_job
from autoresearch.loop.executor import Flight, Lost, Outage
from autoresearch.loop.session import Session


class FakeHosts:
    """N bench hosts measured in this process."""

    resumes_flights = True

    def __init__(self, session: Session, root: Path, hosts: int = 2):
        self.session = session
        self.root = root
        self.hosts = [f"host-{i}" for i in range(hosts)]
        self.out: list[Flight] = []  # sent, not yet measured
        self.done: list[tuple[Flight, JobResult | Lost]] = []  # measured, not yet handed back
        self.landings = 0
        self.measured: list[tuple[str, str, str]] = []  # (host, kind, exp_id), in order
        self._lose: dict[str, int] = {}
        self._broken: set[str] = set()
        self._outages: list[tuple[int, bool]] = []
        self._sent = 0

    # -- what the test scripts ---------------------------------------------------------------

    def lose(self, exp_id: str, times: int = 1) -> None:
        self._lose[exp_id] = self._lose.get(exp_id, 0) + times

    def break_on(self, exp_id: str) -> None:
        self._broken.add(exp_id)

    def lose_scheduler(self, after: int, back: bool) -> None:
        self._outages.append((after, back))

    def leave(self, name: str) -> None:
        self.hosts.remove(name)

    # -- the executor ------------------------------------------------------------------------

    def slots(self) -> int:
        return max(1, len(self.hosts))

    def start(self, flight: Flight) -> None:
        self.out.append(flight)

    def landed(self, timeout: float) -> list[tuple[Flight, JobResult | Lost]]:
        if self._outage_due():
            return []  # the scheduler is gone: nothing comes back
        while self.out:
            flight = self.out.pop(0)
            self.done.append((flight, self._measure(flight)))
        if not self.done:
            return []
        self.landings += 1
        return [self.done.pop(0)]

    def outage(self) -> Outage | None:
        """The scheduler gone once the k-th result landed, with every job out (once there are
        jobs out): back, or not."""
        if not self._outage_due():
            return None
        _, back = self._outages.pop(0)
        self.out.clear()
        self.done.clear()
        why = "the scheduler at fake:// is back" if back else "the fake scheduler was lost for good"
        return Outage(back, why)

    def _outage_due(self) -> bool:
        due = bool(self._outages) and self.landings >= self._outages[0][0]
        return due and bool(self.out or self.done)

    def cancel(self) -> None:
        self.out.clear()
        self.done.clear()

    # -- measuring ---------------------------------------------------------------------------

    def _measure(self, flight: Flight) -> JobResult | Lost:
        job = flight.job
        assert job is not None
        host = self.hosts[self._sent % len(self.hosts)]
        self._sent += 1
        if self._lose.get(job.exp_id):
            self._lose[job.exp_id] -= 1
            return Lost(f"KilledWorker: {host} died running {job.exp_id}", host=host)
        if job.exp_id in self._broken:
            return Lost(f"RuntimeError: {job.exp_id} broke on {host}", broken=True)
        self.measured.append((host, job.kind, job.exp_id))
        result = measure_job(self._from_repository(job), self.root / host)
        paths = self.session.paths
        return replace(result.copied(lambda name: paths.log(job.exp_id, name)), host=host)

    def _from_repository(self, job: Job) -> Job:
        """The job with the session's repository as the hosts' remote: they fetch the branch
        from it, where a Dask night sends it as a bundle."""
        config = job.config
        remote = replace(config.cluster, remote=str(self.session.ws.source.path))
        return replace(job, config=replace(config, cluster=remote))
