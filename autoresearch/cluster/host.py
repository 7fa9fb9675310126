"""What a bench host does for one job, inside a Dask worker: the measuring half of an experiment.

The host keeps its own clone of the target and two worktrees in it, the baseline and the
candidate (named as the driver's are, repo/arms.py). For a job it fetches the session branch (a
git bundle the driver sent through Dask, or a shared remote), puts the baseline at the job's best
and builds it (once per best), calibrates that best on this host when it has not yet (the noise
and threshold here, not the driver's), applies the patch to the candidate, builds it and runs
both arms interleaved until the decision rule's stopping point. It returns samples, log tails
and its fingerprint; the driver decides, checks, keeps and journals. Nothing here writes to the
session's repository.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import platform
import re
import shutil
import socket
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..atomic import write_json_atomic
from ..bench.calibrate import calibrate
from ..bench.fingerprint import environment
from ..bench.jobs import CONFIRM, EXPERIMENT, Job, JobResult
from ..bench.measure import (
    BASELINE,
    CANDIDATE,
    Harness,
    PairMeasurement,
    measure_pair,
    prepare_baseline,
)
from ..bench.orphans import stop_orphans_at_exit
from ..bench.proc import RunResult, kill_processes, process_token, read_log
from ..bench.staging import unstage
from ..decide.calibration import Calibration, calibrated_config
from ..decide.rule import Judge
from ..errors import UserError
from ..journal.draft import now_iso
from ..journal.records import CalibrationRecord
from ..process.capture import capture
from ..repo.arms import arm_dirs
from ..repo.gitrepo import Repo
from ..repo.guard import TreeGuard
from ..repo.seal import RepoSeal
from ..repo.watch import Watches
from ..repo.workspace import BaselineTree, apply_patch, clean, put_back_output, save_output
from ..statuses import Status

__all__ = [
    "QUIET_WORKER",
    "QUIET_WORKER_ENV",
    "TELLING_SCHEDULER",
    "TELLING_SCHEDULER_ENV",
    "host_sessions",
    "measure_job",
    "profiled_hosts",
    "profiler_on",
    "retries_unsaid",
    "run_job",
]

LOG_TAIL_BYTES = 64 * 1024  # of each log sent back: the whole of a bench's METRIC output
# The Dask configuration a bench host's worker runs with (`--cluster local:N` sets it; the
# guide's `dask worker` line sets it by environment). Dask's statistical profiler samples the
# worker's threads every 10 ms, beside the bench: a worker waiting 10 s on a command spends
# about twice the CPU with it on (benchmarks/host_worker_cpu.py: 0.47-0.55 s against 0.28-0.35).
QUIET_WORKER = {"distributed.worker.profile.enabled": False}
QUIET_WORKER_ENV = {"DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False"}  # the same, set outside
# The scheduler's: a job whose host dies comes back to the driver at once (KilledWorker, naming
# the host), which sends it again and records the loss; by default the scheduler would run it
# again itself, up to three hosts, unsaid.
TELLING_SCHEDULER = {"distributed.scheduler.allowed-failures": 0}
TELLING_SCHEDULER_ENV = {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"}


def retries_unsaid(client: Any) -> int:
    """How many hosts the scheduler lets die under one job before it says so (0: at once); 0
    when it cannot say."""
    try:
        return int(client.run_on_scheduler(_allowed_failures))
    except Exception:
        return 0


def _allowed_failures(dask_scheduler: Any) -> int:
    return int(getattr(dask_scheduler, "allowed_failures", 0))


def profiler_on() -> bool:
    """Run on a worker: whether its Dask profiler samples beside the bench."""
    import dask

    return bool(dask.config.get("distributed.worker.profile.enabled", True))


def profiled_hosts(client: Any, hosts: list[str]) -> list[str]:
    """The hosts whose Dask profiler is on; none when they cannot say (a host that left, or
    one whose autoresearch predates the question): a warning is not worth a night."""
    try:
        answers = client.run(profiler_on, workers=hosts)
    except Exception:
        return []
    return sorted(worker for worker, on in answers.items() if on)


def run_job(job: Job, bundle: bytes | None = None, workdir: str | None = None) -> JobResult:
    """Measure `job` on this host, inside its Dask worker; everything the driver needs, as
    values."""
    root = _host_root(job, workdir)
    stop_orphans_at_exit(process_token(root))  # a killed worker's bench stops with it
    return measure_job(job, root, bundle)


def measure_job(job: Job, root: Path, bundle: bytes | None = None) -> JobResult:
    """Measure `job` in the host clone at `root` (the session branch from `bundle`, or from
    `cluster.remote` without one)."""
    started, started_at = time.time(), now_iso()
    host = Host(root, tuple(job.config.bench.keep))
    # Every process a job starts carries this host's token: what a worker killed mid-job left
    # running (its bench goes on, orphaned) is found and stopped before this job measures.
    token = process_token(host.root)
    left = kill_processes(token)
    # This host's own logs within the session's budget: the driver keeps the tails that count.
    _prune_oldest(host.root / "logs", job.config.session.max_logs_mb * 1e6)
    harness = Harness(job.config, env=job.env, stop=None, token=token, runner=job.runner)
    facts = JobResult(
        host=socket.gethostname(),
        worker=_worker_address(),
        environment=_fingerprint(),
        started_at=started_at,
        leftovers_stopped=left,
    )
    calibration: CalibrationRecord | None = None
    calibration_new = False
    try:
        host.fetch(job, bundle)
        pair = host.prepare_baseline(job, harness)
        if pair is None and job.kind == CONFIRM:
            pair = host.confirm(job, harness)
        elif pair is None:
            calibration, calibration_new = host.calibration(job, harness)
            if job.kind == EXPERIMENT:
                config = calibrated_config(job.config, calibration)
                judge = Calibration.from_record(calibration, config.metric.name)
                facts = replace(facts, confinement=harness.confinement(host.trees[CANDIDATE].path))
                pair = host.experiment(job, harness, judge.judge(config))
    except _Failed as failed:
        done = replace(facts, failure=failed.status, failed_arm=failed.arm, detail=failed.detail)
    else:
        done = _measured(facts, pair)
    return replace(
        done,
        calibration=calibration,
        calibration_new=calibration_new,
        ended_at=now_iso(),
        duration_s=round(time.time() - started, 3),
    )


def _measured(facts: JobResult, pair: PairMeasurement | None) -> JobResult:
    """What the job measured, as values: both arms' runs, the holdout's when it ran, and the
    tails of their logs, for the driver's copies (nothing more for a calibration alone)."""
    if pair is None:
        return facts
    held = pair.holdout
    held_runs = [*held[0].runs, *held[1].runs] if held else []
    runs = [*pair.baseline.runs, *pair.candidate.runs, *held_runs, *pair.builds]
    measured = JobResult.of_pair(pair, tails=_tails(runs))
    return replace(
        measured,
        host=facts.host,
        worker=facts.worker,
        environment=facts.environment,
        started_at=facts.started_at,
        confinement=facts.confinement,
        leftovers_stopped=facts.leftovers_stopped,
    )


class _Failed(Exception):
    """The job cannot measure: a failed fetch, apply or calibration, named for the record."""

    def __init__(self, status: Status, detail: str, arm: str | None = None):
        super().__init__(detail)
        self.status, self.detail, self.arm = status, detail, arm


class Host:
    """This host's clone of the target, its two worktrees, its calibrations and logs."""

    def __init__(self, root: Path, keep: tuple[str, ...] = ()):
        self.root = root
        self.repo_path = root / "repo"
        # One job at a time holds this clone: a lock git left is from a worker killed mid-way.
        git_dir = self.repo_path / ".git"
        for pattern in ("*.lock", "worktrees/*/*.lock", "refs/**/*.lock"):
            for lock in git_dir.glob(pattern):
                lock.unlink(missing_ok=True)
        if not (self.repo_path / ".git").exists():
            self.repo_path.mkdir(parents=True, exist_ok=True)
            made = capture(["git", "init", "--quiet", str(self.repo_path)], cwd=root)
            if not made.ok:
                raise UserError(f"{self.repo_path}: git init failed: {made.why()}")
        self.repo = Repo(self.repo_path)
        unstage(root)  # an arm a worker killed mid-run left staged, back in its place
        arms = arm_dirs(root, (BASELINE, CANDIDATE))  # names that do not say which arm
        self.trees = {
            BASELINE: BaselineTree(
                self.repo, arms[BASELINE], stamp=root / "baseline.built", keep=keep
            ),
            CANDIDATE: BaselineTree(self.repo, arms[CANDIDATE], keep=keep),
        }

    def log(self, exp_id: str, name: str) -> Path:
        path = self.root / "logs" / exp_id / f"{name}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def fetch(self, job: Job, bundle: bytes | None) -> None:
        """The commits the job needs, from the bundle or the remote, unless already here."""
        wanted = [c for c in (job.parent, job.tip) if c]
        if all(self.repo.resolve(f"{c}^{{commit}}") for c in wanted):
            return
        refspec = f"+refs/heads/{job.branch}:refs/autoresearch/{job.branch}"
        if bundle is not None:
            with tempfile.NamedTemporaryFile(dir=self.root, suffix=".bundle") as handle:
                handle.write(bundle)
                handle.flush()
                fetched = self.repo.run("fetch", "--quiet", handle.name, refspec)
        else:
            fetched = self.repo.run("fetch", "--quiet", job.config.cluster.remote, refspec)
        missing = [c for c in wanted if not self.repo.resolve(f"{c}^{{commit}}")]
        if not fetched.ok or missing:
            raise _Failed(
                Status.INTERRUPTED,
                f"this host could not fetch {', '.join(c[:10] for c in missing)} "
                f"({fetched.err.strip() or 'not in what it fetched'})",
            )

    def prepare_baseline(self, job: Job, harness: Harness) -> PairMeasurement | None:
        """The baseline arm at the job's parent, built once for as long as it stays there;
        a measurement holding the failure when it cannot be."""
        log = self.log(job.exp_id, "build-baseline")
        return prepare_baseline(harness, self.trees[BASELINE], job.parent, log)

    def candidate_at(self, commit: str, patch: bytes) -> Path:
        """The candidate arm's tree at `commit`, plus `patch` when there is one (unbuilt)."""
        tree = self.trees[CANDIDATE]
        moved = tree.ensure(commit)  # a moved or dirty tree is checked out afresh and cleaned
        repo = Repo.worktree(self.repo, tree.path)
        if not moved:  # clean at the commit, it may still hold the last build's ignored output
            clean(repo, tree.build_output)
        # A patched build's output (the last job's) is not this job's to build on.
        put_back_output(repo, tree.build_output)
        if patch:
            patch_file = self.root / "candidate.patch"
            patch_file.write_bytes(patch)
            applied = apply_patch(repo, patch_file)
            if not applied.ok:
                raise _Failed(Status.APPLY_FAILED, f"on this host: {applied.message}", CANDIDATE)
        return tree.path

    def calibration(self, job: Job, harness: Harness) -> tuple[CalibrationRecord, bool]:
        """The calibration this host judges the job by, and whether it measured it now: its
        own of the best (measured once, then remembered), else one a host of its kind measured
        (adopted as its own), else, when another job is measuring the best's, the latest of an
        earlier best by a host of its kind; else it measures the best's itself (always, for a
        `fresh` job)."""
        path = self.root / "calibrations" / f"{job.parent}.json"
        if path.exists() and not job.fresh:
            return CalibrationRecord.from_dict(json.loads(path.read_text())), False
        kind = host_kind()
        alike = [c for c in job.calibrations if c.host_kind == kind]
        if alike and not job.fresh:
            write_json_atomic(path, alike[-1].to_dict())
            return alike[-1], False
        borrowed = [c for c in job.fallbacks if c.host_kind == kind]
        if not job.calibrate and borrowed:
            return borrowed[-1], False
        label = f"calibration-{job.parent[:12]}"
        try:
            record = calibrate(
                job.config,
                harness,
                arms=(self.trees[BASELINE].path, self.candidate_at(job.parent, b"")),
                commit=job.parent,
                logs=lambda name: self.log(label, name),
            )
        except UserError as exc:
            raise _Failed(
                Status.BASELINE_FAILED, f"calibration on this host: {exc}", BASELINE
            ) from None
        if record is None:
            raise _Failed(Status.INTERRUPTED, "calibration stopped by a signal")
        self._built_unpatched()
        record = replace(record, host=socket.gethostname(), host_kind=host_kind())
        write_json_atomic(path, record.to_dict())
        return record, True

    def experiment(self, job: Job, harness: Harness, judge: Judge) -> PairMeasurement:
        """The candidate against the best under a guard of this host's own trees and clone,
        as the driver guards its own (loop/lifecycle.py): a run that writes the baseline's
        tree, the clone's git directory or files outside its patch is `tampered`, and what it
        did is undone before the next job measures here."""
        arms = (self.trees[BASELINE].path, self.candidate_at(job.parent, job.patch))
        watches = Watches()  # this job's: closed with it, a worker runs many
        guard = TreeGuard(
            candidate=Repo.worktree(self.repo, arms[1]),
            branch=job.branch,
            baseline=arms[0],
            checkout=self.repo,
            patch_paths=list(job.paths),
            # The clone's git directory and refs (a hook or a `core.fsmonitor` planted there
            # would run in this host's next git call); no journal is kept here.
            seal=RepoSeal(self.repo, self.root / "no-journal", watch_journal=False),
            # Its own checkout is nobody's: never checked out, no HEAD to compare.
            confined=True,
            watches=watches,
        )
        logs = lambda name: self.log(job.exp_id, name)  # noqa: E731
        try:
            harness.guard = guard
            pair = measure_pair(harness, arms, logs, judge=judge)
            if pair.status == Status.TAMPERED:
                # What the guard covers, then the baseline's build, which is not the best's
                # any more (its next `ensure` checks the tree out afresh and cleans it).
                left = guard.restore()
                self.trees[BASELINE].mark_built(None)
                if left:
                    pair.detail = f"{pair.detail}; NOT put back on this host: {'; '.join(left)}"
        finally:
            watches.close()
        return pair

    def confirm(self, job: Job, harness: Harness) -> PairMeasurement:
        assert job.tip is not None
        arms = (self.trees[BASELINE].path, self.candidate_at(job.tip, b""))
        logs = lambda name: self.log(job.exp_id, name)  # noqa: E731
        held = job.runs if job.config.holdout.command else 0
        pair = measure_pair(harness, arms, logs, pairs=job.runs, holdout_pairs=held)
        if pair.failure is None:
            self._built_unpatched()
        return pair

    def _built_unpatched(self) -> None:
        """The candidate tree was built at a commit without a patch: its kept output is one
        later jobs may build on (repo/workspace.save_output)."""
        tree = self.trees[CANDIDATE]
        save_output(Repo.worktree(self.repo, tree.path), tree.build_output)


def _host_root(job: Job, workdir: str | None) -> Path:
    """The clone's directory, found again after a worker restarts: under the configured
    directory, else beside the workers' own scratch directories (which Dask makes anew for
    each worker process), in a directory of the session's own (host_sessions); named by the
    worker's `--name`, else a slot of this machine. Either is held locked by the worker
    process while it lives, so that two live workers never share a clone and a restarted one
    takes back the one its predecessor left."""
    worker = _worker()
    base: str | Path = workdir or job.config.cluster.workdir
    if not base:
        base = Path(worker.local_directory).parent if worker is not None else tempfile.gettempdir()
    named = worker is not None and str(worker.name) != str(worker.address)
    name = re.sub(r"[^A-Za-z0-9._-]", "_", str(worker.name)) if named else None
    root = _slot(host_sessions(job, Path(base)), name)
    root.mkdir(parents=True, exist_ok=True)
    return root


def host_sessions(job: Job, base: Path) -> Path:
    """Where a session's host clones live under `base`: keyed by the session's identity (the
    driver's machine, its repository and the session's name), not its name alone: two
    repositories' sessions of one name, measured on the same hosts at once, never share a
    clone (each would stop the other's benches as its own leftovers)."""
    identity = f"{job.origin}\0{job.config.repo_path}\0{job.config.session.name}"
    digest = hashlib.sha256(identity.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return base / "autoresearch" / f"{job.config.session.name}-{digest}"


_SLOTS: dict[Path, Path] = {}  # the slot this process holds, by sessions directory
_SLOT_LOCKS: list[int] = []  # their locks, held for the life of the process


def _slot(sessions: Path, name: str | None = None) -> Path:
    """The clone directory this process holds, locked for its life: `name` (a worker's own)
    when no live process holds it, else the lowest slot (`<host>-<n>`) none holds."""
    held = _SLOTS.get(sessions)
    if held is not None:
        return held
    sessions.mkdir(parents=True, exist_ok=True)
    host = re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname())
    names = ([name] if name else []) + [f"{host}-{n}" for n in range(1024)]
    for candidate in names:
        root = sessions / candidate
        fd = os.open(sessions / f".{root.name}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        _SLOT_LOCKS.append(fd)
        _SLOTS[sessions] = root
        return root
    raise UserError(f"{sessions}: every host slot is held")


# The host's toolchain versions: asked once per worker process, not once per job.
_fingerprint = functools.cache(environment)


@functools.cache
def host_kind() -> str:
    """The kind of machine this is (CPU model and count, architecture, OS and kernel): a
    calibration measured on one host serves the hosts of its kind."""
    model = platform.processor() or "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.partition(":")[2].strip()
                break
    return f"{model} x{os.cpu_count()}, {platform.machine()}, {platform.platform()}"


def _worker() -> Any:
    """The Dask worker running this job (distributed has no types to check it by)."""
    try:
        from distributed import get_worker

        return get_worker()
    except (ImportError, ValueError):  # not inside a worker: a direct call
        return None


def _worker_address() -> str | None:
    worker = _worker()
    return str(worker.address) if worker is not None else None


def _tails(runs: list[RunResult]) -> dict[str, str]:
    """Each log's last LOG_TAIL_BYTES, by file name, for the driver's copy."""
    found = {}
    for run in runs:
        text = read_log(run.log_path)
        found[Path(run.log_path).name] = text[-LOG_TAIL_BYTES:]
    return found


def _prune_oldest(directory: Path, budget_bytes: float) -> int:
    """`directory`'s oldest subdirectories removed until what it holds fits `budget_bytes` (this
    host's logs, whose tails the driver keeps under the retention rule); how many went."""
    if not directory.is_dir():
        return 0
    sizes = {}
    for entry in directory.iterdir():
        with contextlib.suppress(OSError):
            if entry.is_dir():
                files = [f.stat().st_size for f in entry.rglob("*") if f.is_file()]
                sizes[entry] = (entry.stat().st_mtime, sum(files))
    total, removed = sum(size for _, size in sizes.values()), 0
    for entry, (_, size) in sorted(sizes.items(), key=lambda item: item[1][0]):
        if total <= budget_bytes:
            break
        shutil.rmtree(entry, ignore_errors=True)
        total, removed = total - size, removed + 1
    return removed
