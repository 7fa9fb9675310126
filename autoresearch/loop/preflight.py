"""Pre-flight: before a night, show what the bench prints and prove the checks pass unmodified.

Run once on the session's base commit (at the start of a new session, and on demand as
`autoresearch check`): build, one bench run, then the checks; `check` then calibrates as `run`
does and gives the noise verdict `run` would give (decide/design.noise_verdict). It lists every
metric printed, with its value and the family and scale it is recognised as, names every
configured metric the bench did not print (with the nearest printed name), and refuses the night
when the checks fail on code nobody changed: every keep would otherwise end as `checks_failed`.
"""

from __future__ import annotations

import difflib
import functools
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeGuard

from ..bench.measure import Harness
from ..bench.metrics import read_run_metrics, run_output
from ..bench.proc import RunResult, read_log
from ..bench.void_runs import denied_path, read_sample, void_reason
from ..config import Config, script_path
from ..decide.calibration import Calibration, calibrated_config
from ..decide.design import NOISE_CALIBRATIONS, NoiseVerdict
from ..errors import MetricParseError, PreflightError, UserError, WorkspaceError
from ..repo.gitrepo import open_repo
from ..repo.state_dir import session_paths
from ..repo.workspace import Workspace, add_detached_tree
from ..report.scales import scale_parts
from ..statuses import ChecksWhen, SandboxMode

__all__ = ["Preflight", "check_repository", "holdout_problems", "require_scripts", "run_preflight"]


@dataclass
class Preflight:
    commit: str
    metrics: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    bench: RunResult | None = None
    checks: RunResult | None = None
    interrupted: bool = False
    noise: NoiseVerdict | None = None  # `check`'s calibration: what a night could detect
    fallback: str | None = None  # why that night decides on [metric] fallback, when it would
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and not self.interrupted

    def lines(self, config: Config) -> list[str]:
        """What the bench printed, one metric a line, with its role and family."""
        roles = {config.metric.name: "primary", config.metric.fallback: "fallback"}
        roles.update({s.name: "secondary" for s in config.secondary})
        roles.update({s.name: "sentinel" for s in config.sentinel})
        count = f"{len(self.metrics)} metric{'s' if len(self.metrics) != 1 else ''}"
        out = [f"pre-flight on {self.commit[:10]}: the bench printed {count}"]
        width = max((len(n) for n in self.metrics), default=0)
        for name, value in self.metrics.items():
            parts = scale_parts(name)
            family = f"family {parts[0]}*{parts[2]} at {parts[1]}" if parts else ""
            role = roles.get(name, "")
            out.append(f"  {name:<{width}}  {value:>14.6g}  {role:<9}  {family}".rstrip())
        if self.bench is not None and self.bench.ok:
            out.append(
                f"  one bench run took {self.bench.duration_s:.1f}s: a decision of "
                f"{config.decision.max_runs} pairs at most takes up to "
                f"{2 * config.decision.max_runs * self.bench.duration_s / 60:.0f} min"
            )
        if self.checks is not None:
            verdict = "pass" if self.checks.exit_code == 0 else self.checks.describe()
            out.append(
                f"  checks on the unmodified code: {verdict} ({self.checks.duration_s:.1f}s)"
            )
        if self.fallback is not None:
            out.append(f"  calibration: {self.fallback}")
        if self.noise is not None:
            out.append(f"  calibration: {self.noise.message}")
        out += [f"  warning: {w}" for w in self.warnings]
        return out


def run_preflight(
    config: Config, cwd: Path, commit: str, log_dir: Path, harness: Harness
) -> Preflight:
    """Build, bench once and run the checks in `cwd` (a clean tree at `commit`)."""
    result = Preflight(commit=commit)
    result.problems += holdout_problems(config, cwd)
    fetched = harness.fetch(log_dir / "fetch.log")
    if _failed(fetched):
        return _stopped(result, fetched, f"[bench] fetch fails in {config.repo_path}", "")
    build = harness.build(cwd, log_dir / "build.log")
    if _failed(build):
        return _stopped(result, build, "the build fails on the unmodified code", _hint(build))
    bench = harness.bench(cwd, log_dir / "bench.log")
    result.bench = bench
    if bench.interrupted:
        result.interrupted = True
        return result
    if bench.timed_out or bench.exit_code != 0:
        result.problems.append(
            f"the bench fails on the unmodified code ({bench.describe()}){_hint(bench)}; "
            f"log: {bench.log_path}"
        )
        return result
    try:
        text, source = run_output(bench.log_path)
        result.metrics = read_run_metrics(config.bench, text, cwd, source)
    except MetricParseError as exc:
        result.problems.append(str(exc))
        return result
    result.problems += _missing(config, result.metrics)
    needed = [(config.metric.name, config.metric.unit)]
    needed += [(s.name, s.unit) for s in config.sentinel]
    void = void_reason(read_log(bench.log_path), result.metrics, needed)
    if void is not None:
        seen = _unconfined(config, harness, cwd, log_dir, bench)
        result.problems.append(
            f"the bench measured nothing on the unmodified code: {void}{seen}; "
            f"log: {bench.log_path}"
        )
        return result
    fallback = config.metric.fallback
    if fallback and fallback not in result.metrics:  # optional: a net, never a refusal
        result.warnings.append(
            f"[metric] fallback '{fallback}': the bench printed no such metric, so a night "
            "too noisy on the primary cannot decide on it instead"
        )
    checks = harness.checks(cwd, log_dir / "checks.log")
    result.checks = checks
    if checks.interrupted:
        result.interrupted = True
    elif checks.exit_code != 0 or checks.timed_out:
        tail = f": {checks.tail.strip().splitlines()[-1]}" if (checks.tail or "").strip() else ""
        result.problems.append(
            f"the checks fail on the unmodified code ({checks.describe()}{tail}){_hint(checks)}; "
            f"every keep would end as checks_failed. Fix them first; log: {checks.log_path}"
        )
    return result


def _unconfined(
    config: Config, harness: Harness, cwd: Path, log_dir: Path, confined: RunResult
) -> str:
    """For a confined bench that measured nothing: the same run unconfined, as you would run
    it by hand, and what the difference says (the path the sandbox denied, and what to do);
    empty for an unconfined bench."""
    if harness.unconfined is not None:
        return ""
    off = replace(config, sandbox=replace(config.sandbox, mode=SandboxMode.OFF))
    plain = Harness(off, env=harness.env, stop=harness.stop)
    run = plain.bench(cwd, log_dir / "bench-unconfined.log")
    values, _ = read_sample(off, Path(run.log_path), cwd) if run.ok else (None, "")
    if values is None:
        return f"; unconfined too (log: {run.log_path}): the bench itself is at fault"
    measured = f"{config.metric.name}={values[config.metric.name]:g}"
    denied = denied_path(read_log(confined.log_path))
    where = f" denied {denied}" if denied else " denied what it needs"
    return (
        f"; unconfined, as you would run it, it measured {measured}: the sandbox{where}. "
        "Confined runs see your home and what is outside the tree read-only: a cache the bench "
        'writes there goes per arm with [sandbox] caches = { VAR = "name" } (GOCACHE = '
        '"go-build" for Go\'s), a file it writes goes in the tree, a path it reads goes in '
        "[sandbox] read"
    )


def _failed(run: RunResult | None) -> TypeGuard[RunResult]:
    """Whether a step the pre-flight ran (None: the config has none) failed or was stopped."""
    return run is not None and (run.interrupted or run.exit_code != 0 or run.timed_out)


def _stopped(result: Preflight, run: RunResult, failed: str, hint: str) -> Preflight:
    """The pre-flight stopped at a step that failed (or a signal stopped): what failed, how,
    what the run's output says is missing, and its log."""
    result.interrupted = run.interrupted
    result.problems.append(f"{failed} ({run.describe()}){hint}; log: {run.log_path}")
    return result


def holdout_problems(config: Config, cwd: Path) -> list[str]:
    """What is wrong with the holdout's files: missing (every keep would fail on it), or in
    the commit's tree `cwd` (the agent and every candidate would see them there, whatever the
    sandbox hides)."""
    repo = config.repo_path
    problems = []
    for path in config.holdout_files:
        if not path.exists():
            problems.append(f"[holdout] files: {path} does not exist")
        elif path.is_relative_to(repo) and (cwd / path.relative_to(repo)).exists():
            rel = path.relative_to(repo)
            problems.append(
                f"[holdout] files: {rel} is in the repository's tree, where the agent and "
                "every candidate see it; keep it outside the repository, or untrack and "
                f"ignore it (git rm -r --cached {rel})"
            )
    return problems


# What a failed bench's output says is missing, and what to do about it.
HINTS = (
    (
        re.compile(r"unrecognized arguments: --benchmark|No module named .?pytest_benchmark"),
        "pytest-benchmark is not installed in the interpreter the bench runs: install it there "
        "(pip install pytest-benchmark), or name another with `init --python`",
    ),
    (
        re.compile(r"No module named pytest\b"),
        "pytest is not installed in the interpreter the bench runs (pip install pytest)",
    ),
    (
        re.compile(r"No module named|Cannot find module|ERR_MODULE_NOT_FOUND"),
        "a module is not found where the run imports it: a dependency not installed in the "
        "interpreter it runs (the project's test extras), or a package of the project "
        "installed from your checkout (pip install -e ., uv sync, npm link), which a confined "
        "run does not see and which was never the candidate's code: import the tree's own (a "
        'src layout: env PYTHONPATH="$PWD/src" before the interpreter, as init writes it)',
    ),
    (
        re.compile(r"(?m)^.*: (?:line \d+: )?(\S+): (?:command )?not found$"),
        "a program the bench runs is not found where it runs (a path under /tmp, or not on "
        "the PATH the bench gets)",
    ),
    (
        re.compile(
            r"Could not resolve host|Temporary failure in name resolution|dial tcp: lookup|"
            r"getaddrinfo|ENOTFOUND|Network is unreachable|module lookup disabled by GOPROXY=off|"
            r"attempting to make an HTTP request, but --offline was specified|"
            r"no matching package named .* found|failed to (download|load source for)"
        ),
        "the run reached for the network, which confined runs do not have: fetch the "
        "dependencies before the night (cargo fetch, go mod download, npm ci, pip download) "
        "and commit the lock file; or let the build alone reach it, [sandbox] build_network = "
        "true",
    ),
    (
        re.compile(r"Manually specified source directory is missing"),
        "a dependency's sources are not where the build reads them: what [bench] fetch "
        "fetched into $AUTORESEARCH_FETCHED (the pre-flight of `check` and of a new `run` "
        "fetches them; a project whose FetchContent names changed since init: init again)",
    ),
    (
        re.compile(r"not a git repository"),
        "confined runs do not see the repository's git directory (its branch would tell a "
        "run which arm it is in): for a build or checks that needs git, set [sandbox] git = "
        "true",
    ),
)


def _hint(run: RunResult) -> str:
    """What the run's last output says is missing, as `: <hint>`; empty when nothing known."""
    tail = run.tail or ""
    return next((f": {hint}" for pattern, hint in HINTS if pattern.search(tail)), "")


def _missing(config: Config, printed: dict[str, float]) -> list[str]:
    wanted = [("[metric] name", config.metric.name)]
    wanted += [("[[secondary]] name", s.name) for s in config.secondary]
    wanted += [("[[sentinel]] name", s.name) for s in config.sentinel]
    problems = []
    for where, name in wanted:
        if name in printed:
            continue
        near = difflib.get_close_matches(name, list(printed), n=1, cutoff=0.5)
        hint = f"; did you mean '{near[0]}'?" if near else ""
        problems.append(f"{where} '{name}': the bench printed no such metric{hint}")
    return problems


def check_repository(
    config: Config, env: dict[str, str], say: Callable[[str], None], calibrate_noise: bool = True
) -> Preflight:
    """`autoresearch check`: the pre-flight on the session's current best (its base before the
    first keep), then its calibration, in temporary worktrees removed afterwards; the user's
    checkout is untouched."""
    repo = open_repo(config.repo_path, config.target.git_hooks)
    rev = config.branch if repo.branch_exists(config.branch) else config.target.base
    commit = repo.resolve(rev)
    if commit is None:
        raise WorkspaceError(f"{repo.path}: revision '{rev}' not found ([target] base)")
    scratch = Path(tempfile.mkdtemp(prefix="autoresearch-check-"))
    # Not named `tree`: a confined run of either is staged under that name (staging.py).
    trees = (scratch / "first", scratch / "twin")
    # The logs outlive the trees: a problem's log path must still be there to read.
    logs = session_paths(config).root / "check-logs"
    shutil.rmtree(logs, ignore_errors=True)
    try:
        add_detached_tree(repo, trees[0], commit)
        say(f"pre-flight on {commit[:10]} ({rev}) in {trees[0]}: build, one bench run, the checks")
        harness = Harness(config, env=env, stop=None)
        result = run_preflight(config, trees[0], commit, logs, harness)
        if result.ok and calibrate_noise:
            add_detached_tree(repo, trees[1], commit)
            _calibrate(config, harness, trees, result, logs, say)
        return result
    finally:
        for tree in trees:
            if tree.exists():
                repo.run("worktree", "remove", "--force", str(tree))
        repo.run("worktree", "prune")
        shutil.rmtree(scratch, ignore_errors=True)


def _calibrate(
    config: Config,
    harness: Harness,
    arms: tuple[Path, Path],
    result: Preflight,
    logs: Path,
    say: Callable[[str], None],
) -> None:
    """The calibration `run` starts with, and its verdict on the noise: a night `run` would
    refuse (in a second calibration, as `run` measures one too noisy once more) is a problem
    here too."""
    from ..bench.calibrate import calibrate  # the measurement machinery, only when asked for

    pairs = config.bench.calibration_runs // 2
    logs.mkdir(parents=True, exist_ok=True)
    before = list(result.warnings)  # the pre-flight's own; each calibration adds its A/A check
    for attempt in range(1, NOISE_CALIBRATIONS + 1):
        say(f"calibrating on {result.commit[:10]}: {pairs} runs in each arm, alternating")
        prefix = "calibration" if attempt == 1 else f"calibration{attempt}"
        record = calibrate(
            config,
            harness,
            arms=arms,
            commit=result.commit,
            logs=functools.partial(_log_of, logs, prefix),
            on_run=lambda arm, i: (
                say(f"calibration pair {i}/{pairs}") if arm == "baseline" else None
            ),
        )
        if record is None:
            result.interrupted = True
            return
        result.warnings = before + [w for w in record.warnings if w.startswith("A/A")]
        deciding = calibrated_config(config, record)
        if record.decides_on:
            result.fallback = record.warnings[0]  # calibrate.py says why first
        result.noise = Calibration.from_record(record, deciding.metric.name).verdict(deciding)
        if result.noise is None or not result.noise.refuse:
            return
        if attempt < NOISE_CALIBRATIONS:
            say(result.noise.again)
    noise = result.noise
    assert noise is not None  # each calibration above returned unless it refused
    result.problems.append(
        f"the bench is too noisy for the effect asked for: {noise.message}; `run` "
        "would stop before the night (or spend it anyway with --accept-noise)"
    )


def require_scripts(config: Config, ws: Workspace) -> None:
    """The bench and checks must be committed: the loop runs them from the session worktree."""
    needed = [("bench.command", config.bench.command), ("bench.build", config.bench.build)]
    if config.checks.when != ChecksWhen.NEVER:
        needed.append(("checks.command", config.checks.command))
    for key, command in needed:
        script = script_path(command) if command else None
        if script and not (ws.path / script).exists():
            raise UserError(
                f"{config.path}: {key} runs '{script}', which is not committed in "
                f"{ws.source.path} at the session tip; commit it (the loop runs the committed copy)"
            )
    if problems := holdout_problems(config, ws.path):
        raise PreflightError(f"{config.path}: {'; '.join(problems)}")


def _log_of(logs: Path, prefix: str, name: str) -> Path:
    """A calibration's log, under the check's logs, named by the attempt it belongs to."""
    return logs / f"{prefix}-{name}.log"
