"""What a config must satisfy beyond its types: ranges, choices, and names that must exist.

Each failure is a ConfigError naming the file and the key. The types themselves are checked
where the TOML becomes dataclasses (tables.build).
"""

from __future__ import annotations

import re
import shutil
from typing import TYPE_CHECKING

from .errors import ConfigError
from .plugins import proposer_class
from .readers.formats import bench_problem

if TYPE_CHECKING:
    from .config import Config, MetricSpec, SentinelSpec

_SCHEDULER = re.compile(r"local:\d+|([a-z]+://)?[A-Za-z0-9_.\-\[\]:]+:\d+")
_SESSION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# The largest number of seconds a budget or timeout may name (about 30 years): beyond it the
# arithmetic that turns a budget into runs overflows, and no night is that long.
MAX_SECONDS = 1e9


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


def check_env_names(env: dict[str, str], where: str) -> None:
    """Each key of an environment table names a variable: not empty, no '=' (the OS would
    split the name there and set another variable than the one meant)."""
    for name in env:
        if not name or "=" in name:
            raise ConfigError(
                f"{where}: {name!r} is not an environment variable's name (it must be "
                "non-empty, without '=')"
            )


def _check_proposers(config: Config) -> None:
    """Each `[[proposer]]` names an installed kind and only options that kind knows."""
    if not config.proposer:
        raise ConfigError(f"{config.path}: 'proposer' is empty: name at least one proposer")
    for i, table in enumerate(config.proposer):
        where = f"{config.path}: proposer[{i}]"
        kind = table.get("kind", "queue")
        if not isinstance(kind, str):
            raise ConfigError(f"{where}: 'kind' must be a string (queue, sweep, or a plug-in's)")
        options = {k: v for k, v in table.items() if k != "kind"}
        proposer_class(kind, where).check_options(options, config, where)


def check_config(config: Config) -> None:
    """What the types cannot say: ranges, choices, and names that must exist."""
    _check_metrics(config)
    _check_bench(config)
    _check_numbers(config)
    _check_envs(config)
    _check_decision(config)
    _check_sandbox(config)
    _check_holdout(config)
    _check_profile(config)
    _check_proposers(config)
    check_session_name(config.session.name, f"{config.path}: 'session.name'")


def _check_metrics(config: Config) -> None:
    path = config.path
    specs: list[tuple[str, MetricSpec | SentinelSpec]] = [("metric", config.metric)]
    specs += [(f"secondary[{i}]", s) for i, s in enumerate(config.secondary)]
    specs += [(f"sentinel[{i}]", s) for i, s in enumerate(config.sentinel)]
    for key, spec in specs:
        if not spec.name:
            raise ConfigError(f"{path}: '{key}.name' is empty")
    fallback = config.metric.fallback
    if fallback and fallback == config.metric.name:
        raise ConfigError(
            f"{path}: 'metric.fallback' is the primary metric itself ('{fallback}'); name "
            "another metric the bench prints (its fastest round: the primary's _min_ name)"
        )
    for i, sentinel in enumerate(config.sentinel):
        if sentinel.budget_pct < 0:
            raise ConfigError(f"{path}: 'sentinel[{i}].budget_pct' must be >= 0")


def _check_bench(config: Config) -> None:
    path = config.path
    if not config.bench.command.strip():
        raise ConfigError(f"{path}: 'bench.command' is empty")
    if config.bench.warmup_runs < 0 or config.bench.repeat < 1:
        raise ConfigError(f"{path}: 'bench.warmup_runs' must be >= 0 and 'bench.repeat' >= 1")
    if config.bench.rows < 0:
        raise ConfigError(f"{path}: 'bench.rows' must be >= 0 (0: not declared)")
    if config.bench.sentinel_command and not config.sentinel:
        raise ConfigError(
            f"{path}: 'bench.sentinel_command' is set but no [[sentinel]] is declared: "
            "it runs only when a sentinel is unresolved"
        )
    if problem := bench_problem(config.bench.format, config.bench.output, config.bench.keep):
        raise ConfigError(f"{path}: {problem}")
    if config.bench.cpus and shutil.which("taskset") is None:
        raise ConfigError(f"{path}: 'bench.cpus' needs taskset (util-linux), not found on PATH")
    if config.bench.fetch and config.cluster.scheduler:
        raise ConfigError(
            f"{path}: 'bench.fetch' runs on this machine only, before the night, and bench hosts "
            "([cluster] scheduler) would build without what it fetched: fetch on each host "
            "by hand and name the place in 'bench.build', or set [sandbox] build_network = true"
        )


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
    seconds = {
        "bench.timeout_s": config.bench.timeout_s,
        "checks.timeout_s": config.checks.timeout_s,
        "budget.max_hours": config.budget.max_hours * 3600,
        "decision.budget_s": config.decision.budget_s,
        "cluster.connect_timeout_s": config.cluster.connect_timeout_s,
        "cluster.scheduler_grace_s": config.cluster.scheduler_grace_s,
    }
    for key, value in seconds.items():
        if value > MAX_SECONDS:
            raise ConfigError(
                f"{path}: '{key}' is too large (at most {MAX_SECONDS:g} s), got {value:g}"
            )
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
    if config.session.keep_logs < 0:
        raise ConfigError(f"{path}: 'session.keep_logs' must be >= 0 (0 keeps every log)")
    if not config.session.max_run_log_mb >= 0.125 or not config.session.max_logs_mb >= 1:
        raise ConfigError(
            f"{path}: 'session.max_run_log_mb' must be >= 0.125 and 'session.max_logs_mb' >= 1"
        )
    if config.bench.calibration_runs < 4:
        raise ConfigError(f"{path}: 'bench.calibration_runs' must be >= 4 to measure noise")


def _check_envs(config: Config) -> None:
    path = config.path
    tables = {
        "bench.env": config.bench.env,
        "checks.env": config.checks.env,
        "sandbox.caches": config.sandbox.caches,
        "sandbox.cache_seeds": config.sandbox.cache_seeds,
    }
    for key, env in tables.items():
        check_env_names(env, f"{path}: '{key}'")
    check_env_names(dict.fromkeys(config.bench.pass_env, ""), f"{path}: 'bench.pass_env'")


def _check_decision(config: Config) -> None:
    path = config.path
    decision = config.decision
    if not 2 <= decision.min_runs <= decision.max_runs:
        raise ConfigError(
            f"{path}: 'decision.min_runs' must be >= 2 and <= 'decision.max_runs' "
            f"(got {decision.min_runs} and {decision.max_runs})"
        )
    if decision.looks > decision.max_runs:
        raise ConfigError(
            f"{path}: 'decision.looks' must be <= 'decision.max_runs' (a look needs a run of its "
            f"own), got {decision.looks} and {decision.max_runs}"
        )
    if decision.budget_s < 0 or decision.noise_multiplier < 0:
        raise ConfigError(
            f"{path}: 'decision.budget_s' and 'decision.noise_multiplier' must be >= 0"
        )
    # A change in percent of the metric, read as a ratio (1 - pct/100): 100% or more is no
    # ratio at all (a time cannot fall by all of itself).
    for key in ("min_effect_pct", "target_effect_pct"):
        value = getattr(decision, key)
        if not 0 <= value < 100 or (key == "target_effect_pct" and value == 0):
            bound = ">= 0" if key == "min_effect_pct" else "> 0"
            raise ConfigError(f"{path}: 'decision.{key}' must be {bound} and < 100, got {value:g}")
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
    for name in sandbox.cache_seeds:
        if name not in sandbox.caches:
            raise ConfigError(
                f"{path}: 'sandbox.cache_seeds.{name}' seeds no cache: add it to "
                "'sandbox.caches' (the per-arm directory it starts)"
            )


def _check_profile(config: Config) -> None:
    from .profiles import FORMATS

    path, profile = config.path, config.profile
    if profile.format not in FORMATS:
        raise ConfigError(f"{path}: 'profile.format' must be one of {', '.join(FORMATS)}")
    if profile.top < 1:
        raise ConfigError(f"{path}: 'profile.top' must be at least 1 (got {profile.top})")


def _check_holdout(config: Config) -> None:
    """A holdout has a command, at least two pairs and a budget (its files are checked at the
    pre-flight: none may be in the tree the agent and the candidate see)."""
    path, h = config.path, config.holdout
    if not h.command:
        if h.files:
            raise ConfigError(f"{path}: 'holdout.files' without 'holdout.command'")
        return
    if h.pairs < 2:
        raise ConfigError(f"{path}: 'holdout.pairs' must be at least 2 (got {h.pairs})")
    if h.budget_pct < 0:
        raise ConfigError(f"{path}: 'holdout.budget_pct' must be >= 0 (got {h.budget_pct})")
    if not 0 <= h.min_share < 1:
        raise ConfigError(f"{path}: 'holdout.min_share' must be >= 0 and < 1 (got {h.min_share})")
    if h.max_pairs and h.max_pairs < h.pairs:
        raise ConfigError(
            f"{path}: 'holdout.max_pairs' ({h.max_pairs}) is below 'holdout.pairs' ({h.pairs}): "
            "0 (three times pairs), or at least pairs"
        )
