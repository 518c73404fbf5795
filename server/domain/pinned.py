"""Pinned records (R30, R31).

Every turn's instructions list the pinned records the turn can read, one line
each: the summary and the record's id. The lines must fit ``pinned.max_tokens``,
counting about four characters per token; a pin that would take the list over
is refused and the agent is told to consolidate.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable

from server.domain.marking import one_line, unmarked

CHARS_PER_TOKEN = 4


def pinned_line(summary: str, record_id: uuid.UUID) -> str:
    """One line, whatever the summary holds: it cannot forge a second line (R30)."""
    return f"- {one_line(unmarked(summary))} (memory {record_id})"


def estimate_tokens(lines: Iterable[str]) -> int:
    """About four characters a token, counting the newline that joins the lines."""
    return math.ceil(sum(len(line) + 1 for line in lines) / CHARS_PER_TOKEN)


def over_budget_message(*, needed: int, max_tokens: int) -> str:
    return (
        f"pinning this record would take the pinned list to about {needed} tokens, over its "
        f"budget of {max_tokens}; consolidate: replace several pinned records with one "
        "(add_memory with pinned and replaces) before pinning more"
    )
