"""Text PostgreSQL cannot store, found anywhere in a JSON-like value.

PostgreSQL's ``text`` and ``jsonb`` hold neither NUL (``\\x00``) nor a lone
surrogate (which JSON can spell, ``"\\ud800"``, but UTF-8 cannot). Input holding
either is refused as BAD_INPUT naming where it is, before anything is written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from server.errors import BadInputError

# a namespace's, agent's or policy's name
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,62}")
# A NUL, or half of a surrogate pair: what no ``text`` or ``jsonb`` value can hold.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(text: str) -> bool:
    """Whether PostgreSQL can store ``text``. ASCII text needs only the NUL test, and
    any other text encodes to UTF-8 unless it holds a surrogate, both at C speed,
    rather than a search of the character class in Python."""
    if "\x00" in text:
        return False
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def first_unstorable(value: Any, path: str = "") -> str | None:
    """Where in ``value`` (objects, lists, strings) a string or key is not
    :func:`storable`, as ``events[2].text``; ``None`` if nowhere. Such a key is named
    with the offending characters escaped (``k\\u0000``), so the answer is itself
    storable. Iterative: however deep the value nests, this does not recurse."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        here, item = stack.pop()
        if isinstance(item, str):
            if not storable(item):
                return here
        elif isinstance(item, Mapping):
            for key, child in reversed(list(item.items())):
                name = str(key)
                if not storable(name):
                    shown = _UNSTORABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", name)
                    return f"{here}.{shown}" if here else shown
                stack.append((f"{here}.{name}" if here else name, child))
        elif isinstance(item, list | tuple):
            stack.extend((f"{here}[{i}]", child) for i, child in reversed(list(enumerate(item))))
    return None


def check_text(
    value: str, *, field: str, maximum: int, blank: bool = True, name: str | None = None
) -> str:
    """``value`` if it is 1 to ``maximum`` characters PostgreSQL can store (and, unless
    ``blank``, not only whitespace); else BAD_INPUT naming ``field`` (said as ``name``)."""
    said = name or field
    if not 0 < len(value) <= maximum or not (blank or value.strip()):
        rule = "" if blank else ", not blank"
        raise BadInputError(f"{said} must be 1 to {maximum} characters{rule}", field=field)
    if not storable(value):
        raise BadInputError(f"{said} holds a NUL or half of a surrogate pair", field=field)
    return value


def check_name(value: str, what: str) -> str:
    """A namespace's, an agent's or a policy's name; else BAD_INPUT naming ``what``."""
    if not _NAME.fullmatch(value):
        raise BadInputError(
            f"{what} must start with a letter and hold only letters, digits, '_' or '-' "
            f"(at most 63 characters), got {value!r}",
            field=what,
        )
    return value
