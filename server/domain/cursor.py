"""Opaque pagination cursors: keyset positions, base64-wrapped so clients treat them
as tokens. A cursor stays valid while rows are inserted concurrently."""

from __future__ import annotations

import base64
import binascii

from server.errors import BadInputError


def encode(kind: str, *parts: object) -> str:
    raw = "|".join([kind, *(str(p) for p in parts)])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode(kind: str, cursor: str, *, arity: int) -> list[str]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        raw = base64.urlsafe_b64decode(padded.encode()).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise BadInputError("after is not a cursor this list gave out", field="after") from exc
    parts = raw.split("|")
    if parts[0] != kind or len(parts) != arity + 1:
        raise BadInputError("after is not a cursor this list gave out", field="after")
    return parts[1:]
