"""Opaque pagination cursors: keyset positions, base64-wrapped so clients treat them
as tokens. A cursor stays valid while rows are inserted concurrently.

:func:`decode` is the one parser: a cursor of another list, of the wrong length, or
whose parts do not parse as the list's keys is BAD_INPUT naming ``after``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

from server.errors import BadInputError

_MAX_SEQ = 2**63 - 1  # a bigint, as the ``seq`` columns are


def encode(kind: str, *parts: object) -> str:
    raw = "|".join([kind, *(str(p) for p in parts)])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def seq(part: str) -> int:
    """A ``seq`` position: a positive bigint."""
    if not (part.isascii() and part.isdigit() and len(part) <= 19 and 0 < int(part) <= _MAX_SEQ):
        raise ValueError(part)
    return int(part)


def decode(kind: str, cursor: str, *keys: Callable[[str], Any]) -> tuple[Any, ...]:
    """The position a cursor of list ``kind`` holds, each part parsed by its key's
    parser (``int``, :func:`seq`, ``uuid.UUID``, ``datetime.fromisoformat``, ...)."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        raw = base64.urlsafe_b64decode(padded.encode()).decode()
        parts = raw.split("|")
        if parts[0] != kind or len(parts) != len(keys) + 1:
            raise ValueError(kind)
        return tuple(parse(part) for parse, part in zip(keys, parts[1:], strict=True))
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise BadInputError("after is not a cursor this list gave out", field="after") from exc
