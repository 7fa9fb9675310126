"""An open session: its lock, worktrees, journal and recovery, shared by `run` and `confirm`."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..atomic import fresh_name, write_json_atomic
from ..bench.armstate import ArmStates
from ..bench.fingerprint import environment
from ..bench.measure import Harness, prepare_baseline
from ..bench.proc import StopFlag, process_token
from ..bench.runners import Runner
from ..bench.sandbox import sandbox_for, unconfined_warning
from ..bench.staging import unstage
from ..config import Config
from ..decide.calibration import Calibration
from ..decide.headline import baseline_calibration, session_metric
from ..errors import UserError
from ..journal.attempts import Attempt, attempts_by_patch, may_run_again, tried_patches
from ..journal.digest import SessionDigest
from ..journal.draft import now_iso
from ..journal.records import CalibrationRecord, ExperimentRecord, SessionRecord
from ..journal.store import Journal
from ..progress import Plan, Progress
from ..proposers import make_proposer
from ..proposers.chain import ProposerChain
from ..repo.state_dir import SessionLock, SessionPaths, read_inflight, session_paths
from ..repo.watch import Watches
from ..repo.workspace import BaselineTree, Workspace, open_workspace
from ..statuses import Status
from .preflight import require_scripts
from .recovery import KeptCommit, kept_commits, next_experiment_number, reconcile_branch, recover
from .signals import stop_on_signals

__all__ = [
    "RunOptions",
    "Session",
    "StopRequested",
    "Tally",
    "harness_env",
    "log_label",
    "marker",
    "open_session",
    "prepare_best",
]


@dataclass(frozen=True)
class RunOptions:
    """Overrides from the command line; None keeps the config's value."""

    max_experiments: int | None = None
    max_hours: float | None = None
    stop_after_no_keep: int | None = None
    confirm: bool | None = None
    env: dict[str, str] = field(default_factory=dict)
    # Spend the night even when the calibration says the bench is too noisy for the effect asked.
    accept_noise: bool = False
    # How the target's build, bench and checks run: this machine's processes, as the config
    # says (None), or another runner behind the same seam (bench/runners.py): a simulated one
    # measures the same lifecycle without a process, on this machine or a bench host.
    runner: Runner | None = None

    def apply(self, config: Config) -> Config:
        """The config with these overrides merged in: the rest of the run reads only it."""
        budget = config.budget
        overrides: dict[str, Any] = {
            "max_experiments": self.max_experiments or budget.max_experiments,
            "max_hours": self.max_hours or budget.max_hours,
            "stop_after_no_keep": budget.stop_after_no_keep
            if self.stop_after_no_keep is None
            else self.stop_after_no_keep,
        }
        decision = config.decision
        if self.confirm is not None:
            decision = dataclasses.replace(decision, confirm=self.confirm)
        return dataclasses.replace(
            config, budget=dataclasses.replace(budget, **overrides), decision=decision
        )


@dataclass
class Tally:
    """The session's counts: where it stands (`Journal.standing`, the journal's own reducer
    folded on with each record the night appends) and this run's own counts."""

    standing: SessionDigest  # the session's figures, earlier runs included
    next_n: int  # the number of the next experiment: never one used before
    ran: int = 0  # in this run
    kept: int = 0  # in this run
    baseline_failures: int = 0  # experiments in a row whose baseline arm failed

    @property
    def done(self) -> int:
        """Experiments in the session, including earlier runs."""
        return self.standing.experiments

    @property
    def no_keep_streak(self) -> int:
        return self.standing.no_keep_streak

    def add(self, record: ExperimentRecord) -> None:
        """Count `record`, which the journal has folded into `standing` as it appended it."""
        self.ran += 1
        self.next_n = max(self.next_n, record.n + 1)
        failed = record.status == Status.BASELINE_FAILED
        self.baseline_failures = self.baseline_failures + 1 if failed else 0
        if record.status == Status.KEEP:
            self.kept += 1


@dataclass
class Session:
    """An open session: what one invocation carries from experiment to experiment."""

    config: Config  # with the command line's overrides merged in
    options: RunOptions
    progress: Progress
    paths: SessionPaths
    ws: Workspace
    baseline_tree: BaselineTree
    journal: Journal
    proposer: ProposerChain  # what make_proposer gives: the proposers, in turn
    stop: StopFlag
    base_commit: str
    baseline: float | None  # the session's first calibrated median of the primary metric
    tried: set[str]  # patches not to propose again
    attempts: dict[str, list[Attempt]]  # by patch: its tries so far
    tally: Tally
    calibration: Calibration | None = None  # the current best, as last measured
    started: float = field(default_factory=time.monotonic)
    stop_error: str | None = None  # why the night cannot go on, when it cannot
    # Every experiment's whole record, oldest first, once a proposer has read them (`records`).
    whole: list[ExperimentRecord] | None = None
    keep_changes: dict[str, float | None] = field(default_factory=dict)  # by experiment id
    # Inotify watches on the trees the tamper guard fingerprints, for the session's life.
    watches: Watches = field(default_factory=Watches)
    plan: Plan = field(default_factory=Plan)  # the run's "n of N"
    # Each arm's state for putting it back after every bench run, kept from one measurement
    # to the next (bench/armstate.py).
    arm_states: ArmStates = field(default_factory=ArmStates)

    def records(self) -> list[ExperimentRecord]:
        """The session's experiment records, whole, by number: read from the journal the first
        time a proposer asks (a sweep, an agent; a queue never does), then kept up to date."""
        if self.whole is None:
            self.whole = sorted(self.journal.read().experiments, key=lambda r: r.n)
        return self.whole

    def add(self, record: ExperimentRecord, span) -> None:
        """A record just journaled at `span`: counted, and remembered as an attempt."""
        attempts = self.attempts.setdefault(record.patch_sha256, [])
        attempts.append(Attempt.of(record, span))
        if not may_run_again(attempts, self.config.budget.retries):
            self.tried.add(record.patch_sha256)
        if self.whole is not None:
            self.whole.append(record)
        self.tally.add(record)

    def compounded_pct(self) -> float | None:
        """The kept changes compounded, each as its decision measured it (paired, against the
        best before it): the progress line's change from the baseline, read with the estimator
        the decisions and the confirmation use; None before the first keep. A keep's record is
        read once, by its span."""
        factor, kept = 1.0, False
        for attempts in self.attempts.values():
            for attempt in attempts:
                if attempt.status != Status.KEEP:
                    continue
                if attempt.id not in self.keep_changes:
                    record = self.journal.record(attempt)
                    change = record.evidence().change_pct if record is not None else None
                    self.keep_changes[attempt.id] = change
                change = self.keep_changes[attempt.id]
                if change is not None:
                    factor *= 1 + change / 100
                    kept = True
        return 100 * (factor - 1) if kept else None

    @property
    def best_median(self) -> float | None:
        if self.calibration is None:
            return None
        return self.calibration.median(self.config.metric.name)

    @property
    def token(self) -> str:
        """What every process the session starts carries, so that all of them can be found."""
        return process_token(self.paths.root)

    def harness(self, on_start=None) -> Harness:
        return Harness(
            self.config,
            env=harness_env(self),
            stop=self.stop,
            on_start=on_start,
            token=self.token,
            runner=self.options.runner,
            arm_states=self.arm_states,
        )


@contextlib.contextmanager
def open_session(
    config: Config,
    options: RunOptions | None = None,
    progress: Progress | None = None,
    purpose: str = "run",
    proposers: bool = True,
) -> Iterator[Session]:
    """Lock the session, open its worktrees, recover a crash, and write the session line.
    `proposers=False`: a session that judges a change it is handed (`try`, the confirmation)
    needs none, and so no queue directory either."""
    options = options or RunOptions()
    config = options.apply(config)
    progress = progress or Progress()
    paths = session_paths(config)
    with SessionLock(paths.lock), stop_on_signals() as stop:
        unstage(paths.root)  # an arm a loop killed mid-run left staged, back in its place
        ws = open_workspace(
            config.repo_path,
            config.branch,
            paths.worktree,
            config.target.base,
            config.target.git_hooks,
            tuple(config.bench.keep),
        )
        journal = Journal(config.journal_path, config.session.name)
        require_scripts(config, ws)
        _, unconfined = sandbox_for(config)  # refuses here when confinement is required
        if unconfined is not None:
            progress.warn(unconfined_warning(unconfined))
        recover(ws, journal, paths, progress, process_token(paths.root))
        commits = kept_commits(ws, config.session.name)
        reconcile_branch(ws, journal, config.session.name, progress)
        history = _History.of(journal)
        if purpose != "run" and not history.sessions:
            raise UserError(
                f"session '{config.session.name}' has no history in {config.journal_path}; "
                "run it first"
            )
        for warning in history.warnings:
            progress.warn(warning)
        base = _start_session(config, ws, journal, history, commits, progress, purpose)
        proposer = make_proposer(config) if proposers else ProposerChain([])
        with _no_phase_marker_left(paths):
            yield _session(
                config,
                options,
                progress,
                paths,
                ws,
                journal,
                stop,
                base,
                history,
                commits,
                proposer,
            )


@contextlib.contextmanager
def _no_phase_marker_left(paths: SessionPaths) -> Iterator[None]:
    """However the run ends short of dying (done, or an `error:` such as a failed calibration),
    the marker of a phase outside any experiment goes: its processes were stopped with it, and
    a marker left behind would read as a run that died. An experiment's draft stays, for the
    recovery of its record (a journal that could not be written)."""
    try:
        yield
    finally:
        with contextlib.suppress(UserError):  # a garbled marker is recovery's to report
            marker = read_inflight(paths.inflight)
            if marker is not None and "fields" not in marker:
                paths.inflight.unlink(missing_ok=True)


def _session(config, options, progress, paths, ws, journal, stop, base, history, commits, proposer):
    """The Session value of a run opening with this history: deciding on `[metric] fallback`
    when a calibration of the session switched to it."""
    if session_metric(config.metric, history.calibrations) != config.metric.name:
        config = config.deciding_on_fallback()
    attempts = attempts_by_patch(history.attempts)
    watches = Watches(quiet=journal.owns)
    ws.watches = watches
    return Session(
        config=config,
        options=options,
        progress=progress,
        paths=paths,
        ws=ws,
        baseline_tree=BaselineTree(
            ws.source, paths.baseline, keep=ws.build_output, watches=watches
        ),
        journal=journal,
        proposer=proposer,
        stop=stop,
        base_commit=base,
        baseline=_baseline_value(config, history, commits),
        tried=tried_patches(attempts, config.budget.retries),
        attempts=attempts,
        tally=Tally(
            standing=history.standing,
            next_n=next_experiment_number(paths, [history.standing.last_n], commits),
        ),
        calibration=Calibration.from_record(history.calibrations[-1], config.metric.name)
        if history.calibrations
        else None,
        watches=watches,
    )


@dataclass
class _History:
    """What opening a session reads of its journal: the session lines and calibrations whole,
    an attempt row per experiment, the reader's warnings."""

    sessions: list[SessionRecord]
    calibrations: list[CalibrationRecord]
    attempts: list[Attempt]
    warnings: list[str]
    standing: SessionDigest  # its figures, folded on as the night appends (Journal.standing)

    @classmethod
    def of(cls, journal: Journal) -> _History:
        digest = journal.digest()
        return cls(
            standing=journal.standing(),
            sessions=[SessionRecord.from_dict(d) for d in digest.sessions],
            calibrations=[CalibrationRecord.from_dict(d) for d in digest.calibrations],
            attempts=digest.attempts or [],
            warnings=digest.warnings,
        )


def _baseline_value(config: Config, history, commits: list[KeptCommit]) -> float | None:
    """The median of the base's calibration (see headline.py); when the journal lost it, the
    baseline the first kept commit's Result trailer names."""
    if history.calibrations:
        base = history.sessions[0].base_commit if history.sessions else None
        found = baseline_calibration(history.calibrations, base)
        return found.medians.get(config.metric.name) if found is not None else None
    if commits:
        try:
            value = json.loads(commits[0].trailers.get("Result") or "{}").get("baseline")
        except (json.JSONDecodeError, AttributeError):
            return None
        return value if isinstance(value, int | float) else None
    return None


def prepare_best(session: Session, commit: str, label: str) -> None:
    """The baseline worktree at `commit`, built there once: a commit the session already trusts
    (the best, the base), so a failed build ends the run."""
    failed = prepare_baseline(
        session.harness(marker(session, "build")),
        session.baseline_tree,
        commit,
        session.paths.log(label, "build-baseline"),
    )
    if failed is not None and failed.failure == Status.INTERRUPTED:
        raise StopRequested(f"the build of {commit[:10]} was stopped by a signal")
    if failed is not None:
        raise UserError(failed.detail)


class StopRequested(Exception):
    """A signal stopped a step that has no record of its own to end in (a build of the best):
    the run stops cleanly, as it does between experiments."""


def log_label(session: Session, kind: str) -> str:
    """A fresh log directory name for a calibration or confirmation."""
    return fresh_name(session.paths.logs, kind)


def harness_env(session: Session) -> dict[str, str]:
    """What the bench and checks are told: the session and its base commit, the same for every
    run of either arm (a run told its arm or phase could behave well only when it counts)."""
    return {
        "AUTORESEARCH_SESSION": session.config.session.name,
        "AUTORESEARCH_BASE_COMMIT": session.base_commit,
        **session.options.env,
    }


def marker(session: Session, phase: str):
    """An on_start callback noting a process group outside any experiment, for recovery."""
    return lambda pgid: write_json_atomic(session.paths.inflight, {"phase": phase, "pgid": pgid})


def _measured_nothing(config, ws: Workspace, history, commits, progress) -> bool:
    """A session that measured nothing yet (its pre-flight or calibration failed) whose
    configured base has moved since (the fix committed): it starts again at the new base, its
    branch moved there, rather than resuming on the base that failed."""
    if not history.sessions or history.calibrations or history.attempts or commits:
        return False
    before = history.sessions[0].base_commit
    now = ws.source.resolve(config.target.base)
    if now is None or now == before or ws.tip() != before:
        return False
    ws.restart_at(now)
    progress.warn(
        f"session '{config.session.name}' measured nothing on its base {before[:10]}; "
        f"{config.target.base} is {now[:10]} now, and the session starts again there"
    )
    return True


def _start_session(
    config, ws: Workspace, journal: Journal, history, commits, progress, purpose
) -> str:
    """Write the session line; returns the session's base commit."""
    if _measured_nothing(config, ws, history, commits, progress):
        history = dataclasses.replace(history, sessions=[])
    event = purpose if purpose != "run" else ("resume" if history.sessions else "start")
    base = history.sessions[0].base_commit if history.sessions else ws.tip()
    if not history.sessions and commits:
        # The journal lost the session (emptied, deleted, damaged) but the branch holds its
        # kept commits: the base is where they start, not the tip, or every figure would move.
        base = commits[0].parent
        event = "recover"
        progress.warn(
            f"{config.journal_path} has no session line for '{config.session.name}', but "
            f"{config.branch} holds {len(commits)} kept commit(s): their records were recovered "
            f"from the commits' trailers, and the session's base is {base[:10]}, the parent "
            "of the first kept commit"
        )
    if ws.source.is_dirty() and event == "start":
        progress.warn(
            f"{ws.source.path} has uncommitted changes; the session starts from "
            f"the committed {config.target.base} ({base[:10]})"
        )
    journal.append(
        SessionRecord(
            session=config.session.name,
            event=event,
            at=now_iso(),
            branch=config.branch,
            base_commit=base,
            tip_commit=ws.tip(),
            config=config.to_dict(),
            environment=environment(),
        )
    )
    progress.info(
        f"{'resuming' if event == 'resume' else 'starting'} session '{config.session.name}' "
        f"on {config.branch} (worktree {ws.path}); journal {config.journal_path}"
    )
    return base
