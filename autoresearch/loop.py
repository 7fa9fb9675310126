"""The driver. One experiment at a time, resumable, until a budget, a stop rule or a signal.

lock the session -> open the worktree -> recover a crashed experiment -> calibrate the baseline
repeat: next hypothesis -> check patch -> apply -> bench -> decide -> checks -> keep | revert
        -> append the record -> after a keep, calibrate the new best
"""

from __future__ import annotations

import contextlib
import signal
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .config import Config, script_path
from .decide import Decision, decide, noise_pct, threshold_pct
from .errors import UserError
from .experiment import Draft, now_iso, result_trailer
from .fingerprint import environment
from .gitrepo import open_repo
from .journal import Journal
from .measure import Measurement, measure
from .patchcheck import PatchProblem, check_paths, patch_paths
from .proc import RunResult
from .proc import run as run_command
from .progress import Progress, format_value
from .proposers import Hypothesis, Proposer, make_proposer
from .records import CalibrationRecord, ExperimentRecord, SessionRecord
from .recovery import recover
from .state import SessionLock, SessionPaths, write_json_atomic
from .workspace import Workspace, open_workspace

__all__ = ["RunOptions", "SessionOutcome", "run_session", "session_paths"]


@dataclass(frozen=True)
class RunOptions:
    """Overrides from the command line; None keeps the config's value."""

    max_experiments: int | None = None
    max_hours: float | None = None
    stop_after_no_keep: int | None = None
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SessionOutcome:
    session: str
    stop_reason: str
    ran: int
    kept: int
    baseline: float | None
    best: float | None
    interrupted: bool = False


@dataclass
class _Run:
    """What one `run` invocation carries from experiment to experiment."""

    config: Config
    options: RunOptions
    progress: Progress
    paths: SessionPaths
    ws: Workspace
    journal: Journal
    proposer: Proposer
    stop: threading.Event
    best: dict[str, list[float]]
    threshold: float
    baseline: float | None
    tried: set[str]
    base_commit: str
    done: int  # experiments in the session, including earlier runs
    no_keep_streak: int
    started: float = field(default_factory=time.monotonic)
    ran: int = 0
    kept: int = 0

    @property
    def best_median(self) -> float | None:
        samples = self.best.get(self.config.metric.name)
        return statistics.median(samples) if samples else None


def session_paths(config: Config) -> SessionPaths:
    """The session's state directory: configured, or under the target's git directory."""
    root = config.state_path or open_repo(config.repo_path).common_dir / "autoresearch"
    return SessionPaths(root / config.session.name)


def run_session(
    config: Config, options: RunOptions | None = None, progress: Progress | None = None
) -> SessionOutcome:
    """Run the session's loop until a stop condition; resumes where a previous run ended."""
    options = options or RunOptions()
    progress = progress or Progress()
    paths = session_paths(config)
    with SessionLock(paths.lock), _stop_on_signals() as stop:
        ws = open_workspace(config.repo_path, config.branch, paths.worktree, config.target.base)
        journal = Journal(config.journal_path, config.session.name)
        _require_scripts(config, ws)
        recover(ws, journal, paths, progress)
        history = journal.read()
        for warning in history.warnings:
            progress.warn(warning)
        base_commit = _start_session(config, ws, journal, history, progress)
        run = _Run(
            config=config,
            options=options,
            progress=progress,
            paths=paths,
            ws=ws,
            journal=journal,
            proposer=make_proposer(config),
            stop=stop,
            best={},
            threshold=config.decision.min_effect_pct,
            baseline=_first_baseline(history, config),
            tried={r.patch_sha256 for r in history.experiments},
            base_commit=base_commit,
            done=len(history.experiments),
            no_keep_streak=_no_keep_streak(history.experiments),
        )
        if not calibrate(run):
            return _outcome(run, "interrupted by a signal during calibration", interrupted=True)
        while (reason := _stop_reason(run)) is None:
            hypothesis = run.proposer.next(run.tried)
            if hypothesis is None:
                reason = "no hypotheses left in the queue"
                break
            record = run_experiment(run, hypothesis)
            _account(run, record)
            # The kept commit is the new best: measure it afresh rather than trust the
            # candidate's few (possibly lucky) samples.
            if record.status == "keep" and not run.stop.is_set() and not calibrate(run):
                reason = "interrupted by a signal during calibration"
                break
        progress.info(f"stopped: {reason}")
        return _outcome(run, reason, interrupted=stop.is_set())


def calibrate(run: _Run) -> bool:
    """Measure the current best repeatedly: its samples and noise set the threshold."""
    config, ws = run.config, run.ws
    tip = ws.tip()
    label = f"calibration-{time.strftime('%Y%m%dT%H%M%S')}"
    run.progress.info(f"calibrating on {tip[:10]}: {config.bench.calibration_runs} bench runs")
    m = measure(
        config,
        cwd=ws.path,
        log_for=lambda i: run.paths.log(label, f"bench-{i}"),
        count=config.bench.calibration_runs,
        stop=run.stop,
        env=harness_env(run, "calibration"),
        on_run=lambda i, n: run.progress.info(f"calibration run {i}/{n}"),
        on_start=lambda pgid: write_json_atomic(
            run.paths.inflight, {"phase": "calibration", "pgid": pgid}
        ),
    )
    run.paths.inflight.unlink(missing_ok=True)
    ws.revert()
    if m.failure == "interrupted":
        return False
    if m.failure:
        raise UserError(f"the baseline bench on {tip[:10]} failed: {m.detail}")
    primary = config.metric.name
    run.best = m.samples
    run.threshold = threshold_pct(config, m.samples[primary])
    noise = {name: noise_pct(values) for name, values in m.samples.items()}
    medians = {name: statistics.median(v) for name, v in m.samples.items()}
    first = run.baseline is None
    if first:
        run.baseline = run.best_median
    run.journal.append(
        CalibrationRecord(
            session=config.session.name,
            at=now_iso(),
            commit=tip,
            samples=m.samples,
            medians=medians,
            noise_pct=noise,
            threshold_pct=run.threshold,
            bench_logs=m.logs,
            duration_s=round(m.duration_s, 3),
        )
    )
    run.progress.info(
        f"{'baseline' if first else 'new best'} {primary} = "
        f"{format_value(run.best_median, config.metric.unit)}, "
        f"noise {noise[primary] or 0:.2f}%, threshold {run.threshold:.2f}%"
    )
    return True


def run_experiment(run: _Run, hypothesis: Hypothesis) -> ExperimentRecord:
    """One hypothesis, start to end; every way it can end is a status in the record."""
    config, ws = run.config, run.ws
    n = run.done + 1
    exp_id = f"{config.session.name}-{n:04d}"
    total = run.done + run.proposer.pending(run.tried)
    cap = run.options.max_experiments or config.budget.max_experiments
    run.progress.experiment(n, min(total, cap), hypothesis.title)
    draft = Draft(
        marker=run.paths.inflight,
        fields={
            "session": config.session.name,
            "id": exp_id,
            "n": n,
            "title": hypothesis.title,
            "proposer": run.proposer.name,
            "source": hypothesis.source,
            "patch_sha256": hypothesis.sha256,
            "touched_files": [],
            "parent_commit": ws.tip(),
            "kept_commit": None,
            "started_at": now_iso(),
            "asi": {
                "hypothesis": hypothesis.hypothesis,
                "mechanism": hypothesis.mechanism,
                "expected_effect": hypothesis.expected_effect,
            },
        },
    )
    draft.phase("apply")
    patch_file = _save_patch(run, n, hypothesis)
    paths, problem = check_patch(run, hypothesis, patch_file)
    draft.note(touched_files=paths)
    if problem:
        return draft.finish(problem.kind, problem.message, error=problem.message)
    applied = ws.apply(patch_file)
    if not applied.ok:
        return draft.finish("apply_failed", applied.message, error=applied.message)

    draft.phase("bench")
    m = measure_candidate(run, exp_id, draft)
    if m.failure:
        ws.revert()
        return draft.finish(
            m.failure,
            m.detail,
            error=m.detail,
            bench_logs=m.logs,
            bench_durations_s=m.durations,
            bench_tail=m.tail,
        )
    decision = decide(config, run.best, m.samples, run.threshold)
    measured = {
        "decision": decision.to_dict(),
        "sentinels": decision.sentinels,
        "bench_logs": m.logs,
        "bench_durations_s": m.durations,
        "bench_tail": m.tail,
    }
    draft.note(asi={"result": decision.reason})

    checks = None
    if _wants_checks(config, decision):
        draft.phase("checks")
        checks = run_checks(run, exp_id, draft)
        measured["checks"] = checks.to_dict()
        if not checks.ok:
            ws.revert()
            status = "interrupted" if checks.interrupted else "checks_failed"
            why = f"checks {checks.describe()}; log: {checks.log_path}"
            return draft.finish(status, why, **measured)

    if decision.status != "keep":
        ws.revert()
        return draft.finish(decision.status, decision.reason, **measured)
    draft.phase("commit")
    return keep(run, draft, hypothesis, decision, paths, measured, m)


def check_patch(
    run: _Run, hypothesis: Hypothesis, patch_file: Path
) -> tuple[list[str], PatchProblem | None]:
    """The paths the patch touches, and the first reason it may not be applied."""
    config = run.config
    named = patch_paths(hypothesis.patch)
    touched = run.ws.touched_paths(patch_file)
    paths = list(dict.fromkeys([*named, *(touched or [])]))
    problem = check_paths(
        hypothesis.patch,
        paths,
        worktree=run.ws.path,
        include=config.scope.include,
        protect=config.protected_globs(),
        allow_binary=config.scope.allow_binary,
    )
    if problem is None and touched is None:
        problem = PatchProblem("apply_failed", "git cannot read the patch (not a unified diff?)")
    return paths, problem


def measure_candidate(run: _Run, exp_id: str, draft: Draft) -> Measurement:
    return measure(
        run.config,
        cwd=run.ws.path,
        log_for=lambda i: run.paths.log(exp_id, f"bench-{i}"),
        count=run.config.bench.runs,
        stop=run.stop,
        env=harness_env(run, exp_id),
        on_run=lambda i, n: run.progress.phase(f"bench run {i}/{n}"),
        on_start=draft.running,
    )


def run_checks(run: _Run, exp_id: str, draft: Draft) -> RunResult:
    run.progress.phase("checks")
    config = run.config
    return run_command(
        config.checks.command,
        cwd=run.ws.path,
        log_path=run.paths.log(exp_id, "checks"),
        timeout_s=config.checks.timeout_s,
        env={**config.checks.env, **harness_env(run, exp_id)},
        stop=run.stop,
        on_start=draft.running,
    )


def keep(
    run: _Run,
    draft: Draft,
    hypothesis: Hypothesis,
    decision: Decision,
    paths: list[str],
    measured: dict,
    m: Measurement,
) -> ExperimentRecord:
    """Commit the patch on the session branch; the pending record survives a crash mid-commit."""
    primary = decision.metrics[run.config.metric.name]
    summary = {
        "status": "keep",
        "metric": run.config.metric.name,
        "baseline": primary["baseline_median"],
        "candidate": primary["candidate_median"],
        "change_pct": primary["change_pct"],
        "threshold_pct": run.threshold,
    }
    record = draft.finish("keep", None, **measured)
    draft.save(pending=record.to_dict())
    message = _commit_message(hypothesis, decision, record.id, summary, run.config)
    sha = run.ws.keep(paths, message)
    run.best = m.samples
    return ExperimentRecord.from_dict({**record.to_dict(), "kept_commit": sha})


def _commit_message(hypothesis, decision: Decision, exp_id: str, summary, config) -> str:
    unit = config.metric.unit
    change = summary["change_pct"]
    lines = [
        hypothesis.title,
        "",
        f"Primary: {config.metric.name} {format_value(summary['baseline'], unit)} -> "
        f"{format_value(summary['candidate'], unit)} ({change:+.2f}%)",
    ]
    if hypothesis.mechanism:
        lines.append(f"Mechanism: {hypothesis.mechanism}")
    if hypothesis.hypothesis:
        lines.append(f"Hypothesis: {hypothesis.hypothesis}")
    lines.append(f"Decision: {decision.reason}")
    lines += ["", f"Experiment-Id: {exp_id}", f"Result: {result_trailer(summary)}"]
    return "\n".join(lines) + "\n"


def harness_env(run: _Run, experiment: str) -> dict[str, str]:
    """What the bench and checks are told: the session, its base commit, the experiment."""
    return {
        "AUTORESEARCH_SESSION": run.config.session.name,
        "AUTORESEARCH_BASE_COMMIT": run.base_commit,
        "AUTORESEARCH_EXPERIMENT": experiment,
        **run.options.env,
    }


def _account(run: _Run, record: ExperimentRecord) -> None:
    """Write the record, then forget the in-flight marker: in that order, so nothing is lost."""
    run.journal.append(record)
    run.paths.inflight.unlink(missing_ok=True)
    run.tried.add(record.patch_sha256)
    run.done += 1
    run.ran += 1
    if record.status == "keep":
        run.kept += 1
        run.no_keep_streak = 0
    else:
        run.no_keep_streak += 1
    reason = (
        (record.asi.result or record.error or "")
        if record.status != "keep"
        else (record.decision or {}).get("reason", "")
    )
    run.progress.outcome(record.status, reason, _best_text(run))


def _best_text(run: _Run) -> str:
    unit = run.config.metric.unit
    best, base = run.best_median, run.baseline
    if best is None or not base:
        return format_value(best, unit)
    return f"{format_value(best, unit)} ({100 * (best - base) / base:+.2f}% vs baseline)"


def _stop_reason(run: _Run) -> str | None:
    config, options = run.config, run.options
    max_experiments = options.max_experiments or config.budget.max_experiments
    max_hours = options.max_hours or config.budget.max_hours
    patience = (
        options.stop_after_no_keep
        if options.stop_after_no_keep is not None
        else config.budget.stop_after_no_keep
    )
    if run.stop.is_set():
        return "interrupted by a signal"
    if run.done >= max_experiments:
        return f"budget reached: {run.done} experiments (max_experiments = {max_experiments})"
    hours = (time.monotonic() - run.started) / 3600
    if hours >= max_hours:
        return f"budget reached: {hours:.2f} h (max_hours = {max_hours})"
    if patience and run.no_keep_streak >= patience:
        return f"{run.no_keep_streak} consecutive experiments without a keep"
    return None


def _wants_checks(config: Config, decision: Decision) -> bool:
    when = config.checks.when
    return when == "always" or (when == "keep" and decision.status == "keep")


def _save_patch(run: _Run, n: int, hypothesis: Hypothesis) -> Path:
    path = run.paths.patches / f"{n:04d}-{hypothesis.sha256[:12]}.patch"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(hypothesis.patch, encoding="utf-8")
    return path


def _require_scripts(config: Config, ws: Workspace) -> None:
    """The bench and checks must be committed: the loop runs them from the session worktree."""
    needed = [("bench.command", config.bench.command)]
    if config.checks.when != "never":
        needed.append(("checks.command", config.checks.command))
    for key, command in needed:
        script = script_path(command)
        if script and not (ws.path / script).exists():
            raise UserError(
                f"{config.path}: {key} runs '{script}', which is not committed in "
                f"{ws.source.path} at the session tip; commit it (the loop runs the committed copy)"
            )


def _start_session(config, ws: Workspace, journal: Journal, history, progress) -> str:
    """Write the session line; returns the session's base commit."""
    event = "resume" if history.sessions else "start"
    base = history.sessions[0].base_commit if history.sessions else ws.tip()
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


def _first_baseline(history, config: Config) -> float | None:
    if not history.calibrations:
        return None
    return history.calibrations[0].medians.get(config.metric.name)


def _no_keep_streak(experiments: list[ExperimentRecord]) -> int:
    streak = 0
    for record in reversed(experiments):
        if record.status == "keep":
            break
        streak += 1
    return streak


def _outcome(run: _Run, reason: str, interrupted: bool = False) -> SessionOutcome:
    return SessionOutcome(
        session=run.config.session.name,
        stop_reason=reason,
        ran=run.ran,
        kept=run.kept,
        baseline=run.baseline,
        best=run.best_median,
        interrupted=interrupted,
    )


@contextlib.contextmanager
def _stop_on_signals():
    """SIGINT/SIGTERM ask for a clean stop; a second SIGINT stops at once."""
    stop = threading.Event()

    def handler(signum, frame):
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()

    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
