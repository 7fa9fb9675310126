"""The one measurement: two arms built, then run alternately until the rule decides.

Calibration (the best against itself), an experiment (the best against a candidate), the
confirmation (the base against the tip), `try` and a bench host all measure through
`measure_pair`. Alternating B C C B B C ... puts both arms through the same drift of a shared
machine, so that drift cancels instead of passing for an effect. How a failed build or run
becomes a record status is decided here and nowhere else (`run_failure`,
`PairMeasurement.status`).
"""

from __future__ import annotations

import contextlib
import statistics
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from ..atomic import require_space
from ..config import Config
from ..decide.rule import Judge
from ..filestate import redate
from ..journal.decision import Decision
from ..journal.placement import Confinement
from ..repo.workspace import BaselineTree
from ..statuses import Aggregate, Direction, Status
from .armstate import ArmStates
from .channel import Channel, run_env
from .environ import bench_environ
from .equivalence import equivalence_failure
from .fetched import fetch, fetched_env
from .handed import CHANNEL_FD
from .holdout_runs import measure_holdout
from .private_tmp import private_tmp
from .proc import RunResult
from .runners import Runner, runners_for
from .samples import BASELINE, CANDIDATE, Measurement, PairMeasurement
from .testcount import read_report, report_env
from .void_runs import read_sample

Samples = dict[str, list[float]]  # by metric, one value a run

__all__ = [
    "BASELINE",
    "CANDIDATE",
    "Harness",
    "Measurement",
    "PairMeasurement",
    "measure_pair",
    "prepare_baseline",
    "run_failure",
]

TEST_REPORT = "autoresearch-test-report"  # the checks' test report (testcount.py)


class Guard(Protocol):
    """What checks that a run changed nothing it may not (repo/guard.py's TreeGuard)."""

    def before_run(self) -> None: ...

    def violation(self, checkout: bool = True) -> str | None: ...


class Harness:
    """Runs a config's build and bench commands, with logs, timeouts and the stop signal."""

    def __init__(
        self,
        config: Config,
        *,
        env: dict[str, str],
        stop: threading.Event | None,
        on_start: Callable[[int], None] | None = None,
        token: str | None = None,
        guard: Guard | None = None,
        runner: Runner | None = None,
        arm_states: ArmStates | None = None,
    ):
        self.config = config
        made = runners_for(config, runner)
        self.unconfined = made.unconfined
        self.runner, self.build_runner = made.main, made.build
        self.holdout_runner, self.profile_runner = made.holdout, made.profile
        # The metrics whose least disturbed run is the highest, for `aggregate = "best"`.
        self._higher = {m.name for m in config.all_metrics() if m.direction == Direction.HIGHER}
        self.env = {**config.bench.env, **env, **fetched_env(config)}
        # What the runs get of the user's environment (environ.py): never the loop's secrets.
        self.environ = bench_environ(config.bench.pass_env)
        self.stop = stop
        self.on_start = on_start
        self.token = token
        # What changed that a run may not change (see repo/guard.py): told before every run of
        # the candidate, asked after it (`violation(False)`: the cheap part), and whole at
        # every look and at the end.
        self.guard = guard
        # Each arm's state (armstate.py): the session's, kept from one measurement to the
        # next, or this harness's own.
        self.arm_states = arm_states or ArmStates()
        self._measuring: tuple[Path, ...] = ()  # the arms `_same_state` is measuring

    def fetch(self, log: Path) -> RunResult | None:
        """`[bench] fetch`, in your checkout, unconfined (fetched.py); None without one."""
        return fetch(self.config, self.env, self.environ, log, self.stop)

    def build(self, cwd: Path, log: Path) -> RunResult | None:
        """Run the build command once in `cwd`; None when the config has none."""
        if not self.config.bench.build:
            return None
        return self._run(self.config.bench.build, cwd, log, runner=self.build_runner)

    def confinement(self, cwd: Path) -> Confinement:
        """How this harness's runs in `cwd` are confined, for the record."""
        describe = getattr(self.runner, "confinement", None)
        found = describe(cwd) if describe is not None else None
        return found or Confinement.unconfined(self.unconfined or "not a local run")

    def checks(
        self, cwd: Path, log: Path, on_start: Callable[[int], None] | None = None
    ) -> RunResult:
        """One run of the checks in `cwd`, with their own timeout and environment, and the
        test count their report holds, written outside the tree (testcount.py)."""
        checks = self.config.checks
        env = {**self.env, **checks.env}
        if getattr(self.runner, "sandbox", None) is not None:  # its own /tmp, beside the tree
            seen, report = f"/tmp/{TEST_REPORT}", private_tmp(cwd) / TEST_REPORT
        else:
            report = log.with_name(f"{log.name}.{TEST_REPORT}")
            seen = str(report)
        report.unlink(missing_ok=True)
        result = self.runner.run(
            checks.command,
            cwd=cwd,
            log_path=log,
            timeout_s=checks.timeout_s,
            env={**env, **report_env(env, seen)},
            environ=self.environ,
            stop=self.stop,
            on_start=on_start or self.on_start,
            token=self.token,
        )
        return replace(result, tests=read_report(report))

    def bench(
        self, cwd: Path, log: Path, sentinels_only: bool = False, holdout: bool = False
    ) -> RunResult:
        """One bench run (or one of `bench.sentinel_command`, or of `holdout.command`), its
        output left for the caller to read."""
        bench = self.config.bench
        if bench.output:  # what an earlier run wrote must not pass for this run's
            (cwd / bench.output).unlink(missing_ok=True)
        command = bench.sentinel_command if sentinels_only else bench.command
        if holdout:  # its command finds its files as every run is told (channel.py)
            command = self.config.holdout.command
        runner = self.holdout_runner if holdout else self.runner
        return self._measured(command, cwd, log, runner=runner)

    def _measured(
        self,
        command: str,
        cwd: Path,
        log: Path,
        runner: Runner | None = None,
        timeout_s: float | None = None,
        stdout_copy: Path | None = None,
    ) -> RunResult:
        """A run that is measured or looked at (a bench run, the sentinel command's, the
        holdout's, the equivalence run, the profile): each handed the same world, the METRIC
        channel at its number and the same variables (channel.py), whatever it is."""
        log.parent.mkdir(parents=True, exist_ok=True)
        channel = Channel()
        try:
            result = (runner or self.runner).run(
                command,
                cwd=cwd,
                log_path=log,
                timeout_s=timeout_s or self.config.bench.timeout_s,
                env={**self.env, **run_env(self.config, cwd)},
                handed={CHANNEL_FD: channel.write_end},
                stdout_copy=stdout_copy,
                environ=self.environ,
                stop=self.stop,
                on_start=self.on_start,
                token=self.token,
            )
            channel.keep(log)
            return result
        finally:
            channel.close()

    def bench_once(
        self,
        cwd: Path,
        log: Path,
        into: Measurement,
        check: bool = True,
        sentinels_only: bool = False,
    ) -> bool:
        """One sample into `into`: `bench.repeat` runs in a row, each metric aggregated; False
        (with `into.failure`) if a run failed. `check`: verify the trees after each run (the
        candidate's runs). `sentinels_only`: run `bench.sentinel_command` instead."""
        repeat = self.config.bench.repeat
        collected: dict[str, list[float]] = {}
        for k in range(1, repeat + 1):
            path = log if repeat == 1 else log.with_name(f"{log.stem}.{k}{log.suffix}")
            values = self._bench_values(cwd, path, into, check, sentinels_only)
            if values is None:
                return False
            for name, value in values.items():
                collected.setdefault(name, []).append(value)
        for name, runs in collected.items():
            into.samples.setdefault(name, []).append(self._aggregate(name, runs))
        return True

    def _aggregate(self, name: str, values: list[float]) -> float:
        if len(values) == 1:
            return values[0]
        if self.config.bench.aggregate == Aggregate.MEDIAN:
            return statistics.median(values)
        return max(values) if name in self._higher else min(values)

    @contextlib.contextmanager
    def _same_state(self, trees: tuple[Path, Path]) -> Iterator[None]:
        """Each bench run of these arms starts from the state their builds left in their trees
        and their caches (filestate.py): taken now, put back after every run. A toolchain
        that compiles as it benches (`go test -bench` without a build step) compiles again
        each run what it did not have: `init` gives it a build step that fills its cache."""
        for cwd in trees:
            beside = self.runner.arm_state(cwd)
            for cache in beside:
                redate(cache)
            self.arm_states.take(cwd, [cwd, *beside])
        self._measuring = tuple(trees)
        try:
            yield
        finally:
            self._measuring = ()

    def _bench_values(
        self,
        cwd: Path,
        log: Path,
        into: Measurement,
        check: bool,
        sentinels_only: bool = False,
        holdout: bool = False,
    ) -> dict[str, float] | None:
        try:
            return self._sample(cwd, log, into, check, sentinels_only, holdout)
        finally:
            self.put_back(cwd)

    def holdout_values(
        self, cwd: Path, log: Path, into: Measurement, arm: str
    ) -> dict[str, float] | None:
        """One run of the holdout in `cwd` (holdout_runs.py), checked like the candidate's bench
        runs when it is the candidate's; None (with `into.failure`) when it failed."""
        return self._bench_values(cwd, log, into, arm == CANDIDATE, holdout=True)

    def profile_run(self, cwd: Path, log: Path) -> RunResult:
        """One run of `[profile] command` in `cwd` (bench/profiling.py), in the world of a
        bench run, with its own timeout."""
        profile = self.config.profile
        runner = self.profile_runner
        return self._measured(profile.command, cwd, log, runner=runner, timeout_s=profile.timeout_s)

    def put_back(self, cwd: Path) -> None:
        """The arm in `cwd` as `_same_state` found it, when one is being measured."""
        if cwd in self._measuring:
            self.arm_states.put_back(cwd)

    def equivalence_run(self, cwd: Path, log: Path, stdout_copy: Path) -> RunResult:
        """One run of `[equivalence] command` in `cwd`, in the world of a bench run, its
        standard output copied to `stdout_copy` (equivalence.py, which puts the arm back once
        it read what the run wrote)."""
        eq = self.config.equivalence
        return self._measured(eq.command, cwd, log, timeout_s=eq.timeout_s, stdout_copy=stdout_copy)

    def _sample(
        self,
        cwd: Path,
        log: Path,
        into: Measurement,
        check: bool,
        sentinels_only: bool,
        holdout: bool = False,
    ) -> dict[str, float] | None:
        guard = self.guard if check else None
        if guard is not None:
            guard.before_run()
        outcome = self.bench(cwd, log, sentinels_only, holdout)
        into.runs.append(outcome)
        failure, detail = run_failure(outcome, "bench")
        tampered = guard.violation(False) if guard is not None else None
        if tampered is not None:
            failure, detail = Status.TAMPERED, tampered
        if failure is None:
            log_path = Path(outcome.log_path)
            values, detail = read_sample(self.config, log_path, cwd, sentinels_only, holdout)
            if values is None:
                failure = Status.CRASH
        if failure is not None:
            require_space(Path(outcome.log_path), "the bench's output")
            into.failure, into.detail = failure, detail
            return None
        return values

    def _interleave(
        self,
        pair: PairMeasurement,
        *,
        baseline_dir: Path,
        candidate_dir: Path,
        log_for: Callable[[str, int], Path],
        max_pairs: int,
        judge: Callable[[Samples, Samples, bool], Decision | None] | None = None,
        looks: list[int] | None = None,
        on_run: Callable[[str, int], None] | None = None,
        awaiting_sentinels: Callable[[], bool] | None = None,
    ) -> PairMeasurement:
        """Alternate the arms (B C, C B, ...) until `judge` decides at a look or the cap.
        While `awaiting_sentinels()` (a win stands, its sentinels unresolved), the pairs run
        `bench.sentinel_command` when there is one. Called by `measure_pair` only."""
        arms = {BASELINE: (baseline_dir, pair.baseline), CANDIDATE: (candidate_dir, pair.candidate)}
        # Warm-up runs of each arm, measured and dropped: the first runs after a build pay
        # for cold caches that later runs do not.
        for w in range(1, self.config.bench.warmup_runs + 1):
            for arm, (cwd, _) in arms.items():
                warm = self._bench_values(
                    cwd, log_for(f"{arm}-warmup", w), pair.warmup, arm == CANDIDATE
                )
                if warm is None:
                    pair.failure, pair.failed_arm = pair.warmup.failure, arm
                    pair.detail = f"{arm} arm, warm-up: {pair.warmup.detail}"
                    return self._verified(pair)
        for i in range(1, max_pairs + 1):
            order = (BASELINE, CANDIDATE) if i % 2 else (CANDIDATE, BASELINE)
            sentinels_only = bool(
                self.config.bench.sentinel_command and awaiting_sentinels and awaiting_sentinels()
            )
            for arm in order:
                cwd, into = arms[arm]
                if on_run:
                    on_run(arm, i)
                if not self.bench_once(
                    cwd, log_for(arm, i), into, arm == CANDIDATE, sentinels_only
                ):
                    pair.failure, pair.failed_arm = into.failure, arm
                    pair.detail = f"{arm} arm: {into.detail}"
                    return self._verified(pair)
            if judge is not None and (i in (looks or []) or i == max_pairs):
                # Nothing is decided on runs that something outside the patch swayed.
                if self._verified(pair).failure == Status.TAMPERED:
                    return pair
                pair.decision = judge(pair.baseline.samples, pair.candidate.samples, i == max_pairs)
                if pair.decision is not None:
                    return pair
        return self._verified(pair)

    def _verified(self, pair: PairMeasurement) -> PairMeasurement:
        """The whole check (your checkout too): a violation makes the measurement tampered."""
        tampered = self.guard.violation(True) if self.guard is not None else None
        if tampered is not None and pair.failure != Status.TAMPERED:
            pair.failure, pair.decision, pair.detail = Status.TAMPERED, None, tampered
        return pair

    def _run(
        self,
        command: str,
        cwd: Path,
        log: Path,
        env: dict[str, str] | None = None,
        runner: Runner | None = None,
        timeout_s: float | None = None,
    ) -> RunResult:
        return (runner or self.runner).run(
            command,
            cwd=cwd,
            log_path=log,
            timeout_s=timeout_s or self.config.bench.timeout_s,
            env={**self.env, **(env or {})},
            environ=self.environ,
            stop=self.stop,
            on_start=self.on_start,
            token=self.token,
        )


def run_failure(outcome: RunResult, what: str) -> tuple[Status | None, str]:
    """What a failed build or bench run means for the record: (status, detail), or (None, "")."""
    if outcome.timed_out:
        return Status.TIMEOUT, f"{what} {outcome.describe()}; log: {outcome.log_path}"
    if outcome.interrupted:
        return Status.INTERRUPTED, f"{what} stopped by a signal"
    if outcome.exit_code != 0:
        return Status.CRASH, f"{what} {outcome.describe()}; log: {outcome.log_path}"
    return None, ""


def prepare_baseline(
    harness: Harness, tree: BaselineTree, commit: str, log: Path
) -> PairMeasurement | None:
    """The baseline arm at `commit`, built once for as long as it stays there: None when it is
    ready, else a measurement holding why not (its build failed, or was stopped)."""
    if not tree.ensure(commit) and tree.built_at == commit:
        return None
    tree.mark_built(None)
    built = harness.build(tree.path, log)
    if built is not None:
        failure, detail = run_failure(built, "build")
        if failure is not None:
            return PairMeasurement(
                builds=[built],
                failure=failure,
                failed_arm=BASELINE,
                detail=f"the build of the best {commit[:10]} failed: {detail}",
            )
    tree.mark_built(commit)
    return None


def measure_pair(
    harness: Harness,
    arms: tuple[Path, Path],
    logs: Callable[[str], Path],
    *,
    build: bool = True,
    judge: Judge | None = None,
    pairs: int = 0,
    on_run: Callable[[str, int], None] | None = None,
    holdout_pairs: int = 0,
) -> PairMeasurement:
    """Baseline `arms[0]` (ready: see `prepare_baseline`) against candidate `arms[1]`: build
    the candidate (unless `build` is False), then run both alternately until `judge` decides
    at one of its looks, or for `pairs` pairs without one. `logs(name)` is where each run's
    output goes ("build", "baseline-3", ...). A failure is in the result (`failure`,
    `failed_arm`, `status`), never raised. A decided keep runs the holdout (holdout_runs.py) on
    its own; `holdout_pairs` runs it after measuring without a judge (the confirmation)."""
    pair = PairMeasurement()
    if build and harness.guard is not None:
        harness.guard.before_run()
    built = harness.build(arms[1], logs("build")) if build else None
    if built is not None:
        pair.builds.append(built)
        failure, detail = run_failure(built, "build")
        tampered = harness.guard.violation(True) if harness.guard is not None else None
        if tampered is not None:
            failure, detail = Status.TAMPERED, f"build: {tampered}"
        if failure is not None:
            pair.failure, pair.failed_arm, pair.detail = failure, CANDIDATE, detail
            return pair
    with harness._same_state(arms):
        if judge is not None and harness.config.equivalence.command:
            differs = equivalence_failure(harness, arms, logs)
            if differs is not None:
                pair.failed_arm = BASELINE if differs[0] == Status.BASELINE_FAILED else CANDIDATE
                pair.failure, pair.detail = differs
                return pair
        pair = harness._interleave(
            pair,
            baseline_dir=arms[0],
            candidate_dir=arms[1],
            log_for=lambda arm, i: logs(f"{arm}-{i}"),
            max_pairs=judge.limit if judge is not None else pairs,
            judge=judge.look if judge is not None else None,
            looks=judge.looks if judge is not None else None,
            on_run=on_run,
            awaiting_sentinels=(lambda: judge.awaiting_sentinels) if judge is not None else None,
        )
        decided = pair.decision.status if pair.decision is not None else None
        if decided == Status.KEEP and harness.config.holdout.command:
            pair = measure_holdout(harness, pair, arms, logs)
        elif holdout_pairs and pair.failure is None:
            pair = measure_holdout(harness, pair, arms, logs, holdout_pairs)
        return pair
