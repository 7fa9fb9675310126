"""TOML tables -> typed dataclasses: every key checked against the dataclass's type hints, every
mistake a ConfigError naming the file and the key (`bench.timeout_s`, `sentinel[1].name`)."""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
import tomllib
import types
import typing
from pathlib import Path
from typing import Any

from .errors import ConfigError

__all__ = ["build", "read_toml"]


def read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None


def build(cls: type, table: object, path: Path, where: str, strict: bool = True):
    """Build dataclass `cls` from a TOML table, naming the file and key on every mistake."""
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [{where}] must be a table, got {type(table).__name__}")
    hints, known = _fields(cls)
    unknown = sorted(set(table) - set(known))
    if not strict:
        table = {k: v for k, v in table.items() if k in known}
    elif unknown:
        options = ", ".join(sorted(k for k in known if k != "path"))
        key = f"{where}.{unknown[0]}" if where else unknown[0]
        raise ConfigError(f"{path}: unknown key '{key}' (known here: {options})")
    kwargs = {}
    for name, value in table.items():
        key = f"{where}.{name}" if where else name
        kwargs[name] = value if name == "path" else _coerce(hints[name], value, path, key, strict)
    missing = [
        f.name
        for f in known.values()
        if f.name not in kwargs
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        key = f"{where}.{missing[0]}" if where else missing[0]
        raise ConfigError(f"{path}: missing required key '{key}'")
    return cls(**kwargs)


@functools.cache
def _fields(cls: type) -> tuple[dict[str, Any], dict[str, dataclasses.Field]]:
    """A dataclass's resolved type hints and fields: resolving string annotations costs a
    compile per hint, and every config load builds the same few classes."""
    return typing.get_type_hints(cls), {f.name: f for f in dataclasses.fields(cls)}


def _coerce(hint, value, path: Path, key: str, strict: bool = True):
    origin = typing.get_origin(hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return build(hint, value, path, key, strict)
    if origin is list:
        (item,) = typing.get_args(hint)
        if not isinstance(value, list):
            raise ConfigError(f"{path}: '{key}' must be a list, got {_toml_type(value)}")
        return [_coerce(item, v, path, f"{key}[{i}]", strict) for i, v in enumerate(value)]
    if origin is dict and typing.get_args(hint)[1] is Any:
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: '{key}' must be a table, got {_toml_type(value)}")
        _no_nul(value, path, key)
        return dict(value)
    if origin is dict:
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise ConfigError(f"{path}: '{key}' must be a table of strings")
        _no_nul(value, path, key)
        return dict(value)
    if origin in (typing.Union, types.UnionType):
        return _coerce(
            next(a for a in typing.get_args(hint) if a is not type(None)), value, path, key
        )
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _choice(hint, value, path, key)
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint is float and isinstance(value, float) and not math.isfinite(value):
        # TOML reads `nan` and `inf`; no budget, timeout or threshold means anything with them.
        raise ConfigError(f"{path}: '{key}' must be a finite number, got {value}")
    if hint is str and isinstance(value, str):
        _no_nul(value, path, key)
    if hint in (str, int, float, bool) and (
        isinstance(value, hint) and not (hint is int and isinstance(value, bool))
    ):
        return value
    raise ConfigError(f"{path}: '{key}' must be {hint.__name__}, got {_toml_type(value)}")


def _choice(hint: type[enum.Enum], value: object, path: Path, key: str) -> enum.Enum:
    """One of an enum's values (`checks.when`, `metric.direction`), as that enum's member."""
    choices = [member.value for member in hint]
    if isinstance(value, str) and value in choices:
        return hint(value)
    got = repr(value) if isinstance(value, str) else _toml_type(value)
    raise ConfigError(f"{path}: '{key}' must be one of {', '.join(choices)}, got {got}")


def _no_nul(value: Any, path: Path, key: str) -> None:
    """A NUL byte in any string of `value` (a table's keys included) is a ConfigError naming
    where: no command, path, ref or variable can hold one, and the OS would say only
    "embedded null byte", far from the config."""
    if isinstance(value, str):
        if "\0" in value:
            raise ConfigError(f"{path}: '{key}' holds a NUL byte (\\0), which no value may")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _no_nul(item, path, f"{key}[{i}]")
    elif isinstance(value, dict):
        for name, item in value.items():
            _no_nul(name, path, f"{key} (a key)")
            _no_nul(item, path, f"{key}.{name}")


def _toml_type(value) -> str:
    return {bool: "boolean", int: "integer", float: "float", str: "string", list: "array"}.get(
        type(value), "table"
    )
