"""The driver. One experiment at a time, resumable, until a budget, a stop rule or a signal.

lock the session -> open the worktrees -> recover a crashed experiment -> calibrate the best
repeat: next hypothesis -> check patch -> apply -> build -> bench against the best, alternating,
        until the rule decides -> checks -> keep | revert -> append the record
        -> after a keep, calibrate the new best
at the end: confirm the session's baseline against its final tip
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ..bench.measure import BASELINE, PairMeasurement
from ..bench.proc import RunResult
from ..bench.proc import run as run_command
from ..config import Config
from ..decide.rule import Decision, Judge
from ..decide.stats import change_pct
from ..errors import PreflightError, WorkspaceError
from ..journal.draft import Draft, now_iso, result_trailer
from ..journal.records import CalibrationRecord, ExperimentRecord
from ..progress import Progress, format_value
from ..proposers import Hypothesis, ProposalContext
from ..repo.guard import TreeGuard
from ..repo.patchcheck import PatchProblem, check_paths, patch_paths
from .calibration import calibrate, run_seconds
from .confirm import confirm_session
from .preflight import run_preflight
from .retention import prune_session_logs
from .second_look import forget_request, second_look, second_look_count
from .session import (
    RunOptions,
    Session,
    StopRequested,
    build_known_good,
    harness_env,
    log_label,
    marker,
    may_run_again,
    open_session,
    prepare_baseline,
)
from .session_dir import require_space

__all__ = [
    "SessionOutcome",
    "account",
    "adopt_calibration",
    "calibrate_best",
    "check_patch",
    "confirm_wanted",
    "keep",
    "new_draft",
    "proposal_context",
    "run_checks",
    "run_experiment",
    "run_session",
    "save_patch",
    "second_look_hypothesis",
    "session_outcome",
    "stop_reason",
    "wants_checks",
]

MAX_BASELINE_FAILURES = 3  # in a row: no candidate can be judged against a best that fails


@dataclass(frozen=True)
class SessionOutcome:
    session: str
    stop_reason: str
    ran: int
    kept: int
    baseline: float | None
    best: float | None
    interrupted: bool = False
    confirmed_change_pct: float | None = None


def run_session(
    config: Config, options: RunOptions | None = None, progress: Progress | None = None
) -> SessionOutcome:
    """Run the session's loop until a stop condition; resumes where a previous run ended."""
    with open_session(config, options, progress) as run:
        try:
            reason = _loop(run)
        except StopRequested as exc:
            reason = f"interrupted by a signal: {exc}"
            run.ws.revert()
            run.paths.inflight.unlink(missing_ok=True)
        finally:
            run.proposer.close()
        run.progress.info(f"stopped: {reason}")
        return session_outcome(run, reason, _confirm_at_end(run))


def session_outcome(run: Session, reason: str, confirmed: float | None) -> SessionOutcome:
    """The end of a run: its logs pruned, what it did and why it stopped."""
    prune_session_logs(run)
    return SessionOutcome(
        session=run.config.session.name,
        stop_reason=reason,
        ran=run.ran,
        kept=run.kept,
        baseline=run.baseline,
        best=run.best_median,
        interrupted=run.stop.is_set() or run.stop_error is not None,
        confirmed_change_pct=confirmed,
    )


def _loop(run: Session) -> str:
    """Experiments until a stop condition; returns why it stopped."""
    if run.baseline is None and run.config.session.preflight and not preflight_base(run):
        return "interrupted by a signal during the pre-flight"
    reason = None if calibrate_best(run) else "interrupted by a signal during calibration"
    if reason is None and not run.options.accept_noise:
        _refuse_noise(run)
    while reason is None and (reason := stop_reason(run)) is None:
        context = proposal_context(run)
        hypothesis = run.proposer.next(context) or second_look_hypothesis(run)
        for note in context.notes:
            run.progress.warn(note)
        if hypothesis is None:
            reason = (
                "no hypotheses left: the proposers have none, and none undecided to look at again"
            )
            break
        record = run_experiment(run, hypothesis)
        account(run, record)
        # The kept commit is the new best: measure it afresh for the noise and threshold.
        if record.status == "keep" and not run.stop.is_set() and not calibrate_best(run):
            reason = "interrupted by a signal during calibration"
    return reason


def preflight_base(run: Session) -> bool:
    """Build, bench once and run the checks on the base: refuse a night they say is wasted."""
    tip = run.ws.tip()
    run.progress.info(f"pre-flight on {tip[:10]}: build, one bench run, the checks")
    log_dir = run.paths.log(log_label(run, "preflight"), "x").parent
    harness = run.harness("preflight", marker(run, "preflight"))
    try:
        result = run_preflight(run.config, run.ws.path, tip, log_dir, harness)
    finally:
        run.ws.revert()
        run.paths.inflight.unlink(missing_ok=True)
    if result.interrupted:
        return False
    for line in result.lines(run.config):
        run.progress.info(line)
    if not result.ok:
        raise PreflightError("pre-flight: " + "; ".join(result.problems))
    return True


def _refuse_noise(run: Session) -> None:
    """Stop before the night when the calibration says the effect asked for cannot be seen."""
    detectable = run.detectable_pct
    target = run.config.decision.target_effect_pct
    if detectable is not None and detectable > target:
        raise PreflightError(
            f"the bench is too noisy for the effect asked for: it detects {detectable:.1f}%, "
            f"decision.target_effect_pct is {target:g}% (see the warning above); quiet the "
            "machine or raise decision.max_runs, or run with --accept-noise to spend the night "
            "anyway"
        )


def calibrate_best(run: Session) -> bool:
    """Measure the current best repeatedly: its samples and noise set the threshold."""
    tip = run.ws.tip()
    label = log_label(run, "calibration")
    pairs = run.config.bench.calibration_runs // 2
    run.progress.info(f"calibrating on {tip[:10]}: {pairs} runs in each arm, alternating")
    prepare_baseline(run, tip, label)
    # The worktree is clean at the tip here: recovery and keep both end with a revert.
    build_known_good(run, run.ws.path, tip, run.paths.log(label, "build-candidate"))
    result = calibrate(
        run.config,
        run.harness("calibration", marker(run, "calibration")),
        arms=(run.baseline_tree.path, run.ws.path),
        commit=tip,
        log_for=lambda arm, i: run.paths.log(label, f"{arm}-{i}"),
        on_run=lambda arm, i: (
            run.progress.info(f"calibration pair {i}/{pairs}") if arm == BASELINE else None
        ),
    )
    run.ws.revert()
    run.paths.inflight.unlink(missing_ok=True)
    if result is None:
        return False
    run.journal.append(result.record)
    first = run.baseline is None
    moved = run.last_calibrated not in (None, tip)
    adopt_calibration(run, result.record)
    if first or tip == run.base_commit:  # the base measured again: the night goes on from this
        run.baseline = run.best_median
    primary = run.config.metric
    run.progress.info(
        f"{'baseline' if first else 'new best' if moved else 'best (unchanged)'} {primary.name} = "
        f"{format_value(run.best_median, primary.unit)}, noise {run.noise_pct or 0.0:.2f}%, "
        f"threshold {run.threshold:.2f}%"
    )
    for warning in result.record.warnings:
        run.progress.warn(warning)
    aa = result.record.aa or {}
    if first and aa and not aa.get("can_fail", True):
        run.progress.info(
            f"the A/A check cannot fail with {aa['n_per_arm']} runs per arm (the smallest p "
            f"it can reach is {aa['smallest_p']:.2g}); bench.calibration_runs = 10 or more "
            "lets it catch a harness that favours an arm"
        )
    return True


def restore_calibration(run: Session) -> bool:
    """The best's last calibration, when it measured the current tip: a `try` in a new process
    need not measure the same commit again (the experiment still runs both arms side by side)."""
    tip = run.ws.tip()
    calibrations = run.journal.read().calibrations
    last = calibrations[-1] if calibrations else None
    primary = run.config.metric.name
    if last is None or last.commit != tip or not last.samples.get(primary):
        return False
    adopt_calibration(run, last)
    return True


def adopt_calibration(run: Session, record: CalibrationRecord) -> None:
    """A calibration of the current best stands for it: its samples, threshold, noise and run
    times (one just measured; a journaled one for a `try` in a new process; on a cluster, a
    host's)."""
    run.best = {k: [v for v in vs if v is not None] for k, vs in record.samples.items()}
    run.threshold = record.threshold_pct or 0.0
    run.detectable_pct = record.detectable_effect_pct
    run.noise_pct = record.noise_pct.get(run.config.metric.name)
    run.run_s, run.sentinel_run_s = run_seconds(record), record.sentinel_run_s
    run.last_calibrated = record.commit


def run_experiment(run: Session, hypothesis: Hypothesis) -> ExperimentRecord:
    """One hypothesis, start to end; every way it can end is a status in the record."""
    config, ws = run.config, run.ws
    n = run.next_n
    exp_id = experiment_id(run, n)
    earlier = run.attempts.get(hypothesis.sha256)
    cap = run.options.max_experiments or config.budget.max_experiments
    # This one, what the proposers still have, and what the second look would take up.
    ahead = run.proposer.pending(proposal_context(run)) + second_look_count(
        run.paths, run.attempts, run.config.budget.retries
    )
    remaining = max(1, min(ahead, cap - run.done))
    run.progress.experiment(n, n - 1 + remaining, hypothesis.title)
    draft = new_draft(run, hypothesis, n, run.paths.inflight)
    draft.phase("apply")
    if hypothesis.problem is not None:
        status = hypothesis.problem_status
        return draft.finish(status, hypothesis.problem, error=hypothesis.problem)
    patch_file = save_patch(run, n, hypothesis)
    paths, problem = check_patch(run, hypothesis, patch_file)
    draft.note(touched_files=paths)
    if problem:
        return draft.finish(problem.kind, problem.message, error=problem.message)
    applied = ws.apply(patch_file)
    if not applied.ok:
        why = applied.message
        if earlier:
            why = f"no longer applies to the current best {ws.tip()[:10]}: {why}"
        return draft.finish("apply_failed", why, error=why)

    draft.phase("bench")
    try:
        prepare_baseline(run, ws.tip(), exp_id)
    except StopRequested as exc:
        ws.revert()
        return draft.finish("interrupted", str(exc), error=str(exc))
    guard = TreeGuard(
        candidate=ws.tree,
        branch=ws.branch,
        baseline=run.baseline_tree.path,
        checkout=ws.source,
        patch_paths=paths,
        hooks=config.target.git_hooks,
    )
    pair = measure_candidate(run, exp_id, draft, guard)
    measured = {
        "bench_logs": pair.baseline.logs + pair.candidate.logs,
        "bench_durations_s": pair.baseline.durations + pair.candidate.durations,
        "bench_tail": pair.candidate.tail,
    }
    if pair.failure == "tampered":
        return _tampered(run, guard, draft, pair.detail, measured)
    if pair.failure:
        ws.revert()
        # The best failing is no verdict on the candidate: undecided, and tried again.
        status = "baseline_failed" if pair.failed_arm == BASELINE else pair.failure
        if pair.failure == "interrupted":
            status = "interrupted"
        return draft.finish(status, pair.detail, error=pair.detail, **measured)
    decision = pair.decision
    assert decision is not None  # the judge always decides at the last look
    measured |= {"decision": decision.to_dict(), "sentinels": decision.sentinels}
    draft.note(asi={"result": decision.reason})

    if wants_checks(config, decision):
        draft.phase("checks")
        checks = run_checks(run, exp_id, draft)
        measured["checks"] = checks.to_dict()
        tampered = guard.violation()
        if tampered is not None:
            return _tampered(run, guard, draft, f"checks: {tampered}", measured)
        if not checks.ok:
            require_space(Path(checks.log_path), "the checks' output")
            ws.revert()
            status = "interrupted" if checks.interrupted else "checks_failed"
            why = f"checks {checks.describe()}; log: {checks.log_path}"
            return draft.finish(status, why, **measured)

    if decision.status != "keep":
        ws.revert()
        return draft.finish(decision.status, decision.reason, **measured)
    draft.phase("commit")
    return keep(run, draft, hypothesis, decision, paths, measured)


def new_draft(run: Session, hypothesis: Hypothesis, n: int, marker_path: Path) -> Draft:
    """The record of experiment `n` as it starts, mirrored to `marker_path`."""
    earlier = run.attempts.get(hypothesis.sha256)
    return Draft(
        marker=marker_path,
        fields={
            "session": run.config.session.name,
            "id": experiment_id(run, n),
            "n": n,
            "title": hypothesis.title,
            "proposer": hypothesis.proposer or "queue",
            "proposal": hypothesis.proposal,
            "family": hypothesis.family,
            "agent": hypothesis.agent,
            "source": hypothesis.source,
            "patch_sha256": hypothesis.sha256,
            "touched_files": [],
            "parent_commit": run.ws.tip(),
            "kept_commit": None,
            "started_at": now_iso(),
            "retry_of": earlier[-1].id if earlier else None,
            "asi": {
                "hypothesis": hypothesis.hypothesis,
                "mechanism": hypothesis.mechanism,
                "expected_effect": hypothesis.expected_effect,
            },
        },
    )


def experiment_id(run: Session, n: int) -> str:
    return f"{run.config.session.name}-{n:04d}"


def check_patch(
    run: Session, hypothesis: Hypothesis, patch_file: Path
) -> tuple[list[str], PatchProblem | None]:
    """The paths the patch touches, and the first reason it may not be applied."""
    config = run.config
    named = patch_paths(hypothesis.text)
    touched = run.ws.touched_paths(patch_file)
    paths = list(dict.fromkeys([*named, *(touched or [])]))
    problem = check_paths(
        hypothesis.text,
        paths,
        worktree=run.ws.path,
        include=config.scope.include,
        protect=config.protected_globs(),
        allow_binary=config.scope.allow_binary,
    )
    if problem is None and touched is None:
        problem = PatchProblem("apply_failed", "git cannot read the patch (not a unified diff?)")
    return paths, problem


def measure_candidate(run: Session, exp_id: str, draft: Draft, guard: TreeGuard) -> PairMeasurement:
    """Build the candidate, then run it against the best, alternating, until the rule decides."""
    harness = run.harness(exp_id, draft.running)
    harness.verify = guard.violation
    built = harness.build(run.ws.path, run.paths.log(exp_id, "build"))
    tampered = guard.violation() if built is not None else None
    if tampered is not None:
        return PairMeasurement(builds=[built], failure="tampered", detail=f"build: {tampered}")
    if built is not None and not built.ok:
        pair = PairMeasurement(builds=[built])
        pair.failure = "interrupted" if built.interrupted else "crash"
        if built.timed_out:
            pair.failure = "timeout"
        pair.detail = f"build {built.describe()}; log: {built.log_path}"
        return pair
    judge = Judge(run.config, run.threshold, run.noise_pct, run.run_s, run.sentinel_run_s)

    def progress(arm: str, i: int) -> None:
        if arm == BASELINE:
            run.progress.phase(f"bench pair {i} (decides by {judge.cap})")

    return harness.interleave(
        baseline_dir=run.baseline_tree.path,
        candidate_dir=run.ws.path,
        log_for=lambda arm, i: run.paths.log(exp_id, f"{arm}-{i}"),
        max_pairs=judge.limit,
        judge=judge.look,
        looks=judge.looks,
        on_run=progress,
        awaiting_sentinels=lambda: judge.awaiting_sentinels,
    )


def run_checks(run: Session, exp_id: str, draft: Draft) -> RunResult:
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
        token=run.token,
    )


def keep(
    run: Session,
    draft: Draft,
    hypothesis: Hypothesis,
    decision: Decision,
    paths: list[str],
    measured: dict,
) -> ExperimentRecord:
    """Commit the patch on the session branch; the pending record survives a crash mid-commit."""
    primary = decision.metrics[run.config.metric.name]
    summary = {
        "status": "keep",
        "metric": run.config.metric.name,
        "baseline": primary["baseline_median"],
        "candidate": primary["candidate_median"],
        "change_pct": primary["change_pct"],
        "ci_pct": [primary["ci_low_pct"], primary["ci_high_pct"]],
        "p_value": primary["p_better"],
        "threshold_pct": run.threshold,
        "patch_sha256": hypothesis.sha256,
    }
    record = draft.finish("keep", None, **measured)
    draft.save(pending=record.to_dict())
    message = _commit_message(hypothesis, decision, record.id, summary, run.config)
    try:
        sha = run.ws.keep(paths, message)
    except WorkspaceError as exc:
        # A full disk, a broken repository: the win is not lost (it runs again once on the
        # next run), the tree is clean, and the night stops with the reason.
        run.ws.revert()
        run.stop_error = f"the keep commit of {record.id} failed: {exc}"
        why = f"{run.stop_error}; it runs again on the next run"
        return draft.finish("interrupted", why, error=why, **measured)
    # Until the recalibration measures it, the kept candidate's own runs stand for the best.
    run.best = {name: ev["candidate_samples"] for name, ev in decision.metrics.items()}
    return ExperimentRecord.from_dict({**record.to_dict(), "kept_commit": sha})


def _commit_message(hypothesis, decision: Decision, exp_id: str, summary, config) -> str:
    unit = config.metric.unit
    low, high = summary["ci_pct"]
    lines = [
        hypothesis.title,
        "",
        f"Primary: {config.metric.name} {format_value(summary['baseline'], unit)} -> "
        f"{format_value(summary['candidate'], unit)} ({summary['change_pct']:+.2f}%, "
        f"95% CI [{low:+.2f}%, {high:+.2f}%])",
    ]
    if hypothesis.mechanism:
        lines.append(f"Mechanism: {hypothesis.mechanism}")
    if hypothesis.hypothesis:
        lines.append(f"Hypothesis: {hypothesis.hypothesis}")
    lines.append(f"Decision: {decision.reason}")
    lines += ["", f"Experiment-Id: {exp_id}", f"Result: {result_trailer(summary)}"]
    return "\n".join(lines) + "\n"


def account(run: Session, record: ExperimentRecord) -> None:
    """Write the record, then forget the in-flight marker: in that order, so nothing is lost."""
    run.journal.append(record)
    run.paths.inflight.unlink(missing_ok=True)
    attempts = run.attempts.setdefault(record.patch_sha256, [])
    attempts.append(record)
    if not may_run_again(attempts, run.config.budget.retries):
        run.tried.add(record.patch_sha256)
    if record.retry_of:
        forget_request(run.paths, record.retry_of)
    run.done += 1
    run.next_n = max(run.next_n, record.n + 1)
    run.ran += 1
    run.baseline_failures = run.baseline_failures + 1 if record.status == "baseline_failed" else 0
    if record.status == "keep":
        run.kept += 1
        run.no_keep_streak = 0
    else:
        run.no_keep_streak += 1
    # What ended it: the checks' failure rather than the bench verdict that came before it.
    reason = record.asi.rollback_reason or (record.decision or {}).get("reason") or ""
    run.progress.outcome(record.status, reason, _best_text(run))


def _best_text(run: Session) -> str:
    unit = run.config.metric.unit
    best, base = run.best_median, run.baseline
    if best is None or not base:
        return format_value(best, unit)
    return f"{format_value(best, unit)} ({change_pct(base, best):+.2f}% vs baseline)"


def proposal_context(run: Session) -> ProposalContext:
    """What the proposers see: the session so far and the current best, checked out."""
    context = ProposalContext(
        tried=run.tried,
        records=[r for records in run.attempts.values() for r in records],
        tip=run.ws.tip(),
        worktree=run.ws.path,
        metric=run.config.metric.name,
        direction=run.config.metric.direction,
        base=run.base_commit,
        baseline=run.baseline,
        best=run.best_median,
        noise_pct=run.noise_pct,
        threshold_pct=run.threshold,
        state_dir=run.paths.root,
        branch=run.ws.branch,
        stop=run.stop,
        token=run.token,
        say=run.progress.info,
    )
    context.records.sort(key=lambda r: r.n)
    return context


def second_look_hypothesis(run: Session) -> Hypothesis | None:
    """With the proposers done: an undecided hypothesis (or one `retry` asked for), again."""
    found = second_look(run.paths, run.attempts, run.config.budget.retries)
    if found is None:
        return None
    hypothesis, earlier = found
    run.progress.info(
        f"second look at {earlier.id} {earlier.title!r} (was {earlier.status}): "
        "measuring it again against the current best"
    )
    return hypothesis


def _confirm_at_end(run: Session) -> float | None:
    """The honest headline: the session's baseline against its tip, when anything was kept."""
    if not confirm_wanted(run):
        return None
    record = confirm_session(run)
    return None if record is None else record.change_pct


def confirm_wanted(run: Session) -> bool:
    """A confirmation at the end: asked for, not stopped by a signal, and something kept."""
    wanted = run.options.confirm if run.options.confirm is not None else run.config.decision.confirm
    return bool(wanted) and not run.stop.is_set() and run.ws.tip() != run.base_commit


def stop_reason(run: Session) -> str | None:
    config, options = run.config, run.options
    max_experiments = options.max_experiments or config.budget.max_experiments
    max_hours = options.max_hours or config.budget.max_hours
    patience = (
        options.stop_after_no_keep
        if options.stop_after_no_keep is not None
        else config.budget.stop_after_no_keep
    )
    if run.stop_error:
        return run.stop_error
    if run.stop.is_set():
        return "interrupted by a signal"
    if run.done >= max_experiments:
        return f"budget reached: {run.done} experiments (max_experiments = {max_experiments})"
    hours = (time.monotonic() - run.started) / 3600
    if hours >= max_hours:
        return f"budget reached: {hours:.2f} h (max_hours = {max_hours})"
    if patience and run.no_keep_streak >= patience:
        return f"{run.no_keep_streak} consecutive experiments without a keep"
    if run.baseline_failures >= MAX_BASELINE_FAILURES:
        return (
            f"the baseline (the current best, unmodified) failed in {run.baseline_failures} "
            "experiments in a row: the bench or the machine is broken; see the last records' "
            "logs, fix it, and run again to resume"
        )
    return None


def _tampered(
    run: Session, guard: TreeGuard, draft: Draft, why: str, measured: dict
) -> ExperimentRecord:
    """Never a keep: undo what the candidate did to the branch and both trees, and say what."""
    if run.ws.tree.resolve(f"refs/heads/{run.ws.branch}") != guard.expected.branch_tip:
        guard.restore_branch()
    run.ws.revert()
    run.baseline_built_at = None  # its files were touched: check it out and build it afresh
    run.progress.warn(f"tampering detected: {why}")
    return draft.finish("tampered", why, error=why, **measured)


def wants_checks(config: Config, decision: Decision) -> bool:
    when = config.checks.when
    return when == "always" or (when == "keep" and decision.status == "keep")


def save_patch(run: Session, n: int, hypothesis: Hypothesis) -> Path:
    path = run.paths.patches / f"{n:04d}-{hypothesis.sha256[:12]}.patch"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(hypothesis.patch)
    return path
