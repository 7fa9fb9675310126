"""Checks that a record's fields hold what their annotations say, made once per annotation.

A line of valid JSON with `"decision": 5` is a damaged line, not a traceback in every command
that reads it; reading a long journal checks millions of values, so each test is built once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable
from typing import Any


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


_CHECKS: dict[type, tuple[tuple[str, Callable[[Any], bool], Any], ...]] = {}


def field_checks(cls: type) -> tuple[tuple[str, Callable[[Any], bool], Any], ...]:
    """Each field's name, test and annotation, made once per class (a plain dict: mypy holds
    a class unhashable for functools.cache)."""
    found = _CHECKS.get(cls)
    if found is None:
        hints = _hints(cls)
        found = _CHECKS[cls] = tuple(
            (f.name, checker(hints[f.name]), hints[f.name]) for f in dataclasses.fields(cls)
        )
    return found


def problem(value: Any, hint: Any) -> str:
    shown = repr(value)
    return f"must be {_describe(hint)}, got {shown[:60]}"


@functools.cache
def checker(hint: Any) -> Callable[[Any], bool]:
    """A test of `hint` made once per annotation: reading a long journal checks millions of
    values, and asking `typing` about each of them cost most of a resume."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return _anything
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        others = tuple(checker(a) for a in args if a is not type(None))
        if len(others) == 1 and len(args) == 2:  # `X | None`, the common case
            (other,) = others
            return lambda v: v is None or other(v)
        return lambda v: (v is None and type(None) in args) or any(c(v) for c in others)
    if hint is type(None) or hint is None:
        return _is_none
    if hint is float:
        return _is_finite_number
    if hint is int:
        return _is_integer
    if origin is list:
        (item,) = typing.get_args(hint)
        item_ok = checker(float | None if item is float else item)  # an unkeepable number
        if item is float:
            return lambda v: isinstance(v, list) and _numbers_ok(v, item_ok)
        return lambda v: isinstance(v, list) and all(map(item_ok, v))
    if origin is dict:
        _, item = typing.get_args(hint)
        value_ok = checker(float | None if item is float else item)
        values_ok = (
            (lambda v: _numbers_ok(list(v), value_ok))
            if item is float
            else (lambda v: all(map(value_ok, v)))
        )
        return lambda v: (
            isinstance(v, dict) and all(type(k) is str for k in v) and values_ok(v.values())
        )
    if isinstance(hint, type):
        return lambda v: isinstance(v, hint)
    return _anything


def _anything(value: Any) -> bool:
    return True


def _is_none(value: Any) -> bool:
    return value is None


def _is_finite_number(value: Any) -> bool:
    kind = type(value)
    if kind is float:
        return value - value == 0  # false for inf and nan
    if kind is int:
        return True
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


_PLAIN_NUMBERS = frozenset({float, int, type(None)})


def _numbers_ok(values: list, item_ok: Callable[[Any], bool]) -> bool:
    """`all(map(item_ok, values))` for a list of finite numbers or None, with no Python call
    per sample when they are plain floats: a run's samples are most of a journal's values."""
    # A sum of finite numbers is finite unless it overflows: then each is looked at.
    kinds = set(map(type, values))
    if kinds <= _PLAIN_NUMBERS:
        numbers = values if type(None) not in kinds else [v for v in values if v is not None]
        with contextlib.suppress(OverflowError):  # an int too large for a float
            if math.isfinite(sum(numbers)):
                return True
    return all(map(item_ok, values))


def optional_number(value: Any) -> bool:
    return value is None or _is_finite_number(value)


OPTIONAL_TEXT = str | None
OPTIONAL_NUMBER = float | None
# A JSON object whose inside is checked elsewhere (or not at all), and lists and maps of them:
# hints for `checker`, a type test each (the keys and values are not walked).
OBJECT: Any = dict
OPTIONAL_OBJECT: Any = dict | None
OBJECTS: Any = list[dict[str, Any]] | None
OBJECT_MAP: Any = dict[str, dict[str, Any]]


def _is_integer(value: Any) -> bool:
    return type(value) is int or (isinstance(value, int) and not isinstance(value, bool))


def _describe(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in typing.get_args(hint))
    if hint is type(None):
        return "null"
    if origin is list or hint is list:
        return "an array"
    if origin is dict or hint is dict:
        return "an object"
    return {str: "a string", int: "an integer", float: "a finite number", bool: "a boolean"}.get(
        hint, getattr(hint, "__name__", str(hint))
    )
