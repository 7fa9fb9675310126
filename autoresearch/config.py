"""Session config: TOML (autoresearch.toml or [tool.autoresearch] in pyproject.toml) -> dataclasses.

Every key is checked: an unknown key or a wrong type is a ConfigError naming the file and the key.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config_checks import check_config, check_session_name
from .errors import ConfigError
from .statuses import Aggregate, ChecksWhen, Direction, RemeasureWhen, SandboxMode
from .tables import build, read_toml

__all__ = [
    "CONFIG_NAMES",
    "BenchConfig",
    "BudgetConfig",
    "ChecksConfig",
    "Config",
    "DecisionConfig",
    "MetricSpec",
    "PrimarySpec",
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
# Never patchable, whatever the user's protect list says: the harness that judges the patch.
ALWAYS_PROTECTED = ("autoresearch.toml", "**/go.mod", "**/go.sum", ".git", ".gitmodules")
# What judges a change in the common ecosystems: the tests, the files that configure how they
# run (the runner's configuration and plugins, the manifests that hold it: pytest's in
# pyproject.toml or setup.cfg, Cargo's harness settings, a package's test script and Jest's or
# Vitest's configuration) and what an interpreter runs before them (Python's sitecustomize,
# usercustomize and .pth files): a change that runs its tests another way could turn a failure
# into a pass. A patch may not edit them unless the config says so (`[scope] allow_tests`).
TESTS_PROTECTED = (
    "**/*_test.*",
    "**/test_*.py",
    "**/*.test.*",
    "**/*.spec.*",
    "**/*.bench.*",
    "**/benches/**",
    "**/tests/**",
    "**/test/**",
    "**/__tests__/**",
    "**/testdata/**",
    "**/conftest.py",
    "**/pytest.ini",
    "**/tox.ini",
    "**/.coveragerc",
    "**/pyproject.toml",
    "**/setup.cfg",
    "**/sitecustomize.py",
    "**/usercustomize.py",
    "**/*.pth",
    "**/Cargo.toml",
    "**/.cargo/config",
    "**/.cargo/config.toml",
    "**/package.json",
    "**/jest.config.*",
    "**/vitest.config.*",
    "**/vitest.workspace.*",
    "**/vite.config.*",
    "**/.mocharc*",
)


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
    # Run before the night's first build, unconfined and with the network, in your checkout:
    # fetches what the confined builds then read, offline, from $AUTORESEARCH_FETCHED
    # (bench/fetched.py).
    fetch: str = ""
    timeout_s: float = 600.0
    # 8 per arm: the A/A check can fail, and the A/A pairs' spread, pooled into each decision's
    # test, gives its early looks 7 degrees of freedom more
    calibration_runs: int = 16
    go_bench: bool = False
    # What the bench's numbers are written in, beyond METRIC lines (readers/formats.py): "auto"
    # recognises each tool's output by its shape; and a file the bench writes them to, in its
    # tree (pytest's --benchmark-json=FILE, hyperfine's --export-json FILE, ...).
    format: str = "auto"
    output: str = ""
    # Build output a revert leaves in each arm's tree (gitignore patterns, e.g. "target/"), so
    # that a build after a revert is incremental; each arm keeps its own.
    keep: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    # Variables of your environment the build, bench and checks get beyond the toolchains'
    # (bench/environ.py): names or patterns, e.g. ["GRANTBENCH_*"]. The rest stays out.
    pass_env: list[str] = field(default_factory=list)
    # Quieter runs: pin the bench to these CPUs (taskset -c), run each arm this many times
    # before its measured runs and drop them, and make one sample of `repeat` runs in a row,
    # each metric aggregated by `aggregate` (best: the least disturbed run, the minimum of a
    # lower-is-better metric; median).
    cpus: str = ""
    # How many rows of each benchmark one run reports in a tool's format (`go test -count`,
    # criterion's repeats); more is an error. 0: not declared.
    rows: int = 0
    warmup_runs: int = 0
    repeat: int = 1
    aggregate: Aggregate = Aggregate.BEST
    # A cheaper command that prints only the sentinels' METRIC lines: once a win is decided and
    # only a sentinel is unresolved, the extra pairs run it instead of the whole bench, so the
    # same seconds buy more pairs where the uncertainty is.
    sentinel_command: str = ""


@dataclass(frozen=True)
class ChecksConfig:
    command: str = "./autoresearch.checks.sh"
    timeout_s: float = 900.0
    when: ChecksWhen = ChecksWhen.KEEP
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class MetricSpec:
    name: str
    direction: Direction = Direction.LOWER
    unit: str = ""


@dataclass(frozen=True)
class PrimarySpec(MetricSpec):
    # A metric the night decides on instead when a calibration finds `name` too noisy to see
    # the effect asked for and this one not (`init` writes the fastest round of a harness
    # that reports one): the session then decides on it from that calibration on.
    fallback: str = ""


@dataclass(frozen=True)
class SentinelSpec:
    name: str
    budget_pct: float
    direction: Direction = Direction.LOWER
    unit: str = ""


@dataclass(frozen=True)
class ScopeConfig:
    include: list[str] = field(default_factory=lambda: ["**"])
    protect: list[str] = field(default_factory=list)
    allow_binary: bool = False
    allow_tests: bool = False  # true: a patch may edit the tests (TESTS_PROTECTED)


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
    looks: int = 10  # looks from min_runs to the cap, spaced geometrically
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
    remeasure_when: RemeasureWhen = RemeasureWhen.OVERLAP
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
    mode: SandboxMode = SandboxMode.AUTO
    required: bool = False  # refuse to run unconfined (as mode = "bwrap")
    network: bool = False  # bench, build and checks may reach the network
    build_network: bool = False  # the build alone may (it fetches dependencies)
    # ... and make Unix sockets (a bench of a server on one): else refused, since one on the
    # host (a container engine's, the user's bus) would reach outside the sandbox.
    unix_sockets: bool = False
    writable: list[str] = field(default_factory=list)  # shared by both arms (relative: config)
    # What of your home (or checkout) a run reads beyond its tools and their stores: shown
    # read-only; the rest of those directories it does not see (relative: config).
    read: list[str] = field(default_factory=list)
    # Caches a toolchain writes, one directory per arm: env var -> directory name, e.g.
    # { GOCACHE = "go-build" } gives each arm GOCACHE=<state>/caches/<arm>/go-build.
    caches: dict[str, str] = field(default_factory=dict)
    # Where an arm's cache starts from the first time: env var -> a directory copied (never
    # linked: a run may rewrite what it finds), e.g. { GOCACHE = "~/.cache/go-build" }.
    cache_seeds: dict[str, str] = field(default_factory=dict)
    # Runs see the repository's git directory (a build that reads its version from git:
    # setuptools-scm, `git describe`); else hidden, with all that tells the arms apart.
    git: bool = False


@dataclass(frozen=True)
class EquivalenceConfig:
    """A command whose output must be the same, byte for byte, for the best and a candidate:
    run in both arms after the candidate's build, before its bench (a storage engine's digest
    of what it stored, a parser's parse of a corpus)."""

    command: str = ""  # "": no equivalence check
    files: list[str] = field(default_factory=list)  # compared instead of stdout (tree-relative)
    timeout_s: float = 300.0


@dataclass(frozen=True)
class HoldoutConfig:
    """A workload the agent and the candidate's bench runs never see (its files hidden from
    every confined run but its own), measured, paired, before every keep and at the
    confirmation: a keep must generalize to it."""

    command: str = ""  # "": no holdout; runs in the arm's tree, prints METRIC lines
    files: list[str] = field(default_factory=list)  # hidden elsewhere (relative: config)
    metric: str = ""  # the metric judged; "": the primary metric's name
    pairs: int = 6  # pairs of holdout runs before a keep
    budget_pct: float = 2.0  # refused when the holdout is shown worse by more than this
    require_win: bool = False  # true: refused unless the holdout shows a win too
    # A holdout still undecided runs `pairs` more, up to this many (0: three times `pairs`):
    # a real win smaller there, or a gain shown short of the floor, needs more pairs to show.
    max_pairs: int = 0
    # Refused when the holdout shows it gains less than this (negative: the decision's floor),
    # or less than this share of what the bench showed it gain: tuned to the bench.
    min_gain_pct: float = -1.0
    min_share: float = 0.33

    @property
    def most_pairs(self) -> int:
        """The pairs an undecided holdout may run before a keep, all looks together."""
        return max(self.max_pairs or 3 * self.pairs, self.pairs)

    @property
    def looks(self) -> int:
        """How many times the holdout's evidence may be looked at before a keep."""
        return -(-self.most_pairs // max(self.pairs, 1))


@dataclass(frozen=True)
class ProfileConfig:
    """Where the time goes: a run of the best, off the timed ones, after each calibration
    (profiles.py). Its command writes a profile to $AUTORESEARCH_PROFILE_OUT."""

    command: str = ""  # "": no profile
    format: str = "folded"  # folded | pprof (go tool pprof reads it) | perf (perf script does)
    timeout_s: float = 600.0
    top: int = 12  # frames the agent's prompt and `state` show


@dataclass(frozen=True)
class Config:
    """A validated session config; paths are absolute."""

    path: Path
    metric: PrimarySpec
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
    equivalence: EquivalenceConfig = field(default_factory=EquivalenceConfig)
    holdout: HoldoutConfig = field(default_factory=HoldoutConfig)
    profile: ProfileConfig = field(default_factory=ProfileConfig)

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

    @property
    def holdout_floor_pct(self) -> float:
        """The gain a keep must not be shown to fall short of on the holdout."""
        given = self.holdout.min_gain_pct
        return self.decision.min_effect_pct if given < 0 else given

    @property
    def holdout_files(self) -> list[Path]:
        """The holdout's files, absolute: hidden from every confined run but its own."""
        return [self.resolve(os.path.expanduser(f)) for f in self.holdout.files]

    @property
    def holdout_metric(self) -> SentinelSpec:
        """What the holdout is judged on: its metric, the primary's direction and unit."""
        m = self.metric
        name = self.holdout.metric or m.name
        return SentinelSpec(name, self.holdout.budget_pct, m.direction, m.unit)

    def deciding_on_fallback(self) -> Config:
        """This config with its fallback as the primary metric (decide/calibration.py,
        fallback_switch): the primary's direction and unit, no fallback of its own, and the
        primary a secondary metric, still reported in every record."""
        m = self.metric
        primary = PrimarySpec(m.fallback, m.direction, m.unit)
        secondary = [MetricSpec(m.name, m.direction, m.unit), *self.secondary]
        return dataclasses.replace(self, metric=primary, secondary=secondary)

    def all_metrics(self) -> list[MetricSpec | SentinelSpec]:
        return [self.metric, *self.secondary, *self.sentinel]

    def protected_globs(self) -> list[str]:
        """Configured protections plus the harness: the bench and checks scripts, manifests."""
        extra = [
            script
            for command in (self.bench.command, self.bench.sentinel_command, self.checks.command)
            if (script := script_path(command))
        ]
        tests = () if self.scope.allow_tests else TESTS_PROTECTED
        repo = self.repo_path
        inside = [p.relative_to(repo) for p in self.holdout_files if p.is_relative_to(repo)]
        held = [glob for rel in inside for glob in (str(rel), f"{rel}/**")]
        return [*ALWAYS_PROTECTED, *tests, *extra, *held, *self.scope.protect]

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
    check_config(config)
    return config
