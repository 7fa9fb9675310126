"""The agent proposer's options, checked once at config load: each wrong one named with where."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...config import Config
from ...config_checks import check_env_names
from ...errors import ConfigError
from .cli import OUTPUTS, PRESETS

__all__ = ["AgentSettings", "agent_settings"]


@dataclass(frozen=True)
class AgentSettings:
    preset: str
    command: str | None = None  # the preset's command replaced (a wrapper), or `command`'s own
    model: str | None = None
    output: str = "none"  # how its output reports usage (cli.OUTPUTS)
    timeout_s: float = 900.0  # per proposal, wall clock
    max_turns: int = 30  # per proposal, where the CLI takes it (Claude Code)
    max_usd: float | None = None  # per proposal, where the CLI takes it (Claude Code)
    max_proposals: int = 50  # per session
    max_cost_usd: float | None = None  # per session: no proposal once this much is spent
    pivot_after: int = 5  # experiments in a row without a keep before asking for a new direction
    max_pivots: int = 2  # such requests before the proposer stops
    prompt_chars: int = 24_000
    recent: int = 12  # experiments shown in full in the prompt
    max_patch_kib: int = 256
    template: Path | None = None
    ignore: list[str] = field(default_factory=list)  # agent droppings never part of a patch
    files: list[str] = field(default_factory=list)  # named to the CLI (Aider edits only those)
    home: list[str] = field(default_factory=list)  # copied from ~ into a confined agent's home
    prepare_ahead: bool = False
    env: dict[str, str] = field(default_factory=dict)


_NUMBERS = {
    "timeout_s": (float, 1.0),
    "max_turns": (int, 1),
    "max_usd": (float, 0.0),
    "max_proposals": (int, 1),
    "max_cost_usd": (float, 0.0),
    "pivot_after": (int, 1),
    "max_pivots": (int, 0),
    "prompt_chars": (int, 2000),
    "recent": (int, 1),
    "max_patch_kib": (int, 1),
}
_STRINGS = ("preset", "command", "model", "output", "template")
_LISTS = ("ignore", "files", "home")
OPTIONS = (*_STRINGS, *_NUMBERS, *_LISTS, "prepare_ahead", "env")


def agent_settings(options: dict, config: Config, where: str) -> AgentSettings:
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ConfigError(
            f"{where}: the agent proposer has no option '{unknown[0]}' "
            f"(known: {', '.join(OPTIONS)})"
        )
    # Any: the strings first, then numbers, lists, paths and a table, each a keyword of
    # AgentSettings.
    values: dict[str, Any] = _strings(options, where)
    preset = values.get("preset")
    if preset is None:
        raise ConfigError(f"{where}: an agent proposer needs 'preset' ({', '.join(PRESETS)})")
    if preset not in PRESETS:
        raise ConfigError(f"{where}: unknown preset '{preset}' (known: {', '.join(PRESETS)})")
    if preset == "command" and "command" not in values:
        raise ConfigError(f'{where}: preset = "command" needs `command` (run with bash)')
    output = values.get("output", PRESETS[preset]["output"])
    if output not in OUTPUTS:
        raise ConfigError(f"{where}: 'output' must be one of {', '.join(OUTPUTS)}")
    values["output"] = output
    values |= _numbers(options, where)
    for key in _LISTS:
        if key in options:
            value = options[key]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where}: '{key}' must be a list of strings")
            values[key] = list(value)
    if preset == "aider" and "command" not in values and not values.get("files"):
        raise ConfigError(
            f"{where}: the aider preset edits only the files it is given (it runs with --no-git):"
            ' name them, files = ["src/engine.go"]'
        )
    values["ignore"] = [*PRESETS[preset]["ignore"], *values.get("ignore", [])]
    values["home"] = _home(values.get("home", PRESETS[preset]["home"]), where)
    if "prepare_ahead" in options:
        if not isinstance(options["prepare_ahead"], bool):
            raise ConfigError(f"{where}: 'prepare_ahead' must be true or false")
        values["prepare_ahead"] = options["prepare_ahead"]
    if "env" in options:
        env = options["env"]
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise ConfigError(f"{where}: 'env' must be a table of strings")
        check_env_names(env, f"{where}: 'env'")
        values["env"] = dict(env)
    if "template" in values:
        template = config.resolve(values["template"])
        if not template.is_file():
            raise ConfigError(f"{where}: template {template} not found")
        values["template"] = template
    return AgentSettings(**values)


def _strings(options: dict, where: str) -> dict[str, str]:
    found = {}
    for key in _STRINGS:
        if key in options:
            if not isinstance(options[key], str) or not options[key].strip():
                raise ConfigError(f"{where}: '{key}' must be a non-empty string")
            found[key] = options[key]
    return found


def _numbers(options: dict, where: str) -> dict[str, int | float]:
    found: dict[str, int | float] = {}
    for key, (kind, least) in _NUMBERS.items():
        if key not in options:
            continue
        value = options[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: '{key}' must be a number")
        if kind is int and not float(value).is_integer():
            raise ConfigError(f"{where}: '{key}' must be a whole number")
        if value < least:
            raise ConfigError(f"{where}: '{key}' must be at least {least}")
        found[key] = kind(value)
    return found


def _home(paths: list[str], where: str) -> list[str]:
    """What of your home a confined agent's own home is copied from: paths inside it."""
    for rel in paths:
        if rel.startswith(("/", "~")) or ".." in Path(rel).parts:
            raise ConfigError(f"{where}: 'home' names paths inside your home directory ({rel!r})")
    return list(paths)
