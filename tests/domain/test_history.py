"""The pure session history rules (R60, R62, R64): what is kept, header lines,
token-aware parts, and the reference filter of who sees which part."""

from __future__ import annotations

import itertools
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.domain import history as rules
from server.domain.history import (
    HistoryReader,
    PartFacts,
    ToolCall,
    header,
    kept_role,
    visible_part,
)
from server.domain.history_parts import (
    CUT_SLACK,
    MODEL_MAX_TOKENS,
    PART_OVERLAP,
    PART_TOKENS,
    fits_one_part,
    split_text,
    token_windows,
)
from server.embedding import Embedder

KEPT_TYPES = [rules.USER_MESSAGE, rules.AGENT_MESSAGE, rules.TOOL_RESULT, rules.TOOL_ERROR]


def test_r62_parts_fit_the_models_input() -> None:
    """R62: a part plus [CLS] and [SEP] fits the model; the overlap is small."""
    assert PART_TOKENS + 2 <= MODEL_MAX_TOKENS
    assert 0 < PART_OVERLAP <= PART_TOKENS // 4


@pytest.mark.parametrize(
    ("role", "tool", "line"),
    [
        ("user", None, "turn 12, user"),
        ("agent", None, "turn 12, agent"),
        ("tool", "lookup_account", "turn 12, tool lookup_account"),
    ],
)
def test_r62_header_line_says_who_the_event_is_from(
    role: rules.Role, tool: str | None, line: str
) -> None:
    """R62: ``turn 12, user`` / ``agent`` / ``tool <name>``."""
    assert header(12, role, tool) == line


@pytest.mark.parametrize("event_type", KEPT_TYPES)
def test_r60_history_off_keeps_nothing(event_type: str) -> None:
    """R60: without harness.history nothing is kept."""
    assert kept_role(event_type, "lookup", index=None) is None


def test_r60_messages_keeps_messages_and_replies_only() -> None:
    """R60: ``messages`` keeps the incoming message and the agent's replies."""
    assert kept_role(rules.USER_MESSAGE, None, index="messages") == "user"
    assert kept_role(rules.AGENT_MESSAGE, None, index="messages") == "agent"
    assert kept_role(rules.TOOL_RESULT, "lookup", index="messages") is None
    assert kept_role(rules.TOOL_ERROR, "lookup", index="messages") is None


def test_r60_messages_and_tools_also_keeps_results_and_errors() -> None:
    """R60: ``messages_and_tools`` adds tool results and errors, the writing native tools too."""
    for tool in ("lookup", "add_memory", "delete_memory"):
        assert kept_role(rules.TOOL_RESULT, tool, index="messages_and_tools") == "tool"
        assert kept_role(rules.TOOL_ERROR, tool, index="messages_and_tools") == "tool"


@pytest.mark.parametrize("index", ["messages", "messages_and_tools"])
@pytest.mark.parametrize("tool", sorted(rules.RETRIEVAL_TOOLS))
def test_r60_retrievals_and_skill_loads_are_never_kept(
    index: rules.HistoryIndex, tool: str
) -> None:
    """R60: the agent's own retrievals and skill loads are never kept, whatever the index."""
    assert kept_role(rules.TOOL_RESULT, tool, index=index) is None
    assert kept_role(rules.TOOL_ERROR, tool, index=index) is None
    for other in (rules.SKILL_LOAD, rules.RETRIEVAL, "memory.pinned", "usage"):
        assert kept_role(other, None, index=index) is None


def test_r60_agent_reply_is_kept_with_its_tool_calls() -> None:
    """R60: a reply is kept with the tools it called, arguments included."""
    text = rules.agent_message_text(
        "Looking it up.", [ToolCall("c1", "lookup_account", {"id": "A-1", "full": True})]
    )
    assert text == 'Looking it up.\ncalls lookup_account({"full": true, "id": "A-1"})'
    assert rules.agent_message_text(None, [ToolCall("c2", "ping", None)]) == "calls ping({})"


def test_native_result_text_names_records_or_the_error() -> None:
    out = {"memories": [{"id": "r1", "status": "ACTIVE", "kind": "fact", "summary": "Lisbon"}]}
    assert rules.native_result_text(out, None) == "active fact r1: Lisbon"
    assert rules.native_result_text(out, "refused") == "refused"


@given(
    st.lists(st.booleans(), min_size=0, max_size=1500),
    st.integers(min_value=4, max_value=300),
    st.data(),
)
def test_r62_token_windows_cover_everything_in_bounded_overlapping_parts(
    starts: list[bool], size: int, data: st.DataObject
) -> None:
    """R62: windows cover every token in order, each at most ``size`` long, each
    after the first starting inside its predecessor (the overlap), never stalling."""
    overlap = data.draw(st.integers(min_value=0, max_value=size - 1))
    slack = data.draw(st.integers(min_value=0, max_value=40))
    windows = token_windows(starts, size=size, overlap=overlap, slack=slack)
    if not starts:
        assert windows == []
        return
    assert windows[0][0] == 0 and windows[-1][1] == len(starts)
    for (s, e), (s2, e2) in itertools.pairwise(windows):
        assert s < s2 <= e < e2  # progress, contiguous or overlapping coverage
        assert e - s2 <= overlap  # never more overlap than asked
    for s, e in windows:
        assert 0 < e - s <= size


def test_r62_cuts_land_where_words_begin() -> None:
    """R62: a cut moves back to a word start when one is near, so no word is split."""
    # words of 3 tokens: a word starts every third token
    starts = [i % 3 == 0 for i in range(1000)]
    windows = token_windows(starts, size=200, overlap=32)
    assert len(windows) > 1
    for s, e in windows:
        assert starts[s]
        assert e == len(starts) or starts[e]
    for s, e in windows[:-1]:  # the last part holds what remains
        assert e - s > 200 - CUT_SLACK - 3


def test_r62_short_text_is_one_part_and_long_text_overlaps() -> None:
    words = [f"w{i}" for i in range(600)]
    text = " ".join(words)
    offsets, at = [], 0
    for w in words:
        offsets.append((at, at + len(w)))
        at += len(w) + 1
    assert split_text("  hello world ", [(2, 7), (8, 13)]) == ["hello world"]
    parts = split_text(text, offsets)
    assert len(parts) == 4  # 600 words, 200 a part, 32 shared: 0-200, 168-368, 336-536, 504-600
    assert parts[0].split()[0] == "w0" and parts[-1].split()[-1] == "w599"
    for a, b in itertools.pairwise(parts):
        shared = set(a.split()) & set(b.split())
        assert len(shared) == PART_OVERLAP


A, B = uuid.uuid4(), uuid.uuid4()
S1, S2 = uuid.uuid4(), uuid.uuid4()


@pytest.mark.parametrize(
    ("reader", "part", "seen"),
    [
        (HistoryReader(A, S1, 5, False), PartFacts(A, S1, 4, False), True),
        (HistoryReader(A, S1, 5, False), PartFacts(A, S1, 5, False), False),  # not its own turn
        (HistoryReader(A, S1, 5, False), PartFacts(A, S1, 6, False), False),  # nor a later one
        (HistoryReader(A, S1, 5, False), PartFacts(A, S2, 1, False), False),  # other session
        (HistoryReader(A, S1, 5, False), PartFacts(B, S1, 1, False), False),  # other agent
        (HistoryReader(A, S1, 5, False), PartFacts(A, S1, 1, True), False),  # preview, live
        (HistoryReader(A, S1, 5, True), PartFacts(A, S1, 1, True), True),  # preview, preview
        (HistoryReader(A, S1, 5, True), PartFacts(A, S1, 1, False), True),  # live, preview
        (HistoryReader(A, None, 5, False), PartFacts(A, S1, 1, False), False),  # no sessions
    ],
)
def test_r64_reference_filter(reader: HistoryReader, part: PartFacts, seen: bool) -> None:
    """R64: earlier turns of the same session; preview parts for preview readers only."""
    assert visible_part(reader, part) is seen


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.text(
        alphabet=st.sampled_from(list("abcXYZ019 .,!?'-\n\té€日本語😀🧠"))
        | st.characters(blacklist_categories=("Cs",)),
        max_size=260,
    )
)
def test_a_text_that_fits_one_part_by_its_bytes_is_one_part_by_its_tokens(
    embedder: Embedder, text: str
) -> None:
    """R62: keeping skips the tokenizer for a text with fewer UTF-8 bytes than a part has
    tokens; the model's own tokenizer agrees that it is one part, as cut would make it."""
    if not fits_one_part(text):
        return
    (offsets,) = embedder.token_offsets([text])
    assert len(offsets) < PART_TOKENS
    if text.strip():
        assert split_text(text, offsets) == [text.strip()]
