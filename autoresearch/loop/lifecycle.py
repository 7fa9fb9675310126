"""One experiment's lifecycle, written once for every executor (dispatch.py drives it):

begin     the record's draft; the patch saved and checked against the scope
measure   the candidate built and run against the best, alternating, under the tree guard
          (measure_guarded: in the driver's worktrees, local.py, or on a bench host with a
          guard of its own)
conclude  the checks under the same guard and seal; keep (a commit) or revert
account   the record journaled (stages.py; landing.py lands every executor's results)

Every way it can end is a status in its record, never an exception that stops the night.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..atomic import require_space
from ..bench.jobs import JobResult
from ..bench.measure import Harness, PairMeasurement, measure_pair
from ..bench.proc import RunResult
from ..bench.sandbox import keeps_out
from ..bench.testcount import count_problem
from ..config import Config
from ..errors import StateError, WorkspaceError
from ..inert import commit_line
from ..journal.decision import Decision
from ..journal.draft import Draft, now_iso, result_trailer
from ..journal.records import ExperimentRecord
from ..progress import format_value
from ..proposers import Hypothesis
from ..repo.guard import TreeGuard
from ..repo.patchcheck import PatchProblem, check_paths, patch_paths
from ..repo.seal import RepoSeal
from ..repo.workspace import BaselineTree, UncommittableError
from ..statuses import ChecksWhen, Status
from .session import Session
from .testref import best_tests, remember_tests

__all__ = [
    "Candidate",
    "Measured",
    "begin",
    "conclude",
    "experiment_id",
    "measure_guarded",
    "new_draft",
    "put_back",
    "session_guard",
    "tampered",
]


@dataclass
class Candidate:
    """An experiment past its patch checks: what measuring and judging it need."""

    hypothesis: Hypothesis
    draft: Draft
    patch_file: Path
    paths: list[str]

    @property
    def exp_id(self) -> str:
        return str(self.draft.fields["id"])


@dataclass(frozen=True)
class Measured:
    """What measuring a candidate leaves for its record: every bench run's log and duration
    (the baseline arm's first), the candidate's last output; once judged, the decision, and
    once checked, the checks' run."""

    bench_logs: list[str]
    bench_durations_s: list[float]
    bench_tail: str | None
    decision: Decision | None = None
    checks: RunResult | None = None

    @classmethod
    def of(cls, result: JobResult) -> Measured:
        baseline, candidate = result.arms
        return cls(result.log_paths, baseline.durations + candidate.durations, candidate.tail)

    def fields(self) -> dict[str, Any]:
        """The record's fields: the one place the lifecycle's values become the journal's."""
        found: dict[str, Any] = {
            "bench_logs": self.bench_logs,
            "bench_durations_s": self.bench_durations_s,
            "bench_tail": self.bench_tail,
        }
        if self.decision is not None:
            found["decision"] = self.decision.to_dict()
            found["sentinels"] = self.decision.sentinels_dict()
        if self.checks is not None:
            found["checks"] = self.checks.recorded().to_dict()
        return found


def begin(session: Session, hypothesis: Hypothesis, draft: Draft) -> Candidate | ExperimentRecord:
    """The experiment `draft` starts: its patch saved and checked against the scope; its
    record when it ends here."""
    n = draft.fields["n"]
    draft.phase("apply")
    if hypothesis.problem is not None:
        return draft.finish(hypothesis.problem_status, hypothesis.problem, error=hypothesis.problem)
    patch_file = save_patch(session, n, hypothesis)
    paths, problem = check_patch(session, hypothesis, patch_file)
    draft.note(touched_files=paths)
    if problem:
        return draft.finish(problem.kind, problem.message, error=problem.message)
    return Candidate(hypothesis, draft, patch_file, paths)


def session_guard(session: Session, paths: list[str], baseline: bool = True) -> TreeGuard:
    """The tree guard and the seal around the candidate's runs in the driver's worktrees (its
    build, its bench, its checks): made once the patch is applied. `baseline`: the driver's
    baseline tree is there to guard (not when the arms were measured on a bench host)."""
    # Confined runs cannot write your checkout or the repository: what changes there while
    # they run is yours (repo/seal.py), unless you shared a path of it with them.
    confined = keeps_out(session.config, session.ws.source.path)
    return TreeGuard(
        candidate=session.ws.tree,
        branch=session.ws.branch,
        baseline=session.baseline_tree.path if baseline else None,
        checkout=session.ws.source,
        patch_paths=paths,
        hooks=session.config.target.git_hooks,
        seal=RepoSeal(
            session.ws.source,
            session.config.journal_path,
            mirror=session.paths.root / "journal.copy",
            own=session.paths.root,
            session=session.config.session.name,
            skip=(session.config.ideas_path,),
            confined=confined,
        ),
        watches=session.watches,
        confined=confined,
    )


def conclude(
    session: Session,
    candidate: Candidate,
    decision: Decision,
    measured: Measured,
    *,
    guard: TreeGuard | None = None,
    checks: bool = True,
    applied: bool = True,
) -> ExperimentRecord:
    """The rule's decision on a measured candidate, carried out: the checks (unless `checks`
    is False: measured against a best that is no longer the tip) under the guard and the seal,
    then keep or revert. `applied`: the patch is in the driver's worktree already (measured
    here); else it is applied when the checks or the keep need it (measured on a host)."""
    draft = candidate.draft
    measured = replace(measured, decision=decision)
    draft.note(asi={"result": decision.reason})
    checked = checks and wants_checks(session.config, decision)
    if not applied and (checked or decision.status == Status.KEEP):
        placed = session.ws.apply(candidate.patch_file)
        if not placed.ok:
            why = f"measured, but does not apply to {session.ws.tip()[:10]}: {placed.message}"
            return draft.finish(Status.APPLY_FAILED, why, error=why, **measured.fields())
        guard = session_guard(session, candidate.paths, baseline=False)
    if checked:
        assert guard is not None  # measured here under it, or made above
        draft.phase("checks")
        guard.before_run()
        result = run_checks(session, candidate.exp_id, draft)
        measured = replace(measured, checks=result)
        violation = guard.violation()
        if violation is not None:
            return tampered(session, guard, draft, f"checks: {violation}", measured)
        failed = checks_failure(session, result)
        if failed is not None:
            session.ws.revert()
            return draft.finish(*failed, **measured.fields())
    if decision.status != Status.KEEP:
        session.ws.revert()
        return draft.finish(decision.status, decision.reason, **measured.fields())
    draft.phase("commit")
    return keep(session, draft, candidate.hypothesis, decision, candidate.paths, measured)


def measure_guarded(
    harness: Harness,
    arms: tuple[Path, Path],
    logs: Callable[[str], Path],
    guard: TreeGuard,
    **how: Any,
) -> PairMeasurement:
    """The candidate built and run against the best, alternating, until the rule decides; the
    guard told before every run of the candidate and asked after it (`tampered` the moment
    anything outside its patch changed)."""
    harness.guard = guard
    return measure_pair(harness, arms, logs, **how)


def new_draft(session: Session, hypothesis: Hypothesis, n: int, marker_path: Path) -> Draft:
    """The record of experiment `n` as it starts, mirrored to `marker_path`."""
    earlier = session.attempts.get(hypothesis.sha256)
    return Draft(
        marker=marker_path,
        fields={
            "session": session.config.session.name,
            "id": experiment_id(session, n),
            "n": n,
            "title": hypothesis.title,
            "proposer": hypothesis.proposer or "queue",
            "proposal": hypothesis.proposal,
            "family": hypothesis.family,
            "agent": None if hypothesis.agent is None else hypothesis.agent.to_dict(),
            "source": hypothesis.source,
            "patch_sha256": hypothesis.sha256,
            "touched_files": [],
            "parent_commit": session.ws.tip(),
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


def experiment_id(session: Session, n: int) -> str:
    return f"{session.config.session.name}-{n:04d}"


def check_patch(
    session: Session, hypothesis: Hypothesis, patch_file: Path
) -> tuple[list[str], PatchProblem | None]:
    """The paths the patch touches, and the first reason it may not be applied."""
    config = session.config
    named = patch_paths(hypothesis.text)
    touched = session.ws.touched_paths(patch_file)
    paths = list(dict.fromkeys([*named, *(touched or [])]))
    problem = check_paths(
        hypothesis.text,
        paths,
        worktree=session.ws.path,
        include=config.scope.include,
        protect=config.protected_globs(),
        allow_binary=config.scope.allow_binary,
    )
    if problem is None and touched is None:
        problem = PatchProblem(
            Status.APPLY_FAILED, "git cannot read the patch (not a unified diff?)"
        )
    return paths, problem


def run_checks(session: Session, exp_id: str, draft: Draft) -> RunResult:
    session.progress.phase("checks")
    harness: Harness = session.harness(draft.running)
    result: RunResult = harness.checks(session.ws.path, session.paths.log(exp_id, "checks"))
    return result


def checks_failure(session: Session, checks: RunResult) -> tuple[Status, str] | None:
    """How the checks failed the candidate (its status and why), or None when they passed
    and tested as much as the best's did (bench/testcount.py)."""
    if not checks.ok:
        require_space(Path(checks.log_path), "the checks' output")
        status = Status.INTERRUPTED if checks.interrupted else Status.CHECKS_FAILED
        return status, f"checks {checks.describe()}; log: {checks.log_path}"
    fewer = count_problem(checks.tests, best_tests(session))
    if fewer is not None:
        return Status.CHECKS_FAILED, f"checks passed, but {fewer}; log: {checks.log_path}"
    return None


def keep(
    session: Session,
    draft: Draft,
    hypothesis: Hypothesis,
    decision: Decision,
    paths: list[str],
    measured: Measured,
) -> ExperimentRecord:
    """Commit the patch on the session branch; the pending record survives a crash mid-commit."""
    primary = decision.evidence
    summary = {
        "status": "keep",
        "metric": decision.primary,
        "baseline": primary.baseline_median,
        "candidate": primary.candidate_median,
        "change_pct": primary.change_pct,
        "ci_pct": [primary.ci_low_pct, primary.ci_high_pct],
        "p_value": primary.p_better,
        "threshold_pct": primary.threshold_pct,  # the judge's, here or on a host
        "patch_sha256": hypothesis.sha256,
    }
    record = draft.finish(Status.KEEP, None, **measured.fields())
    draft.save(pending=record.to_dict())
    message = _commit_message(hypothesis, decision, record.id, summary, session.config)
    try:
        sha = session.ws.keep(paths, message)
    except UncommittableError as exc:
        # The change's own doing: recorded as its failure (never run again), the night goes on.
        session.ws.revert()
        why = f"the keep commit of {record.id} failed: {exc}"
        return draft.finish(Status.APPLY_FAILED, why, error=why, **measured.fields())
    except WorkspaceError as exc:
        # A full disk, a broken repository: the win is not lost (it runs again once on the
        # next run), the tree is clean, and the night stops with the reason.
        session.ws.revert()
        session.stop_error = f"the keep commit of {record.id} failed: {exc}"
        why = f"{session.stop_error}; it runs again on the next run"
        return draft.finish(Status.INTERRUPTED, why, error=why, **measured.fields())
    remember_tests(session, sha, measured.checks.tests if measured.checks is not None else None)
    # Until the recalibration measures it, the kept candidate's own runs stand for the best.
    samples = {name: ev.candidate_samples for name, ev in decision.metrics.items()}
    if session.calibration is not None:
        session.calibration = session.calibration.kept(samples)
    kept: ExperimentRecord = ExperimentRecord.from_dict({**record.to_dict(), "kept_commit": sha})
    return kept


def _commit_message(
    hypothesis: Hypothesis,
    decision: Decision,
    exp_id: str,
    summary: dict[str, Any],
    config: Config,
) -> str:
    unit = config.metric.unit
    low, high = summary["ci_pct"]
    # The hypothesis's words are the proposer's (an agent's): each one line, no reference or
    # mention (inert.commit_line): a title cannot close an issue or add a trailer.
    lines = [
        commit_line(hypothesis.title),
        "",
        f"Primary: {config.metric.name} {format_value(summary['baseline'], unit)} -> "
        f"{format_value(summary['candidate'], unit)} ({summary['change_pct']:+.2f}%, "
        f"95% CI [{low:+.2f}%, {high:+.2f}%])",
    ]
    if hypothesis.mechanism:
        lines.append(f"Mechanism: {commit_line(hypothesis.mechanism)}")
    if hypothesis.hypothesis:
        lines.append(f"Hypothesis: {commit_line(hypothesis.hypothesis)}")
    lines.append(f"Decision: {commit_line(decision.reason)}")
    lines += ["", f"Experiment-Id: {exp_id}", f"Result: {result_trailer(summary)}"]
    return "\n".join(lines) + "\n"


def tampered(
    session: Session, guard: TreeGuard, draft: Draft, why: str, measured: Measured
) -> ExperimentRecord:
    """Never a keep: undo what the candidate did to the branch, both trees and the repository,
    and say what (and what could not be put back)."""
    left = put_back(guard, session.baseline_tree)
    session.ws.revert()
    if guard.baseline is not None:  # measured here: the best's tree is ready for the next
        session.baseline_tree.ensure(session.ws.tip())
    if left:
        why = f"{why}; NOT put back: {'; '.join(left)}"
    session.progress.warn(f"tampering detected: {why}")
    return draft.finish(Status.TAMPERED, why, error=why, **measured.fields())


def put_back(guard: TreeGuard, baseline: BaselineTree) -> list[str]:
    """Undo what a tampering candidate did: what the guard and its seal cover (the branch
    first: the candidate's tree is reverted to it after), and the baseline's build, which is
    not the best's any more (its next `ensure` checks the tree out afresh, cleans it, and
    nothing planted there stays behind). What could not be put back, for the record."""
    left = guard.restore()
    baseline.mark_built(None)
    return left


def wants_checks(config: Config, decision: Decision) -> bool:
    when = config.checks.when
    return when == ChecksWhen.ALWAYS or (when == ChecksWhen.KEEP and decision.status == Status.KEEP)


def save_patch(session: Session, n: int, hypothesis: Hypothesis) -> Path:
    path = session.paths.patches / f"{n:04d}-{hypothesis.sha256[:12]}.patch"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(hypothesis.patch)
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise StateError(
            f"{path}: cannot save the patch ({exc.strerror}): free space (or fix the file "
            "system) and run again to resume"
        ) from None
    return path
