"""Text PostgreSQL cannot store, found anywhere in a JSON-like value.

PostgreSQL's ``text`` and ``jsonb`` hold neither NUL (``\\x00``) nor a lone
surrogate (which JSON can spell, ``"\\ud800"``, but UTF-8 cannot). Input holding
either is refused as BAD_INPUT naming where it is, before anything is written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# A NUL, or half of a surrogate pair: what no ``text`` or ``jsonb`` value can hold.
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def first_match(value: Any, pattern: re.Pattern[str], path: str = "") -> str | None:
    """Where in ``value`` (objects, lists, strings) a string or key matches ``pattern``,
    as ``events[2].text``; ``None`` if nowhere. A key that matches is named with the
    match escaped (``k\\u0000``), so the answer is itself plain text. Iterative: however
    deep the value nests, this does not recurse."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        here, item = stack.pop()
        if isinstance(item, str):
            if pattern.search(item):
                return here
        elif isinstance(item, Mapping):
            for key, child in reversed(list(item.items())):
                name = str(key)
                if pattern.search(name):
                    shown = pattern.sub(lambda m: f"\\u{ord(m.group()):04x}", name)
                    return f"{here}.{shown}" if here else shown
                stack.append((f"{here}.{name}" if here else name, child))
        elif isinstance(item, list | tuple):
            stack.extend((f"{here}[{i}]", child) for i, child in reversed(list(enumerate(item))))
    return None
