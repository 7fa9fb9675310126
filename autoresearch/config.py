"""Session config: TOML (autoresearch.toml or [tool.autoresearch] in pyproject.toml) -> dataclasses.

Every key is checked: an unknown key or a wrong type is a ConfigError naming the file and the key.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .bench.formats import bench_problem
from .errors import ConfigError
from .tables import build, read_toml

__all__ = [
    "CONFIG_NAMES",
    "BenchConfig",
    "BudgetConfig",
    "ChecksConfig",
    "Config",
    "DecisionConfig",
    "MetricSpec",
    "ReportConfig",
    "SandboxConfig",
    "ScopeConfig",
    "SentinelSpec",
    "SessionConfig",
    "TargetConfig",
    "check_session_name",
    "find_config",
    "load_config",
    "script_path",
]

CONFIG_NAMES = ("autoresearch.toml", "pyproject.toml")
DIRECTIONS = ("lower", "higher")
CHECKS_WHEN = ("keep", "always", "never")
AGGREGATES = ("best", "median")
SANDBOX_MODES = ("auto", "bwrap", "off")
REMEASURE_WHEN = ("overlap", "always")
_SCHEDULER = re.compile(r"local:\d+|([a-z]+://)?[A-Za-z0-9_.\-\[\]:]+:\d+")
_SESSION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# Never patchable, whatever the user's protect list says: the harness that judges the patch.
ALWAYS_PROTECTED = ("autoresearch.toml", "**/go.mod", "**/go.sum", ".git", ".gitmodules")


@dataclass(frozen=True)
class SessionConfig:
    name: str = "main"
    journal: str = "experiments.jsonl"
    # Empty: under the target repository's git directory, outside every working tree.
    state_dir: str = ""
    ideas: str = "ideas.md"
    # Logs of kept experiments and of the last this-many are kept; 0 keeps every log.
    keep_logs: int = 50
    # One run's log keeps its first and last halves of this (the cut said); all of a
    # session's logs past the second, and the oldest the retention rule allows go mid-run.
    max_run_log_mb: float = 8.0
    max_logs_mb: float = 2048.0
    # A new session first builds, benches once and runs the checks on its base commit, and
    # refuses the night when a configured metric is missing or the checks fail there.
    preflight: bool = True


@dataclass(frozen=True)
class TargetConfig:
    repo: str = "."
    base: str = "HEAD"
    # The user's git hooks and commit signing, for the loop's own commits and checkouts.
    git_hooks: bool = False


@dataclass(frozen=True)
class BenchConfig:
    command: str = "./autoresearch.sh"
    # Run once per arm before its bench runs, so that runs measure the code, not the compiler.
    build: str = ""
    timeout_s: float = 600.0
    # 8 per arm: the A/A check can fail, and the A/A pairs' spread, pooled into each decision's
    # test, gives its early looks 7 degrees of freedom more
    calibration_runs: int = 16
    go_bench: bool = False
    # What the bench's numbers are written in, beyond METRIC lines (bench/formats.py): "auto"
    # recognises each tool's output by its shape; and a file the bench writes them to, in its
    # tree (pytest's --benchmark-json=FILE, hyperfine's --export-json FILE, ...).
    format: str = "auto"
    output: str = ""
    # Build output a revert leaves in each arm's tree (gitignore patterns, e.g. "target/"), so
    # that a build after a revert is incremental; each arm keeps its own.
    keep: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    # Quieter runs: pin the bench to these CPUs (taskset -c), run each arm this many times
    # before its measured runs and drop them, and make one sample of `repeat` runs in a row,
    # each metric aggregated by `aggregate` (best: the least disturbed run, the minimum of a
    # lower-is-better metric; median).
    cpus: str = ""
    warmup_runs: int = 0
    repeat: int = 1
    aggregate: str = "best"
    # A cheaper command that prints only the sentinels' METRIC lines: once a win is decided and
    # only a sentinel is unresolved, the extra pairs run it instead of the whole bench, so the
    # same seconds buy more pairs where the uncertainty is.
    sentinel_command: str = ""


@dataclass(frozen=True)
class ChecksConfig:
    command: str = "./autoresearch.checks.sh"
    timeout_s: float = 900.0
    when: str = "keep"
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class MetricSpec:
    name: str
    direction: str = "lower"
    unit: str = ""


@dataclass(frozen=True)
class SentinelSpec:
    name: str
    budget_pct: float
    direction: str = "lower"
    unit: str = ""


@dataclass(frozen=True)
class ScopeConfig:
    include: list[str] = field(default_factory=lambda: ["**"])
    protect: list[str] = field(default_factory=list)
    allow_binary: bool = False


@dataclass(frozen=True)
class BudgetConfig:
    max_experiments: int = 100
    max_hours: float = 8.0
    stop_after_no_keep: int = 0
    # How many more times an undecided hypothesis (inconclusive, interrupted, baseline failed)
    # is measured; 0 never looks again.
    retries: int = 1


@dataclass(frozen=True)
class DecisionConfig:
    min_effect_pct: float = 2.0  # the floor: the smallest change worth claiming
    noise_multiplier: float = 0.0  # > 0 raises the floor to this many times the noise
    alpha: float = 0.005  # false keeps: the looks' boundaries spend exactly this
    min_runs: int = 2  # runs per arm (pairs) at the first look
    max_runs: int = 28  # the most runs per arm a decision may take
    looks: int = 6  # looks from min_runs to the cap, spaced geometrically
    target_effect_pct: float = 5.0
    sentinel_confidence: float = 0.95
    agree_with: list[str] = field(default_factory=list)
    confirm: bool = True
    confirm_runs: int = 15
    paired: bool = True  # judge the within-pair ratios; false: the two arms as two samples
    budget_s: float = 0.0  # bench time one decision may take; 0: no limit but max_runs

    def schedule(self, cap: int | None = None) -> list[int]:
        """Runs per arm at each look: from min_runs to `cap` (max_runs by default), each look
        about the same factor further than the one before."""
        cap = max(cap or self.max_runs, self.min_runs)
        if self.looks == 1 or cap == self.min_runs:
            return [cap]
        ratio = (cap / self.min_runs) ** (1 / (self.looks - 1))
        return sorted({round(self.min_runs * ratio**k) for k in range(self.looks - 1)} | {cap})


@dataclass(frozen=True)
class ClusterConfig:
    """Bench hosts reached through a Dask scheduler (cluster/): one experiment per host."""

    # "tcp://host:8786"; "local:N" starts N workers on this machine; "": run here, no cluster.
    scheduler: str = ""
    resource: str = "bench"  # the worker resource an experiment holds: one per host
    # A git URL the workers fetch the session branch from; "": a bundle sent through Dask.
    remote: str = ""
    # Where a worker keeps its clone; "": under the worker's local directory.
    workdir: str = ""
    remeasure: int = 2  # times a win measured against a best that moved is measured again
    # When it is: "overlap", only when the keeps since its measurement touched one of its files
    # (else kept on that evidence, said in its record); "always", whenever the best moved.
    remeasure_when: str = "overlap"
    connect_timeout_s: float = 60.0  # for the scheduler and its first bench worker
    # How long a lost scheduler may take to come back before the night stops (its experiments
    # in flight recorded as interrupted, run again on resume).
    scheduler_grace_s: float = 120.0


@dataclass(frozen=True)
class ReportConfig:
    # The engine the PR's headline table compares against: the primary metric's first word
    # replaced by this (pebble_writepack_1k_ms -> sqlite_writepack_1k_ms), and its name.
    comparison: str = ""
    comparison_label: str = ""
    templates: str = ""  # a directory of templates overriding the built-in ones


@dataclass(frozen=True)
class SandboxConfig:
    # "auto": confine each run of the target's code with bubblewrap when this machine can,
    # else warn and run unconfined; "bwrap": always (refuse without it); "off": never.
    mode: str = "auto"
    required: bool = False  # refuse to run unconfined (as mode = "bwrap")
    network: bool = False  # bench, build and checks may reach the network
    writable: list[str] = field(default_factory=list)  # shared by both arms (relative: config)
    # Caches a toolchain writes, one directory per arm: env var -> directory name, e.g.
    # { GOCACHE = "go-build" } gives each arm GOCACHE=<state>/caches/<arm>/go-build.
    caches: dict[str, str] = field(default_factory=dict)
    # Where an arm's cache starts from the first time: env var -> a directory copied (never
    # linked: a run may rewrite what it finds), e.g. { GOCACHE = "~/.cache/go-build" }.
    cache_seeds: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Config:
    """A validated session config; paths are absolute."""

    path: Path
    metric: MetricSpec
    session: SessionConfig = field(default_factory=SessionConfig)
    target: TargetConfig = field(default_factory=TargetConfig)
    bench: BenchConfig = field(default_factory=BenchConfig)
    checks: ChecksConfig = field(default_factory=ChecksConfig)
    secondary: list[MetricSpec] = field(default_factory=list)
    sentinel: list[SentinelSpec] = field(default_factory=list)
    scope: ScopeConfig = field(default_factory=ScopeConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    decision: DecisionConfig = field(default_factory=DecisionConfig)
    # Where hypotheses come from, in order: `[[proposer]]` tables (or one `[proposer]`), each
    # with its `kind` and that kind's own options (checked by the proposer, see proposers/).
    proposer: list[dict[str, Any]] = field(
        default_factory=lambda: [{"kind": "queue", "dir": "hypotheses"}]
    )
    report: ReportConfig = field(default_factory=ReportConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    def resolve(self, relative: str) -> Path:
        """A path from the config, taken relative to the config file's directory."""
        return (self.base_dir / relative).resolve()

    @property
    def repo_path(self) -> Path:
        return self.resolve(self.target.repo)

    @property
    def journal_path(self) -> Path:
        return self.resolve(self.session.journal)

    @property
    def state_path(self) -> Path | None:
        """Where session state lives, or None for the default under the git directory."""
        return self.resolve(self.session.state_dir) if self.session.state_dir else None

    @property
    def ideas_path(self) -> Path:
        return self.resolve(self.session.ideas)

    @property
    def branch(self) -> str:
        return f"autoresearch/{self.session.name}"

    def all_metrics(self) -> list[MetricSpec | SentinelSpec]:
        return [self.metric, *self.secondary, *self.sentinel]

    def protected_globs(self) -> list[str]:
        """Configured protections plus the harness: the bench and checks scripts, manifests."""
        extra = [
            script
            for command in (self.bench.command, self.bench.sentinel_command, self.checks.command)
            if (script := script_path(command))
        ]
        return [*ALWAYS_PROTECTED, *extra, *self.scope.protect]

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["path"] = str(self.path)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> Config:
        """A config as a journal recorded it; keys this version does not know are ignored."""
        path = Path(data.get("path") or "autoresearch.toml")
        if isinstance(data.get("proposer"), dict):  # journals written before proposer chains
            data = {**data, "proposer": [data["proposer"]]}
        return build(cls, {**data, "path": path}, path, "", strict=False)


def check_session_name(name: str, where: str) -> str:
    """A session name names a branch and a directory: letters, digits, '.', '_', '-' only."""
    if not _SESSION_NAME.fullmatch(name) or ".." in name or name.endswith(".lock"):
        raise ConfigError(
            f"{where} must be letters, digits, '.', '_' or '-', starting with a letter or "
            f"digit (it names the branch autoresearch/<name> and a state directory), got {name!r}"
        )
    return name


def check_scheduler(address: str, where: str) -> str:
    """A Dask scheduler address (`tcp://host:8786`, `host:8786`), `local:N` for N workers on
    this machine, or empty for no cluster."""
    if address and not _SCHEDULER.fullmatch(address):
        raise ConfigError(
            f"{where} must be a scheduler address such as tcp://bench1:8786, or local:N for N "
            f"workers on this machine, got {address!r}"
        )
    if address.startswith("local:") and int(address.removeprefix("local:")) < 1:
        raise ConfigError(f"{where}: local:N needs at least one worker, got {address!r}")
    return address


def script_path(command: str) -> str | None:
    """The repository-relative script a command runs, when it runs one (`./x.sh`, `bash x.sh`)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for word in words:
        if word in ("bash", "sh", "python", "python3", "env") or "=" in word:
            continue
        if word.startswith("/"):
            return None
        return word.removeprefix("./") if ("/" in word or "." in word) else None
    return None


def find_config(start: Path) -> Path:
    """The config file in `start`: autoresearch.toml, else a pyproject.toml with the section."""
    for name in CONFIG_NAMES:
        candidate = start / name
        if not candidate.is_file():
            continue
        if name == "pyproject.toml":
            data = read_toml(candidate)
            if "autoresearch" not in data.get("tool", {}):
                continue
        return candidate
    raise ConfigError(
        f"no autoresearch.toml (or [tool.autoresearch] in pyproject.toml) in {start}; "
        "run `autoresearch init` to create one, or pass --config PATH"
    )


def load_config(path: Path) -> Config:
    """Read and validate a config file."""
    path = path.resolve()
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    data = read_toml(path)
    if path.name == "pyproject.toml":
        data = data.get("tool", {}).get("autoresearch")
        if data is None:
            raise ConfigError(f"{path}: no [tool.autoresearch] section")
    if "metric" not in data:
        raise ConfigError(f"{path}: missing [metric] section (the primary metric: name, direction)")
    if isinstance(data.get("proposer"), dict):  # one `[proposer]` table: a chain of one
        data = {**data, "proposer": [data["proposer"]]}
    config = build(Config, {**data, "path": path}, path, "")
    _check_semantics(config)
    return config


def _check_proposers(config: Config) -> None:
    """Each `[[proposer]]` names an installed kind and only options that kind knows."""
    from .proposers.registry import proposer_class  # proposers build on this module

    if not config.proposer:
        raise ConfigError(f"{config.path}: 'proposer' is empty: name at least one proposer")
    for i, table in enumerate(config.proposer):
        where = f"{config.path}: proposer[{i}]"
        kind = table.get("kind", "queue")
        if not isinstance(kind, str):
            raise ConfigError(f"{where}: 'kind' must be a string (queue, sweep, or a plug-in's)")
        options = {k: v for k, v in table.items() if k != "kind"}
        proposer_class(kind, where).check_options(options, config, where)


def _check_semantics(config: Config) -> None:
    """What the types cannot say: ranges, choices, and names that must exist."""
    _check_metrics(config)
    _check_bench(config)
    _check_numbers(config)
    _check_decision(config)
    _check_sandbox(config)
    _check_proposers(config)
    check_session_name(config.session.name, f"{config.path}: 'session.name'")


def _check_metrics(config: Config) -> None:
    path = config.path
    specs = [("metric", config.metric)]
    specs += [(f"secondary[{i}]", s) for i, s in enumerate(config.secondary)]
    specs += [(f"sentinel[{i}]", s) for i, s in enumerate(config.sentinel)]
    for key, spec in specs:
        if spec.direction not in DIRECTIONS:
            raise ConfigError(
                f"{path}: '{key}.direction' must be 'lower' or 'higher', got '{spec.direction}'"
            )
        if not spec.name:
            raise ConfigError(f"{path}: '{key}.name' is empty")
    for i, sentinel in enumerate(config.sentinel):
        if sentinel.budget_pct < 0:
            raise ConfigError(f"{path}: 'sentinel[{i}].budget_pct' must be >= 0")


def _check_bench(config: Config) -> None:
    path = config.path
    if not config.bench.command.strip():
        raise ConfigError(f"{path}: 'bench.command' is empty")
    if config.bench.aggregate not in AGGREGATES:
        raise ConfigError(f"{path}: 'bench.aggregate' must be one of {', '.join(AGGREGATES)}")
    if config.bench.warmup_runs < 0 or config.bench.repeat < 1:
        raise ConfigError(f"{path}: 'bench.warmup_runs' must be >= 0 and 'bench.repeat' >= 1")
    if config.bench.sentinel_command and not config.sentinel:
        raise ConfigError(
            f"{path}: 'bench.sentinel_command' is set but no [[sentinel]] is declared: "
            "it runs only when a sentinel is unresolved"
        )
    if problem := bench_problem(config.bench.format, config.bench.output, config.bench.keep):
        raise ConfigError(f"{path}: {problem}")
    if config.bench.cpus and shutil.which("taskset") is None:
        raise ConfigError(f"{path}: 'bench.cpus' needs taskset (util-linux), not found on PATH")
    if config.checks.when not in CHECKS_WHEN:
        raise ConfigError(f"{path}: 'checks.when' must be one of {', '.join(CHECKS_WHEN)}")


def _check_numbers(config: Config) -> None:
    path = config.path
    positive = {
        "bench.timeout_s": config.bench.timeout_s,
        "bench.calibration_runs": config.bench.calibration_runs,
        "decision.looks": config.decision.looks,
        "decision.confirm_runs": config.decision.confirm_runs,
        "checks.timeout_s": config.checks.timeout_s,
        "budget.max_experiments": config.budget.max_experiments,
        "budget.max_hours": config.budget.max_hours,
    }
    for key, value in positive.items():
        if value <= 0:
            raise ConfigError(f"{path}: '{key}' must be > 0, got {value}")
    if config.budget.retries < 0:
        raise ConfigError(f"{path}: 'budget.retries' must be >= 0")
    check_scheduler(config.cluster.scheduler, f"{path}: 'cluster.scheduler'")
    if (
        config.cluster.remeasure < 0
        or config.cluster.connect_timeout_s <= 0
        or config.cluster.scheduler_grace_s <= 0
    ):
        raise ConfigError(
            f"{path}: 'cluster.remeasure' must be >= 0, 'cluster.connect_timeout_s' and "
            "'cluster.scheduler_grace_s' > 0"
        )
    if config.cluster.remeasure_when not in REMEASURE_WHEN:
        raise ConfigError(
            f"{path}: 'cluster.remeasure_when' must be one of {', '.join(REMEASURE_WHEN)}"
        )
    if config.session.keep_logs < 0:
        raise ConfigError(f"{path}: 'session.keep_logs' must be >= 0 (0 keeps every log)")
    if not config.session.max_run_log_mb >= 0.125 or not config.session.max_logs_mb >= 1:
        raise ConfigError(
            f"{path}: 'session.max_run_log_mb' must be >= 0.125 and 'session.max_logs_mb' >= 1"
        )
    if config.bench.calibration_runs < 4:
        raise ConfigError(f"{path}: 'bench.calibration_runs' must be >= 4 to measure noise")


def _check_decision(config: Config) -> None:
    path = config.path
    decision = config.decision
    if not 2 <= decision.min_runs <= decision.max_runs:
        raise ConfigError(
            f"{path}: 'decision.min_runs' must be >= 2 and <= 'decision.max_runs' "
            f"(got {decision.min_runs} and {decision.max_runs})"
        )
    if decision.budget_s < 0 or decision.noise_multiplier < 0:
        raise ConfigError(
            f"{path}: 'decision.budget_s' and 'decision.noise_multiplier' must be >= 0"
        )
    if not 0 < decision.alpha < 0.5:
        raise ConfigError(f"{path}: 'decision.alpha' must be between 0 and 0.5")
    if not 0.5 <= decision.sentinel_confidence < 1:
        raise ConfigError(f"{path}: 'decision.sentinel_confidence' must be in [0.5, 1)")
    known = {spec.name for spec in config.all_metrics()}
    for i, name in enumerate(decision.agree_with):
        if name not in known:
            raise ConfigError(
                f"{path}: 'decision.agree_with[{i}]' names '{name}', which is not a "
                "secondary or sentinel metric"
            )


def _check_sandbox(config: Config) -> None:
    path, sandbox = config.path, config.sandbox
    if sandbox.mode not in SANDBOX_MODES:
        raise ConfigError(f"{path}: 'sandbox.mode' must be one of {', '.join(SANDBOX_MODES)}")
    for name in sandbox.cache_seeds:
        if name not in sandbox.caches:
            raise ConfigError(
                f"{path}: 'sandbox.cache_seeds.{name}' seeds no cache: add it to "
                "'sandbox.caches' (the per-arm directory it starts)"
            )
