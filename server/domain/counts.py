"""How many an input may hold or ask for (R24): a list of 1 to N items, a limit of 1
to N results. A call outside them fails with a BAD_INPUT naming the field, and changes
nothing."""

from __future__ import annotations

from collections.abc import Sized

from server.errors import BadInputError


def check_count(items: Sized, *, field: str, maximum: int) -> None:
    """``items`` (the input ``field``) hold 1 to ``maximum`` of them."""
    if not 1 <= len(items) <= maximum:
        raise BadInputError(f"{field} must hold 1 to {maximum} {field}", field=field)


def check_limit(limit: int, *, maximum: int, field: str = "limit") -> int:
    """``limit`` when it is from 1 to ``maximum``."""
    if not 1 <= limit <= maximum:
        raise BadInputError(f"{field} must be from 1 to {maximum}", field=field)
    return limit


__all__ = ["check_count", "check_limit"]
