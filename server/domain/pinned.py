"""Pinned records (R30, R31).

Every turn's instructions list the pinned records the turn can read, one line
each: the summary and the record's id. The lines must fit ``pinned.max_tokens``,
counting about four characters per token; a pin that would take the list over
is refused and the agent is told to consolidate.

The listing holds to the budget whatever is stored: pins made under a larger
budget of an earlier agent version, or seen by a reader the pin's check could
not foresee (another session's, for an agent-scope pin), may add up to more.
Then the newest pins that fit are listed (:func:`newest_that_fit`), and the
instructions say how many older ones are not (:func:`omitted_note`).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Sequence

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


def newest_that_fit(lines: Sequence[str], max_tokens: int) -> int:
    """How many of the last (newest) of ``lines`` fit ``max_tokens`` together."""
    chars = 0
    for count, line in enumerate(reversed(lines)):
        chars += len(line) + 1
        if math.ceil(chars / CHARS_PER_TOKEN) > max_tokens:
            return count
    return len(lines)


def omitted_note(*, omitted: int, max_tokens: int) -> str:
    return (
        f"{omitted} older pinned record(s) are not listed: the pinned records add up to more "
        f"than the budget of {max_tokens} tokens; consolidate: replace several pinned records "
        "with one (add_memory with pinned and replaces)"
    )
