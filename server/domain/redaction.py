"""What a reader without the memory grant sees of the memory tools' calls (R70, R71).

The memory tools' own inputs and outputs are memory: a reader whose chain lacks
SELECT on ``<ns>.AgentMemory.indexes.*`` and ``<ns>.AgentMemory.document`` sees the
rest of a transcript, but not what an agent reply asked ``add_memory`` to save nor
what it searched its memory for. An agent reply names its calls three ways: the
``toolCalls`` of its transcript payload, the tool calls of its kept history event,
and the kept text itself, one line ``calls <tool>(<arguments>)`` per call
(:func:`server.domain.history.agent_message_text`); the searchable parts of that text
are windows of it. This module masks the arguments in all of them. Pure: no
database, no strawberry.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from server.domain.history import ToolCall, compact_json

MEMORY_TOOLS = frozenset(
    {"search_memory", "recall", "add_memory", "read_memory", "delete_memory", "memory_review"}
)
MASK = "[redacted]"

Span = tuple[int, int]


def is_memory_call(name: object) -> bool:
    return name in MEMORY_TOOLS


def carries_memory_calls(calls: Iterable[ToolCall]) -> bool:
    return any(is_memory_call(c.name) for c in calls)


def calls_of_payload(payload: Mapping[str, Any] | None) -> list[ToolCall]:
    """The tool calls an agent reply's transcript payload names."""
    raw = (payload or {}).get("toolCalls") or []
    return [ToolCall.from_json(c) for c in raw if isinstance(c, Mapping) and "id" in c]


def redact_payload(payload: Mapping[str, Any], note: str) -> dict[str, Any]:
    """``payload`` with the arguments of its memory tool calls replaced by ``note``."""
    out = dict(payload)
    calls = out.get("toolCalls")
    if isinstance(calls, list):
        out["toolCalls"] = [
            {**c, "arguments": {"redacted": note}}
            if isinstance(c, Mapping) and is_memory_call(c.get("name"))
            else c
            for c in calls
        ]
    return out


def argument_spans(text: str, calls: Sequence[ToolCall]) -> list[Span]:
    """Where, in an agent reply's kept ``text``, the arguments of its memory calls are:
    the inside of each ``calls <tool>(...)`` line of a memory tool."""
    spans: list[Span] = []
    at = 0
    for call in calls:
        line = f"calls {call.name}({compact_json(call.arguments or {})})"
        found = text.find(line, at)
        if found < 0:
            continue
        at = found + len(line)
        if is_memory_call(call.name):
            spans.append((found + len(f"calls {call.name}("), at - 1))
    return spans


def mask(text: str, spans: Sequence[Span], *, offset: int = 0) -> str:
    """``text``, the window of a longer text that starts at ``offset``, with every part
    of it inside one of ``spans`` (positions in the longer text) replaced by MASK."""
    end = offset + len(text)
    cuts = sorted(
        (max(a, offset) - offset, min(b, end) - offset) for a, b in spans if a < end and b > offset
    )
    out, last = [], 0
    for a, b in cuts:
        if a < last:
            a = last
        if a >= b:
            continue
        out.append(text[last:a])
        out.append(MASK)
        last = b
    out.append(text[last:])
    return "".join(out)


def mask_window(whole: str, window: str, spans: Sequence[Span]) -> str:
    """A part (``window``, a piece of ``whole``) with the memory arguments it shows
    masked. Where the piece occurs more than once, what any occurrence would hide is
    hidden; a piece not found in ``whole`` is hidden whole rather than guessed at."""
    if not spans:
        return window
    local: list[Span] = []
    start = whole.find(window)
    if start < 0:
        return MASK
    while start >= 0:
        local.extend((a - start, b - start) for a, b in spans)
        start = whole.find(window, start + 1)
    return mask(window, local)
