"""The pure masking of memory-call arguments (server/domain/redaction.py; R70, R71)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from server.domain.history import ToolCall, agent_message_text
from server.domain.redaction import (
    MASK,
    argument_spans,
    calls_of_payload,
    mask,
    mask_window,
    redact_payload,
)

CALLS = [
    ToolCall("c1", "weather", {"city": "Porto"}),
    ToolCall("c2", "add_memory", {"summary": "lives in Lisbon"}),
    ToolCall("c3", "search_memory", {"query": "Lisbon"}),
]


def test_only_the_memory_calls_arguments_are_spans() -> None:
    text = agent_message_text("checking", CALLS)
    spans = argument_spans(text, CALLS)
    assert [text[a:b] for a, b in spans] == [
        '{"summary": "lives in Lisbon"}',
        '{"query": "Lisbon"}',
    ]
    assert mask(text, spans) == (
        'checking\ncalls weather({"city": "Porto"})\n'
        "calls add_memory([redacted])\ncalls search_memory([redacted])"
    )


def test_a_reply_text_that_looks_like_a_call_is_not_taken_for_one() -> None:
    """The lines are found after the reply's own text, in call order."""
    calls = [ToolCall("c1", "add_memory", {"summary": "x"})]
    text = agent_message_text('I will run calls add_memory({"summary": "x"}) now', calls)
    spans = argument_spans(text, calls)
    assert len(spans) == 1
    assert "Lisbon" not in mask(text, spans)


def test_a_window_masks_only_what_it_shows_of_a_span() -> None:
    text = "0123456789"
    assert mask(text[2:6], [(4, 8)], offset=2) == "23" + MASK
    assert mask(text[5:9], [(4, 8)], offset=5) == MASK + "8"
    assert mask(text[0:3], [(4, 8)], offset=0) == "012"


def test_a_window_found_twice_hides_what_either_occurrence_would() -> None:
    whole = "ab SECRET ab"
    spans = [(3, 9)]
    assert mask_window(whole, "ab", spans) == "ab"
    assert mask_window(whole, "ab SEC", spans) == "ab " + MASK
    assert mask_window(whole, "not in it", spans) == MASK
    assert mask_window(whole, "not in it", []) == "not in it"


def test_a_payload_keeps_everything_but_memory_arguments() -> None:
    payload: dict[str, Any] = {"text": "hi", "toolCalls": [c.to_json() for c in CALLS]}
    out = redact_payload(payload, "no grant")
    assert out["text"] == "hi"
    assert [c["arguments"] for c in out["toolCalls"]] == [
        {"city": "Porto"},
        {"redacted": "no grant"},
        {"redacted": "no grant"},
    ]
    assert payload["toolCalls"][1]["arguments"] == {"summary": "lives in Lisbon"}  # not changed
    assert calls_of_payload(payload) == CALLS


@given(
    secret=st.text(alphabet="xyz ", min_size=1, max_size=30),
    start=st.integers(0, 120),
    size=st.integers(1, 120),
)
def test_no_window_of_the_text_shows_a_memory_argument(secret: str, start: int, size: int) -> None:
    """Property: whatever window of a kept reply a part is, its masked text holds no
    character of a memory call's arguments (only they contain ``Q``)."""
    marker = "Q" + secret.replace(" ", "Q") + "Q"
    calls = [
        ToolCall("c1", "weather", {"city": "Porto"}),
        ToolCall("c2", "add_memory", {"s": marker}),
    ]
    whole = agent_message_text("hello there", calls)
    window = whole[start : start + size]
    if not window:
        return
    masked = mask_window(whole, window, argument_spans(whole, calls))
    assert "Q" not in masked
