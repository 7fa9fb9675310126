"""The seam between the night and where its jobs are measured.

The one driver (dispatch.py) asks the proposers for as many hypotheses as its executor has free
slots, hands each out as a `Flight` holding a `Job` (bench/jobs.py), and lands what comes back
through one path (landing.py): the rule replayed on the runs, a win whose best moved measured
again, the checks and the keep, the record. An executor only measures:

- `LocalExecutor` (local.py): one slot, this machine, the session's own worktrees; the
  candidate stays applied there, so that its checks run where it was measured.
- `DaskExecutor` (cluster/dask_executor.py): N slots, one per bench host, each in its own clone.
- the suite's in-process fake (tests/fake_executor.py): N slots in this process, whose hosts
  can be lost and whose results can land in any order, for the contract suite in seconds.

A new executor (SSH hosts, Slurm, Ray) is a class with these five methods; the contract suite
(tests/test_executor_contract.py) says what it must do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..bench.jobs import CALIBRATE, CONFIRM, EXPERIMENT, Job, JobResult
from ..journal.placement import HostFacts, StaleWin

if TYPE_CHECKING:
    from ..journal.draft import Draft
    from ..repo.guard import TreeGuard
    from .lifecycle import Candidate

__all__ = ["CALIBRATE", "CONFIRM", "EXPERIMENT", "Executor", "Flight", "Lost", "Outage"]


@dataclass(frozen=True)
class Lost:
    """A job that came back without a result: its slot died under it (sent again, up to a
    limit), or, `broken`, the job itself failed there (undecided; not sent again)."""

    why: str
    broken: bool = False
    host: str | None = None  # the host it was lost with, when the executor can tell
    sent: bool = True  # False: it never reached a host (no host was lost with it)


@dataclass(frozen=True)
class Outage:
    """The executor lost more than a slot (a scheduler) and took every job in flight with it:
    `back` when it came back (they are sent again), else why the night cannot go on."""

    back: bool
    why: str


@dataclass
class Flight:
    """A job out on the executor, and what it needs to land."""

    kind: str  # EXPERIMENT, CALIBRATE or CONFIRM
    parent: str  # the best it is measured against (a confirmation: the session's base)
    candidate: Candidate | None = None  # an experiment's
    tip: str | None = None  # a confirmation's
    fresh: bool = False  # a calibration measured again, whatever the slot holds
    runs: int = 0  # a confirmation's pairs
    job: Job | None = None  # as last sent
    losses: int = 0  # slots that died under it
    facts: HostFacts = field(default_factory=HostFacts)  # the record's `cluster`, once landed
    calibrating: bool = False  # the job that may measure its parent's calibration
    # The tree guard of a candidate measured in the driver's own worktree, where it stays
    # applied for its checks and keep (local.py); None when it was measured elsewhere.
    here: TreeGuard | None = None

    @property
    def exp_id(self) -> str:
        if self.candidate is not None:
            return self.candidate.exp_id
        if self.kind == CONFIRM:
            return f"confirmation-{(self.tip or '')[:12]}"
        return f"calibration-{self.parent[:12]}"

    @property
    def draft(self) -> Draft:
        assert self.candidate is not None, "only an experiment has a record"
        return self.candidate.draft

    @property
    def stale(self) -> list[StaleWin]:
        """Its wins measured against a best that had moved by the time they landed."""
        return self.facts.stale

    @property
    def key(self) -> str:
        """Unique among the sends of this flight: its id, its measurements, its losses."""
        return f"{self.exp_id}-{len(self.stale)}-{self.losses}"


class Executor(Protocol):
    """Where a night's jobs are measured."""

    # True: each experiment out has a marker of its own under the state's `flights/`, and one
    # a dead driver left is sent again by the next night; False: the one slot is the driver's
    # own thread, its marker `inflight.json`, and recovery records it as interrupted.
    resumes_flights: bool

    def slots(self) -> int:
        """How many jobs may be out at once now (at least one)."""
        ...

    def start(self, flight: Flight) -> None:
        """Send `flight.job`; returns at once (a one-slot executor may measure it later, in
        `landed`)."""
        ...

    def landed(self, timeout: float) -> list[tuple[Flight, JobResult | Lost]]:
        """The flights whose jobs came back within about `timeout` seconds (none yet: an empty
        list, so that the night can look at its stop flag)."""
        ...

    def outage(self) -> Outage | None:
        """None, or the executor's own trouble, waited out within its grace first."""
        ...

    def cancel(self) -> None:
        """Drop every job out: the night is stopping (their markers stay, to send again)."""
        ...
