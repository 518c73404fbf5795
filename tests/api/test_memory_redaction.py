"""What an agent reply asked the memory tools is memory (R70, R71): a reader whose chain
may read the session but not the agent's memory sees the reply's text and its other
calls, never the arguments of its memory calls, wherever the reply shows them: the
transcript payload, the kept event's text, each searchable part of it, its tool calls,
and the call a kept tool result answers. A reader with the memory grant sees all."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from server.domain.history_parts import PART_TOKENS
from tests.api.history_scenario import (
    HISTORY_EVENT,
    SESSION_HISTORY,
    HistoryScenario,
    agent,
    history_config,
    result,
)
from tests.api.scenario import FAIL, ROLLBACK
from tests.auth_helpers import bearer, run_as
from tests.conftest import Api

TURN_VIEW = """
query($t: ID!) { turn(id: $t) { transcript { type toolName payload } } }"""
SECRET = "SECRETWORD"
# long enough that the kept reply is cut into several parts (R62), the memory call's
# arguments across more than one of them
LONG = " ".join(f"{SECRET}{i} fact" for i in range(PART_TOKENS))


async def _world(api: Api) -> dict[str, Any]:
    ns = f"red{uuid.uuid4().hex[:8]}"
    s = HistoryScenario(api)
    agent_id = await s.agent(history_config(), namespace=ns)
    session = await s.session()
    turn = await s.turn(session)
    added = await s.add(turn, f"{SECRET} the customer lives in Lisbon", content=LONG)
    events = await s.record(
        turn,
        agent(
            "Noted, and checking the weather.",
            (
                "c1",
                "add_memory",
                {"summary": f"{SECRET} the customer lives in Lisbon", "content": LONG},
            ),
            ("c2", "weather", {"city": "Porto"}),
        ),
        result("c1", execution=added["execution"]["id"]),
        result("c2", "sunny in Porto"),
    )
    await s.commit(turn)
    return {"ns": ns, "agent": agent_id, "session": session, "turn": turn, "reply": events[0]["id"]}


@pytest.fixture(scope="module")
async def world(api: Api) -> dict[str, Any]:
    return await _world(api)


async def _reads(api: Api, token: str, world: dict[str, Any]) -> list[Any]:
    page = await run_as(api, token, SESSION_HISTORY, session=world["session"], first=50)
    view = await run_as(api, token, TURN_VIEW, t=world["turn"])
    assert page.errors is None and view.errors is None, (page.errors, view.errors)
    events = [e["node"] for e in page.data["session"]["history"]["edges"]]
    reply = next(e for e in events if e["role"] == "AGENT")
    one = await run_as(api, token, HISTORY_EVENT, id=reply["id"])
    assert one.errors is None, one.errors
    return [events, view.data["turn"]["transcript"], one.data["historyEvent"]]


async def test_without_the_memory_grant_memory_call_arguments_are_masked(
    api: Api, world: dict[str, Any]
) -> None:
    ns = world["ns"]
    token = await bearer(api, kind="client", grants=(("SELECT", f"{ns}.Session"),))
    events, transcript, reply_alone = await _reads(api, token, world)
    assert SECRET not in str([events, transcript, reply_alone])
    reply = next(e for e in events if e["role"] == "AGENT")
    assert reply == reply_alone
    assert reply["text"].startswith("Noted, and checking the weather.")
    assert "calls add_memory([redacted])" in reply["text"]
    assert 'calls weather({"city": "Porto"})' in reply["text"]
    assert len(reply["parts"]) > 1  # the arguments spanned several parts, each masked
    assert all("[redacted]" in p["text"] for p in reply["parts"])
    assert "Noted" in reply["parts"][0]["text"]
    calls = {c["name"]: c["arguments"] for c in reply["toolCalls"]}
    assert "redacted" in calls["add_memory"] and calls["weather"] == {"city": "Porto"}
    answered = {e["toolName"]: e for e in events if e["role"] == "TOOL"}
    assert "redacted" in answered["add_memory"]["call"]["arguments"]
    assert answered["weather"]["call"]["arguments"] == {"city": "Porto"}
    assert answered["weather"]["text"] == "sunny in Porto"
    (payload,) = [t["payload"] for t in transcript if t["type"] == "AGENT_MESSAGE"]
    assert payload["text"] == "Noted, and checking the weather."
    by_name = {c["name"]: c for c in payload["toolCalls"]}
    assert "redacted" in by_name["add_memory"]["arguments"] and by_name["add_memory"]["id"] == "c1"
    assert by_name["weather"]["arguments"] == {"city": "Porto"}


async def test_with_the_memory_grant_everything_is_shown(api: Api, world: dict[str, Any]) -> None:
    ns = world["ns"]
    grants = (
        ("SELECT", f"{ns}.Session"),
        ("SELECT", f"{ns}.AgentMemory.indexes.*"),
        ("SELECT", f"{ns}.AgentMemory.document"),
    )
    token = await bearer(api, kind="client", grants=grants)
    events, transcript, _ = await _reads(api, token, world)
    reply = next(e for e in events if e["role"] == "AGENT")
    assert "[redacted]" not in reply["text"] and f"{SECRET}7 fact" in reply["text"]
    assert all("[redacted]" not in p["text"] for p in reply["parts"])
    # the parts, their overlaps removed, are the text
    assert f"{SECRET}{PART_TOKENS - 1} fact" in reply["parts"][-1]["text"]
    (payload,) = [t["payload"] for t in transcript if t["type"] == "AGENT_MESSAGE"]
    assert {c["name"]: c["arguments"] for c in payload["toolCalls"]}["add_memory"][
        "content"
    ] == LONG


async def test_the_agent_itself_reads_its_own_calls(api: Api, world: dict[str, Any]) -> None:
    token = await bearer(api, kind="runtime", agent_id=world["agent"])
    events, _, _ = await _reads(api, token, world)
    reply = next(e for e in events if e["role"] == "AGENT")
    assert LONG in reply["text"]


# -- a discarded turn's memory (R12) ------------------------------------------------------

DISCARDED_VIEW = """
query($t: ID!) {
  turn(id: $t) {
    status
    executions { name status input output }
    transcript { type toolName payload }
    memories { id }
  }
}"""


async def _discarded_world(api: Api) -> dict[str, Any]:
    """Two turns that saved a record, asked recall about it and named the calls in a
    reply, then ended without commit: one rolled back, one failed."""
    ns = f"dis{uuid.uuid4().hex[:8]}"
    s = HistoryScenario(api)
    agent_id = await s.agent(history_config(), namespace=ns)
    session = await s.session()
    turns = {}
    for end in ("ROLLED_BACK", "FAILED"):
        turn = await s.turn(session)
        summary = f"{SECRET} {end} the customer lives in Lisbon"
        added = await s.add(turn, summary, content=f"{SECRET} content")
        found = await api.ok(SEARCH_OWN, turn=turn, q="where does the customer live")
        assert SECRET in str(found)  # the turn itself found what it staged
        await s.record(
            turn,
            agent("Noted.", ("c1", "add_memory", {"summary": summary})),
            result("c1", execution=added["execution"]["id"]),
        )
        await api.ok(ROLLBACK if end == "ROLLED_BACK" else FAIL, turn=turn)
        turns[end] = turn
    return {"ns": ns, "agent": agent_id, "turns": turns}


SEARCH_OWN = """
mutation($turn: ID!, $q: String!) {
  searchMemory(input: {turnId: $turn, query: $q}) { results { version { summary } } }
}"""


async def _discarded_views(api: Api, token: str, world: dict[str, Any]) -> dict[str, Any]:
    views = {}
    for end, turn in world["turns"].items():
        view = await run_as(api, token, DISCARDED_VIEW, t=turn)
        assert view.errors is None, view.errors
        views[end] = view.data["turn"]
    return views


async def test_a_discarded_turns_memory_text_is_for_the_agent_alone(api: Api) -> None:
    """R12: a rolled-back or failed turn's records and versions are removed; its
    executions and transcript stay, but the memory text its memory tools were given and
    gave is shown to the agent itself only. A reader holding every grant sees a marker."""
    world = await _discarded_world(api)
    ns = world["ns"]
    grants = (
        ("SELECT", f"{ns}.Session"),
        ("SELECT", f"{ns}.AgentMemory.indexes.*"),
        ("SELECT", f"{ns}.AgentMemory.document"),
    )
    views = await _discarded_views(api, await bearer(api, kind="client", grants=grants), world)
    assert SECRET not in str(views)
    for end, note in (
        ("ROLLED_BACK", "discarded: the turn rolled back"),
        ("FAILED", "discarded: the turn failed"),
    ):
        view = views[end]
        assert view["status"] == end and view["memories"] == []
        tools = {e["name"]: e for e in view["executions"] if e["name"] != "turn"}
        assert set(tools) == {"add_memory", "search_memory"}
        assert all(e["status"] == "SUCCEEDED" for e in tools.values())
        assert all(e[f] == {"redacted": note} for e in tools.values() for f in ("input", "output"))
        events = {(e["type"], e["toolName"]): e["payload"] for e in view["transcript"]}
        assert events[("TOOL_RESULT", "add_memory")] == {"redacted": note}
        assert events[("TOOL_RESULT", "search_memory")] == {"redacted": note}
        reply = events[("AGENT_MESSAGE", None)]
        assert reply["text"] == "Noted."
        assert reply["toolCalls"][0]["arguments"] == {"redacted": note}

    own = await _discarded_views(
        api, await bearer(api, kind="runtime", agent_id=world["agent"]), world
    )
    for end, view in own.items():
        add = next(e for e in view["executions"] if e["name"] == "add_memory")
        assert add["input"]["summary"] == f"{SECRET} {end} the customer lives in Lisbon"
        assert SECRET in add["output"]["memories"][0]["summary"]


async def test_a_committed_turns_memory_text_stays_readable(
    api: Api, world: dict[str, Any]
) -> None:
    """The discarded marker is for discarded turns only: a reader with the memory grant
    still reads a committed turn's memory tools."""
    ns = world["ns"]
    grants = (
        ("SELECT", f"{ns}.Session"),
        ("SELECT", f"{ns}.AgentMemory.indexes.*"),
        ("SELECT", f"{ns}.AgentMemory.document"),
    )
    token = await bearer(api, kind="client", grants=grants)
    view = await run_as(api, token, DISCARDED_VIEW, t=world["turn"])
    assert view.errors is None, view.errors
    add = next(e for e in view.data["turn"]["executions"] if e["name"] == "add_memory")
    assert add["input"]["summary"] == f"{SECRET} the customer lives in Lisbon"


STAGED = "staged: the turn has not committed"
RECORD = "query($id: ID!) { agentMemory(id: $id) { id current { summary } } }"
ADD_SEEN = """
mutation($turn: ID!, $summary: String!) {
  addMemory(input: {turnId: $turn, summary: $summary}) {
    execution { input output turn { transcript { toolName payload } } } } }"""


async def test_an_open_turns_staged_memory_is_shown_to_no_reader(api: Api) -> None:
    """R12, one rule for every path: what an open turn staged is no reader's until it
    commits. Its records are NOT_FOUND (as an unknown id) to the agent's own runtime and
    to a client holding every grant, and the memory parts of its trace (the memory tools'
    input and output, their transcript events, the memory calls' arguments in its
    replies) are ``{"redacted": "staged: ..."}`` for them: no text, no record id. The
    turn's own operations see them; at commit every reader with the grants does."""
    ns = f"stg{uuid.uuid4().hex[:8]}"
    s = HistoryScenario(api)
    agent_id = await s.agent(history_config(), namespace=ns)
    session = await s.session()
    turn = await s.turn(session)
    summary = f"{SECRET} the vault code is kestrel"
    added = await s.add(turn, summary)
    record = added["memories"][0]["recordId"]
    await api.ok(SEARCH_OWN, turn=turn, q="vault code")
    await s.record(
        turn,
        agent("Noted.", ("c1", "add_memory", {"summary": summary})),
        result("c1", execution=added["execution"]["id"]),
    )
    grants = (("SELECT", f"{ns}.*"),)
    readers = {
        "the agent's runtime": await bearer(api, kind="runtime", agent_id=agent_id),
        "a client with every grant": await bearer(api, kind="client", grants=grants),
    }
    for who, token in readers.items():
        view = await run_as(api, token, DISCARDED_VIEW, t=turn)
        assert view.errors is None, (who, view.errors)
        shown = str(view.data)
        assert SECRET not in shown and record not in shown, who
        tools = {e["name"]: e for e in view.data["turn"]["executions"] if e["name"] != "turn"}
        assert set(tools) == {"add_memory", "search_memory"}, who
        assert all(
            e[f] == {"redacted": STAGED} for e in tools.values() for f in ("input", "output")
        )
        events = {(e["type"], e["toolName"]): e["payload"] for e in view.data["turn"]["transcript"]}
        assert events[("TOOL_RESULT", "add_memory")] == {"redacted": STAGED}, who
        assert events[("AGENT_MESSAGE", None)]["toolCalls"][0]["arguments"] == {"redacted": STAGED}
        assert view.data["turn"]["memories"] == [], who
        unknown = str(uuid.uuid4())
        refused = await run_as(api, token, RECORD, id=record)
        none = await run_as(api, token, RECORD, id=unknown)
        assert refused.data == none.data == {"agentMemory": None}, who
        assert refused.errors[0].message.replace(record, "?") == none.errors[0].message.replace(
            unknown, "?"
        ), who
        assert refused.errors[0].extensions == none.errors[0].extensions == {"code": "NOT_FOUND"}
    # the turn itself: its own answer shows what it staged, its earlier calls too
    own = await run_as(api, readers["the agent's runtime"], ADD_SEEN, turn=turn, summary="more")
    assert own.errors is None, own.errors
    assert own.data["addMemory"]["execution"]["input"]["summary"] == "more"
    assert SECRET in str(own.data["addMemory"]["execution"]["turn"]["transcript"])
    await s.commit(turn)
    view = await run_as(api, readers["a client with every grant"], DISCARDED_VIEW, t=turn)
    add = next(e for e in view.data["turn"]["executions"] if e["name"] == "add_memory")
    assert add["output"]["memories"][0]["summary"] == summary
    read = await run_as(api, readers["a client with every grant"], RECORD, id=record)
    assert read.data["agentMemory"]["current"]["summary"] == summary
