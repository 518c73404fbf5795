"""Reading one value of an agent version's JSON config: each reader takes the value and
the dotted path of its key, and rejects a value of the wrong shape with an
``InvalidConfigError`` whose ``field`` is that path. A JSON ``null`` counts as an
absent key."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from typing import Any, NoReturn, TypeVar

from server.errors import InvalidConfigError

_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
NAME_RULE = "a name of a lowercase letter then up to 39 lowercase letters, digits or _"

_T = TypeVar("_T", bound=str)


def is_name(value: object) -> bool:
    """Whether ``value`` is a name as :data:`NAME_RULE` says (a kind, a label)."""
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


def json_object(value: Any, path: str, keys: frozenset[str] | None) -> Mapping[Any, Any]:
    """``value`` as an object (``{}`` when absent); with ``keys``, no other key is allowed."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        fail(path, "an object", value)
    unknown = [key for key in value if key not in keys] if keys is not None else []
    if unknown:
        key, known = unknown[0], sorted(keys or ())
        close = difflib.get_close_matches(str(key), known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        reject(
            f"{path}.{key}", f"{path}.{key} is not a setting{hint}; {path} takes {', '.join(known)}"
        )
    return value


def json_names(
    value: Any,
    path: str,
    choices: tuple[str, ...] | None,
    *,
    default: tuple[str, ...],
    empty: bool = False,
) -> tuple[str, ...]:
    """A list of unique strings, each one of ``choices`` or, without choices, a name."""
    if value is None:
        return default
    rule = NAME_RULE if choices is None else "one of " + ", ".join(map(show, choices))
    if not isinstance(value, list | tuple) or not (value or empty):
        fail(path, f"a {'' if empty else 'non-empty '}list of strings, each {rule}", value)
    seen: list[str] = []
    for i, item in enumerate(value):
        valid = is_name(item) if choices is None else isinstance(item, str) and item in choices
        if not valid:
            reject(path, f"{path}[{i}] must be {rule}, got {show(item)}")
        if item in seen:
            reject(path, f"{path} lists {show(item)} more than once")
        seen.append(item)
    return tuple(seen)


def json_int(value: Any, path: str, low: int, high: int | None, default: int | None = None) -> int:
    if value is None and default is not None:
        return default
    rule = f"an integer of at least {low}" if high is None else f"an integer from {low} to {high}"
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        fail(path, rule, value)
    if high is not None and value > high:
        fail(path, rule, value)
    return value


def json_bool(value: Any, path: str, *, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        fail(path, "true or false", value)
    return value


def json_text(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value.strip():
        fail(path, "a non-empty string", value)
    return value


def json_choice(value: Any, path: str, choices: tuple[_T, ...], default: _T | None = None) -> _T:
    if value is None and default is not None:
        return default
    for choice in choices:
        if value == choice:
            return choice
    fail(path, "one of " + ", ".join(map(show, choices)), value)


def fail(path: str, rule: str, value: Any) -> NoReturn:
    """Reject ``value`` at ``path`` for breaking ``rule``; ``None`` means it is missing."""
    where = path or "the configuration"
    if value is None:
        reject(path, f"{where} is required and must be {rule}")
    reject(path, f"{where} must be {rule}, got {show(value)}")


def reject(path: str, message: str) -> NoReturn:
    raise InvalidConfigError(message, field=path)


def show(value: Any) -> str:
    """``value`` as JSON, so strings show their quotes; cut short when long."""
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= 60 else text[:57] + "..."
