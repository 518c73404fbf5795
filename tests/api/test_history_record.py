"""recordEvents: the transcript vocabulary the runtime sends (R60), its checks and
idempotency. Bad input is a BAD_INPUT naming the field, and records nothing."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.history_scenario import RECORD, HistoryScenario, agent, history_config, result, user
from tests.api.scenario import HELPER
from tests.conftest import Api

TRANSCRIPT = "query($id: ID!) { turn(id: $id) { transcript { sequence type } } }"


async def _transcript(api: Api, turn: str) -> list[dict[str, Any]]:
    return list((await api.ok(TRANSCRIPT, id=turn))["turn"]["transcript"])


async def _open(api: Api, **config: Any) -> tuple[HistoryScenario, str, str]:
    s = HistoryScenario(api)
    await s.agent(history_config(**config))
    session = await s.session()
    return s, session, await s.turn(session)


async def test_r60_events_are_appended_in_order_with_their_types(api: Api) -> None:
    """R60: each input type becomes its transcript type, after what the turn already holds;
    a result takes its tool name from the call it answers."""
    s, _, turn = await _open(api)
    before = await _transcript(api, turn)
    recorded = await s.record(
        turn,
        user("Hello"),
        agent("Checking", ("c1", "lookup", {"id": 7})),
        result("c1", "found 7"),
        {"type": "SKILL_LOAD", "name": "billing", "text": "How to bill"},
        {"type": "RETRIEVAL", "name": "recall", "text": "memory: likes tea"},
        agent(None, ("c2", "lookup", {"id": 8})),
        result("c2", "not found", error=True),
    )
    assert [e["type"] for e in recorded] == [
        "USER_MESSAGE",
        "AGENT_MESSAGE",
        "TOOL_RESULT",
        "SKILL_LOAD",
        "RETRIEVAL",
        "AGENT_MESSAGE",
        "TOOL_ERROR",
    ]
    first = before[-1]["sequence"] + 1
    assert [e["sequence"] for e in recorded] == list(range(first, first + 7))
    assert recorded[2]["toolName"] == "lookup" and recorded[2]["toolCallId"] == "c1"
    assert recorded[6]["payload"] == {"error": "not found"}
    assert recorded[1]["payload"]["toolCalls"] == [
        {"id": "c1", "name": "lookup", "arguments": {"id": 7}}
    ]
    assert {e["execution"]["kind"] for e in recorded} == {"TURN"}
    more = await s.record(turn, user("And then?"))
    assert more[0]["sequence"] == first + 7


BAD_BATCHES: list[tuple[list[dict[str, Any]], str]] = [
    ([], "events"),
    ([user("x")] * 101, "events"),
    ([{"type": "USER_MESSAGE"}], "events[0].text"),
    ([user("   ")], "events[0].text"),
    ([user("nul \x00 here")], "events[0].text"),
    ([user("x") | {"toolCallId": "c1"}], "events[0].toolCallId"),
    ([user("good"), user("x") | {"name": "n"}], "events[1].name"),
    ([user("ok"), agent()], "events[1].text"),
    ([agent(None, ("c1", "a", {}), ("c1", "b", {}))], "events[0].toolCalls[1].id"),
    ([agent(None, ("c1", "bad name!", {}))], "events[0].toolCalls[0].name"),
    ([agent(None, ("", "lookup", {}))], "events[0].toolCalls[0].id"),
    ([agent(None, ("c1", "lookup", {"a": "\x00"}))], "events[0].toolCalls[0].arguments.a"),
    ([{"type": "TOOL_RESULT", "text": "x"}], "events[0].toolCallId"),
    ([result("nope", "x")], "events[0].toolCallId"),
    ([agent(None, ("c1", "lookup", {})), result("c1")], "events[1].text"),
    (
        [agent(None, ("c1", "lookup", {})), result("c1", "a"), result("c1", "b")],
        "events[2].toolCallId",
    ),
    ([{"type": "SKILL_LOAD", "text": "x"}], "events[0].name"),
    ([{"type": "RETRIEVAL", "text": "x", "toolCallId": "c"}], "events[0].toolCallId"),
]


@pytest.mark.parametrize(("events", "field"), BAD_BATCHES)
async def test_bad_events_are_bad_input_and_record_nothing(
    api: Api, events: list[dict[str, Any]], field: str
) -> None:
    """A bad event fails the whole batch with BAD_INPUT naming it; nothing is appended,
    not even the good events before it."""
    s, _, turn = await _open(api)
    before = await _transcript(api, turn)
    message, ext = await s.record_error(turn, *events)
    assert (ext["code"], ext["field"]) == ("BAD_INPUT", field), message
    assert await _transcript(api, turn) == before


async def test_tool_call_ids_are_unique_in_the_turn(api: Api) -> None:
    """A call id names one call of the turn, across calls of recordEvents; its result once."""
    s, _, turn = await _open(api)
    await s.record(turn, agent(None, ("c1", "lookup", {})), result("c1", "ok"))
    _, ext = await s.record_error(turn, agent(None, ("c1", "lookup", {})))
    assert (ext["code"], ext["field"]) == ("BAD_INPUT", "events[0].toolCalls[0].id")
    _, ext = await s.record_error(turn, result("c1", "again"))
    assert (ext["code"], ext["field"]) == ("BAD_INPUT", "events[0].toolCallId")


async def test_native_link_must_match_the_call(api: Api) -> None:
    """A TOOL_RESULT naming a native execution: it must be a tool call of this turn (an
    execution of another turn does not exist for it: NOT_FOUND, docs/security.md
    "Ownership"), to the tool the call named, with the outcome the execution had; its
    text comes from the call."""
    s, session, turn = await _open(api)
    added = await s.add(turn, "The customer likes tea")
    native = added["execution"]["id"]
    begun = await s.begin(session)
    other_turn_exec = begun["execution"]["id"]
    await s.record(turn, agent(None, ("c1", "add_memory", {}), ("c2", "lookup", {})))
    _, ext = await s.record_error(turn, result("c1", execution=other_turn_exec))
    assert (ext["code"], ext["field"]) == ("NOT_FOUND", "events[0].toolExecutionId")
    cases = [
        (result("c2", execution=native), "events[0].toolExecutionId"),  # lookup != add_memory
        (result("c1", execution=native, error=True), "events[0].toolExecutionId"),  # succeeded
        (result("c1", "text too", execution=native), "events[0].text"),
    ]
    for event, field in cases:
        _, ext = await s.record_error(turn, event)
        assert (ext["code"], ext["field"]) == ("BAD_INPUT", field)
    linked = await s.record(turn, result("c1", execution=native))
    assert linked[0]["execution"] == {"id": native, "kind": "TOOL", "name": "add_memory"}
    assert linked[0]["toolName"] == "add_memory"
    await s.record(turn, agent(None, ("c3", "add_memory", {})))
    _, ext = await s.record_error(turn, result("c3", execution=native))  # answers c1 already
    assert (ext["code"], ext["field"]) == ("BAD_INPUT", "events[0].toolExecutionId")


async def test_events_need_an_open_turn(api: Api) -> None:
    s, _, turn = await _open(api)
    await s.commit(turn)
    _, ext = await s.record_error(turn, user("late"))
    assert ext["code"] == "CONFLICT"


async def test_events_of_a_helper_name_its_execution(api: Api) -> None:
    """``executionId`` says whose conversation it is; another turn's execution is NOT_FOUND."""
    s, session, turn = await _open(api)
    helper = (await api.ok(HELPER, turn=turn, kind="HELPER"))["startExecution"]["execution"]["id"]
    recorded = await s.record(turn, user("sub-task"), execution=helper)
    assert recorded[0]["execution"]["id"] == helper
    other = await s.begin(session)
    _, ext = await api.error(
        RECORD, turn=turn, events=[user("x")], execution=other["execution"]["id"]
    )
    assert ext["code"] == "NOT_FOUND"


async def test_record_events_is_idempotent(api: Api) -> None:
    """The same key with the same input returns the first result; other input is CONFLICT."""
    s, _, turn = await _open(api)
    first = await s.record(turn, user("once"), key="k1")
    again = await s.record(turn, user("once"), key="k1")
    assert again == first
    assert [e["type"] for e in await _transcript(api, turn)].count("USER_MESSAGE") == 1
    _, ext = await api.error(RECORD, turn=turn, events=[user("other")], key="k1")
    assert ext["code"] == "CONFLICT"


async def test_a_repeated_idempotency_key_returns_the_first_events_and_records_nothing_more(
    api: Api,
) -> None:
    """The runtime may resend a batch (a timeout, a retry): with the same key and the same
    events it gets the events the first call recorded; with other events, a CONFLICT."""
    _, _, turn = await _open(api)
    events = [user("Where is my parcel?"), agent("Let me look", ("p1", "track", {"id": 3}))]
    first = (await api.ok(RECORD, turn=turn, events=events, key="batch-1"))["recordEvents"]
    before = await _transcript(api, turn)
    again = (await api.ok(RECORD, turn=turn, events=events, key="batch-1"))["recordEvents"]
    assert again == first
    assert await _transcript(api, turn) == before
    message, ext = await api.error(RECORD, turn=turn, events=[user("Other")], key="batch-1")
    assert ext["code"] == "CONFLICT" and "different input" in message
    assert await _transcript(api, turn) == before


async def test_text_that_is_not_unicode_is_bad_input_and_records_nothing(api: Api) -> None:
    """JSON can spell a lone surrogate ("\\ud800"), which no UTF-8 text (and so no
    PostgreSQL row) can hold: the variable is refused by name, nothing is recorded."""
    _, _, turn = await _open(api)
    before = await _transcript(api, turn)
    events = [user("fine"), {"type": "USER_MESSAGE", "text": "half a pair \ud83d here"}]
    message, ext = await api.error(RECORD, turn=turn, events=events)
    assert ext == {"code": "BAD_INPUT", "field": "events[1].text"}, (message, ext)
    assert "lone surrogate" in message
    calls = [agent("ok", ("c\udfff", "lookup", {"k\ud800": 1}))]
    _, ext = await api.error(RECORD, turn=turn, events=calls)
    assert ext["field"] == "events[0].toolCalls[0].id"
    calls = [agent("ok", ("c1", "lookup", {"k\ud800": 1}))]
    message, ext = await api.error(RECORD, turn=turn, events=calls)
    assert ext["field"] == "events[0].toolCalls[0].arguments.k\\ud800"  # escaped, not echoed
    message.encode("utf-8")  # the answer itself is UTF-8
    assert await _transcript(api, turn) == before
    assert (await api.ok(RECORD, turn=turn, events=[user("emoji 😀 are whole pairs")]))[
        "recordEvents"
    ]["events"]
