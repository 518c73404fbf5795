"""/mcp through the official MCP SDK's client over Streamable HTTP, against a live
server (docs/mcp.md): the tools an agent is offered, each tool called, bound and
unbound turns (R12), refusals answered as tool results with the GraphQL path's message
(R24), tokens, and two clients at once."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from mcp import McpError
from mcp.types import CallToolResult

from bench.anatomy import counted
from memory_mcp import results, tools
from memory_mcp.operations import CREATE_SESSION, Answer, Operations, mutation
from memory_mcp.turns import Binding, Turns
from resolvers.schema import build_schema
from server.domain.config import parse_config
from server.domain.marking import MEMORY_NOTICE
from server.services.chain import Caller
from tests.api.history_scenario import HistoryScenario
from tests.api.scenario import Scenario, memory_config
from tests.auth_helpers import bearer, run_as
from tests.conftest import Api
from tests.mcp.clients import connected, over_graphql

LABELS = {"customer_id": {"number": 5, "description": "The customer the memory is about."}}
CONFIG = {
    "harness": {
        "memory": {
            **memory_config(
                read=["session", "agent"],
                write=["session", "agent"],
                tools=["add_memory", "read_memory", "delete_memory"],
                pinned=12,
                labels=LABELS,
                kinds=["fact", "event"],
            )["harness"]["memory"]
        },
        "history": {"index": "messages"},
    }
}
SEARCH_ONLY = memory_config(tools=[])
TURN_EXECUTIONS = """query($id: ID!) { turn(id: $id) { status session { id }
  executions { id kind name status input output error invocations { purpose model counted }
               uses { rank memoryVersion { id } } } } }"""
SESSION_TURNS = """query($id: ID!) { session(id: $id) {
  turns(first: 20, order: OLDEST_FIRST) { edges { node { id number status } } } } }"""
RECORD = "query($id: ID!) { agentMemory(id: $id) { id status scope session { id } } }"
TURN_SESSION = "query($id: ID!) { turn(id: $id) { session { id } } }"
CREATE_NAMED = mutation("C", "createSession", "CreateSessionInput", "session { id }")


@dataclass
class Agent:
    scenario: Scenario
    id: str
    token: str


async def _agent(api: Api, config: dict[str, Any], *, sessionless: bool = False) -> Agent:
    scenario = HistoryScenario(api)
    agent_id = await scenario.agent(config, sessionless=sessionless)
    return Agent(scenario, agent_id, await bearer(api, kind="runtime", agent_id=agent_id))


@pytest.fixture(scope="module")
async def agent(api: Api) -> Agent:
    return await _agent(api, CONFIG)


@pytest.fixture(scope="module")
async def other(api: Api) -> Agent:
    """Another agent, in a namespace of its own, with a committed record."""
    return await _agent(api, CONFIG)


def _text(result: CallToolResult) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text", result
    return result.content[0].text


def _ok(result: CallToolResult) -> dict[str, Any]:
    assert not result.isError, _text(result)
    assert result.structuredContent is not None
    return result.structuredContent


async def _view(api: Api, token: str, document: str, **variables: Any) -> dict[str, Any]:
    result = await run_as(api, token, document, **variables)
    assert not result.errors, result.errors
    return dict(result.data)


# --- the tools offered ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "sessionless"),
    [
        (CONFIG, False),
        (SEARCH_ONLY, False),
        (memory_config(read=["agent"], write=["agent"], tools=["add_memory"]), True),
        ({"harness": {"memory": {"enabled": False}, "history": {"index": "messages"}}}, False),
    ],
)
async def test_the_agent_is_offered_its_own_tools(
    live: str, api: Api, config: dict[str, Any], sessionless: bool
) -> None:
    """R1, R5, R20, R62: tools/list answers the tools the agent's latest version offers,
    each as the GraphQL mutation defines it, no more; the recall prompt with memory."""
    a = await _agent(api, config, sessionless=sessionless)
    expected = tools.definitions(
        build_schema()._schema, parse_config(config, sessionless=sessionless)
    )
    async with connected(live, a.token) as mcp:
        listed = (await mcp.list_tools()).tools
        prompts = (await mcp.list_prompts()).prompts
    assert [t.model_dump() for t in listed] == [t.model_dump() for t in expected]
    memory = config["harness"]["memory"]["enabled"]
    assert [p.name for p in prompts] == (["recall"] if memory else [])


async def test_a_bound_turns_tools_are_its_versions(live: str, api: Api) -> None:
    """A bound turn is offered what its own agent version offers, though a later version
    offers more."""
    a = await _agent(api, SEARCH_ONLY)
    turn = await a.scenario.turn(await a.scenario.session())
    await a.scenario.publish(CONFIG)
    async with connected(live, a.token, {"Agent-Memory-Turn": turn}) as mcp:
        assert [t.name for t in (await mcp.list_tools()).tools] == ["search_memory"]
    async with connected(live, a.token) as mcp:
        assert len((await mcp.list_tools()).tools) == 5


# --- each tool, unbound -------------------------------------------------------------------


async def test_each_tool_unbound_in_turns_of_its_own(live: str, api: Api, agent: Agent) -> None:
    """Unbound: every call runs in a turn of its own in the MCP session's session, which
    commits when the call succeeds, so what add_memory saved is found by the next call
    and read over GraphQL; memory comes back marked as data (R44)."""
    async with connected(live, agent.token) as mcp:
        added = _ok(
            await mcp.call_tool(
                "add_memory",
                {
                    "summary": "Ada prefers email",
                    "content": "Said so on the phone.",
                    "kind": "fact",
                    "labels": {"customer_id": "C-42"},
                },
            )
        )
        record = added["memories"][0]["recordId"]
        found = await mcp.call_tool(
            "search_memory", {"query": "how does Ada like to be contacted", "kind": "fact"}
        )
        assert [r["version"]["recordId"] for r in _ok(found)["results"]] == [record]
        text = _text(found)
        assert text.startswith(f"<memory>\n{MEMORY_NOTICE}\n") and text.endswith("</memory>")
        assert "Ada prefers email" in text and "  Said so on the phone." in text
        assert _ok(found)["kind"] == "memory" and _ok(found)["notice"] == MEMORY_NOTICE
        listed = _ok(await mcp.call_tool("search_memory", {"labels": {"customer_id": "C-42"}}))
        assert [r["version"]["recordId"] for r in listed["results"]] == [record]
        read = await mcp.call_tool("read_memory", {"id": record})
        assert _ok(read)["sources"][0]["summary"] == "Ada prefers email"
        assert MEMORY_NOTICE in _text(read)
        deleted = await mcp.call_tool("delete_memory", {"id": record})
        assert _text(deleted) == f"Memory record {record} is now DELETED."
        after = _ok(await mcp.call_tool("search_memory", {"query": "Ada email"}))
        assert after["results"] == []
        history = await mcp.call_tool("search_history", {"query": "email"})
        assert _text(history) == "No earlier turn of this session matched."
    view = await _view(api, agent.token, RECORD, id=record)
    session = view["agentMemory"]["session"]["id"]
    assert view["agentMemory"]["status"] == "DELETED"
    turns = await _view(api, agent.token, SESSION_TURNS, id=session)
    statuses = [e["node"]["status"] for e in turns["session"]["turns"]["edges"]]
    assert statuses == ["COMMITTED"] * 7


async def test_search_history_reads_the_named_sessions_earlier_turns(
    live: str, api: Api, agent: Agent
) -> None:
    """Agent-Memory-Session names the session an unbound call's turn runs in: its
    search_history searches that session's committed turns (R62)."""
    s = agent.scenario
    assert isinstance(s, HistoryScenario)
    session = await s.session()
    await s.committed_turn(session, {"type": "USER_MESSAGE", "text": "My flight lands at 6pm"})
    async with connected(live, agent.token, {"Agent-Memory-Session": session}) as mcp:
        found = await mcp.call_tool("search_history", {"query": "when does the flight land"})
    hits = _ok(found)["results"]
    assert [h["turn"] for h in hits] == [1]
    assert "turn 1, user" in _text(found) and "My flight lands at 6pm" in _text(found)


# --- bound turns ------------------------------------------------------------------------------


async def test_a_bound_call_runs_in_the_hosts_turn(live: str, api: Api, agent: Agent) -> None:
    """R12: with Agent-Memory-Turn every call runs in the host's open turn: what it
    writes is that turn's alone until the host commits, and gone if it rolls back."""
    s = agent.scenario
    session = await s.session()
    kept, dropped = await s.turn(session), await s.turn(session)
    records = []
    for turn in (kept, dropped):
        async with connected(live, agent.token, {"Agent-Memory-Turn": turn}) as mcp:
            added = _ok(await mcp.call_tool("add_memory", {"summary": f"Noted in {turn}"}))
        records.append(added["memories"][0]["recordId"])
        execution = added["execution"]["id"]
        view = await _view(api, agent.token, TURN_EXECUTIONS, id=turn)
        assert view["turn"]["status"] == "OPEN"
        assert execution in [e["id"] for e in view["turn"]["executions"]]
        assert (await run_as(api, agent.token, RECORD, id=records[-1])).errors  # staged
    await s.commit(kept)
    await s.rollback(dropped)
    assert (await _view(api, agent.token, RECORD, id=records[0]))["agentMemory"]["status"] == (
        "ACTIVE"
    )
    assert (await run_as(api, agent.token, RECORD, id=records[1])).errors  # rolled back


async def test_meta_binds_a_call_to_a_turn_and_its_caller(
    live: str, api: Api, agent: Agent
) -> None:
    """The request's _meta names the turn, and the calling execution, per call."""
    s = agent.scenario
    turn = await s.turn(await s.session())
    helper = await api.ok(
        'mutation($t: ID!) { startExecution(input: {turnId: $t, kind: HELPER, name: "h"}) '
        "{ execution { id } } }",
        t=turn,
    )
    helper_id = helper["startExecution"]["execution"]["id"]
    async with connected(live, agent.token) as mcp:
        found = await mcp.call_tool(
            "search_memory",
            {"query": "anything"},
            meta={"agent-memory/turn": turn, "agent-memory/execution": helper_id},
        )
    execution = _ok(found)["execution"]["id"]
    view = await _view(
        api,
        agent.token,
        "query($id: ID!) { execution(id: $id) { turn { id } parent { id } } }",
        id=execution,
    )
    assert view["execution"] == {"turn": {"id": turn}, "parent": {"id": helper_id}}


async def test_recording_is_the_graphql_mutations(live: str, api: Api, agent: Agent) -> None:
    """R26, R43: an MCP search_memory is recorded exactly as searchMemory is: the same
    execution input and output, the embed usage, the RETRIEVED uses in rank order."""
    s = agent.scenario
    session = await s.session()
    for fact in ("Bo likes tea", "Bo lives in Oslo", "Bo has a cat"):
        await s.committed(fact, session)
    turn = await s.turn(session)
    arguments = {"query": "what does Bo drink", "limit": 2}
    async with connected(live, agent.token, {"Agent-Memory-Turn": turn}) as mcp:
        _ok(await mcp.call_tool("search_memory", arguments))
    direct = await over_graphql(api, agent.token, "search_memory", arguments, {"turnId": turn})
    assert not direct.errors, direct.errors
    await s.commit(turn)  # R12: an open turn's memory tool io reads as staged until then
    view = await _view(api, agent.token, TURN_EXECUTIONS, id=turn)
    over_mcp, over_graphql_ = (e for e in view["turn"]["executions"] if e["kind"] == "TOOL")

    def recorded(e: dict[str, Any]) -> Any:
        # a score's recency term moves with the clock between the two calls
        records = [{k: v for k, v in r.items() if k != "score"} for r in e["output"]["records"]]
        return (
            e["name"],
            e["status"],
            e["input"],
            {**e["output"], "records": records},
            e["invocations"],
            [(u["rank"], u["memoryVersion"]["id"]) for u in e["uses"]],
        )

    assert recorded(over_mcp) == recorded(over_graphql_)
    assert over_mcp["invocations"][0]["purpose"] == "EMBED" and len(over_mcp["uses"]) == 2


async def test_the_recall_prompt_follows_the_repeat_rule(live: str, api: Api, agent: Agent) -> None:
    """R42-R44: prompts/get recall puts the memory matching the work before the model,
    marked; in one conversation, a recall of exactly the same versions is not recorded
    again (here: a recall over GraphQL after the prompt's)."""
    s = agent.scenario
    session = await s.session()
    await s.committed("Cy is vegetarian", session)
    turn = await s.turn(session)
    async with connected(live, agent.token, {"Agent-Memory-Turn": turn}) as mcp:
        prompt = await mcp.get_prompt("recall", {"query": "plan a dinner for Cy"})
    (message,) = prompt.messages
    assert message.role == "user" and message.content.type == "text"
    assert message.content.text.startswith("<memory>") and "Cy is vegetarian" in (
        message.content.text
    )
    again = await run_as(
        api,
        agent.token,
        'mutation($t: ID!) { recall(input: {turnId: $t, query: "plan a dinner for Cy"}) '
        "{ recorded repeatOf { id } } }",
        t=turn,
    )
    assert again.data["recall"]["recorded"] is False and again.data["recall"]["repeatOf"]
    await s.commit(turn)  # R12: an open turn's memory tool io reads as staged until then
    view = await _view(api, agent.token, TURN_EXECUTIONS, id=turn)
    recalls = [e for e in view["turn"]["executions"] if (e["input"] or {}).get("recall")]
    assert len(recalls) == 1


# --- refusals ------------------------------------------------------------------------------


async def test_refusals_are_tool_results_with_the_graphql_message(
    live: str, api: Api, agent: Agent, other: Agent
) -> None:
    """R24: a refused call is a tool result with isError and the message (and code) the
    GraphQL mutation gives for the same call in the same turn; never a protocol error."""
    s = agent.scenario
    turn = await s.turn(await s.session())
    foreign = await other.scenario.committed("Not yours", await other.scenario.session())
    own = await s.committed("Mine", await s.session(), scope="AGENT")
    calls = [
        ("search_memory", {"limit": 0}),  # out of range
        ("search_memory", {"limit": "ten"}),  # not an integer
        ("search_memory", {"query": "x", "colour": "red"}),  # no such argument
        ("search_memory", {"query": "a\x00b"}),  # text PostgreSQL cannot store
        ("search_memory", {"ids": ["not-an-id"]}),
        ("add_memory", {"summary": "x", "kind": "opinion"}),  # undeclared kind
        ("add_memory", {"summary": "x", "labels": {"colour": "red"}}),  # undeclared label
        ("add_memory", {"summary": "a line far longer than the pin budget", "pinned": True}),
        ("add_memory", {"summary": "two\nlines"}),
        ("read_memory", {"id": foreign}),  # another agent's record
        ("delete_memory", {"id": foreign}),
        ("add_memory", {"summary": "x", "replaces": foreign}),
        ("read_memory", {}),  # a required argument missing
    ]
    async with connected(live, agent.token, {"Agent-Memory-Turn": turn}) as mcp:
        for tool, arguments in calls:
            result = await mcp.call_tool(tool, arguments)
            direct = await over_graphql(api, agent.token, tool, arguments, {"turnId": turn})
            assert direct.errors, (tool, arguments)
            error = direct.errors[0]
            assert result.isError, (tool, arguments, result)
            assert _text(result) == error.message, (tool, arguments)
            assert result.structuredContent == {
                "error": {"message": error.message, **(error.extensions or {})}
            }
        unknown = await mcp.call_tool("forget_everything", {})
        assert unknown.isError and "unknown tool 'forget_everything'" in _text(unknown)
        turn_given = await mcp.call_tool("search_memory", {"query": "x", "turnId": turn})
        assert turn_given.isError and "turnId is not an argument of search_memory" in _text(
            turn_given
        )
        assert not (await mcp.call_tool("read_memory", {"id": own})).isError


async def test_a_tool_not_offered_is_refused_as_over_graphql(live: str, api: Api) -> None:
    """R5, R24: a tool the configuration does not offer is not listed, and calling it
    anyway is refused with the service's message, as addMemory refuses it."""
    a = await _agent(api, SEARCH_ONLY)
    turn = await a.scenario.turn(await a.scenario.session())
    async with connected(live, a.token, {"Agent-Memory-Turn": turn}) as mcp:
        result = await mcp.call_tool("add_memory", {"summary": "x"})
    direct = await over_graphql(api, a.token, "add_memory", {"summary": "x"}, {"turnId": turn})
    assert result.isError and _text(result) == direct.errors[0].message
    assert "add_memory is not offered" in _text(result)


async def test_an_unbound_refusal_rolls_its_turn_back(live: str, api: Api, agent: Agent) -> None:
    """R12, R24: a refused unbound call's turn rolls back: nothing it did remains but the
    failed execution that records what was tried."""
    async with connected(live, agent.token) as mcp:
        first = _ok(await mcp.call_tool("add_memory", {"summary": "Dee is allergic to nuts"}))
        refused = await mcp.call_tool("add_memory", {"summary": "Dee", "kind": "opinion"})
    assert refused.isError and "kind 'opinion' is not declared" in _text(refused)
    record = await _view(api, agent.token, RECORD, id=first["memories"][0]["recordId"])
    session = record["agentMemory"]["session"]["id"]
    turns = await _view(api, agent.token, SESSION_TURNS, id=session)
    edges = turns["session"]["turns"]["edges"]
    assert [e["node"]["status"] for e in edges] == ["COMMITTED", "ROLLED_BACK"]
    view = await _view(api, agent.token, TURN_EXECUTIONS, id=edges[1]["node"]["id"])
    (tool,) = [e for e in view["turn"]["executions"] if e["kind"] == "TOOL"]
    assert tool["status"] == "FAILED" and "not declared" in tool["error"]


async def test_a_turn_or_session_of_another_agent_is_refused(
    live: str, api: Api, agent: Agent, other: Agent
) -> None:
    """The turn and session a host names are checked as beginTurn's and a tool's turnId
    are (resolvers/ownership.py): another agent's is refused, and nothing is written."""
    theirs = await other.scenario.session()
    their_turn = await other.scenario.turn(theirs)
    async with connected(live, agent.token, {"Agent-Memory-Turn": their_turn}) as mcp:
        result = await mcp.call_tool("search_memory", {"query": "x"})
        with pytest.raises(McpError):
            await mcp.list_tools()
    direct = await over_graphql(
        api, agent.token, "search_memory", {"query": "x"}, {"turnId": their_turn}
    )
    assert result.isError and _text(result) == direct.errors[0].message
    async with connected(live, agent.token, {"Agent-Memory-Session": theirs}) as mcp:
        result = await mcp.call_tool("search_memory", {"query": "x"})
    begun = await run_as(
        api,
        agent.token,
        mutation("B", "beginTurn", "BeginTurnInput", "turn { id }"),
        input={"sessionId": theirs},
    )
    assert result.isError and _text(result) == begun.errors[0].message
    view = await _view(api, other.token, SESSION_TURNS, id=theirs)
    assert len(view["session"]["turns"]["edges"]) == 1
    async with connected(live, agent.token, {"Agent-Memory-Turn": "turn-7"}) as mcp:
        bad = await mcp.call_tool("search_memory", {"query": "x"})
    assert bad.isError and _text(bad).startswith("Agent-Memory-Turn is not an id: 'turn-7'")


# --- tokens -------------------------------------------------------------------------------------


async def test_only_a_runtime_token_is_the_agent(live: str, api: Api, agent: Agent) -> None:
    """A runtime token is the agent itself; no token, an unknown one or a token of another
    kind is refused before the protocol, saying what to send."""
    client = await bearer(api, kind="client", namespace="ns-of-nobody")
    admin = await bearer(api, kind="admin")
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    accept = {"accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(base_url=live) as http:
        for token, status, words in [
            (None, 401, "send a token"),
            ("amk_nonsense", 401, "invalid token"),
            (client, 403, "this is a client token"),
            (admin, 403, "this is an admin token"),
        ]:
            auth = {"authorization": f"Bearer {token}"} if token else {}
            response = await http.post("/mcp", json=initialize, headers={**accept, **auth})
            assert response.status_code == status
            assert words in response.json()["error"]["message"]
        ok = await http.post(
            "/mcp", json=initialize, headers={**accept, "authorization": f"Bearer {agent.token}"}
        )
        assert ok.status_code == 200 and ok.json()["result"]["serverInfo"]["name"] == "agent-memory"
        # the session answers only the token that opened it
        session = {"mcp-session-id": ok.headers["mcp-session-id"]}
        other = await bearer(api, kind="runtime", agent_id=agent.id, name="another")
        listed = await http.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            headers={**accept, **session, "authorization": f"Bearer {other}"},
        )
        assert listed.status_code == 404
    with pytest.raises(Exception):  # noqa: B017 - the SDK's client gives the HTTP status
        async with connected(live, client):
            pass


# --- two clients ----------------------------------------------------------------------------


async def test_two_clients_at_once_each_in_its_own_session(
    live: str, api: Api, agent: Agent
) -> None:
    """Two MCP sessions at once: each keeps a session of its own, so what one saves in
    session scope is not found by the other (R11), and both run side by side."""

    async def client(name: str) -> tuple[list[str], list[str]]:
        async with connected(live, agent.token) as mcp:
            _ok(await mcp.call_tool("add_memory", {"summary": f"{name} booked room 12"}))
            found = []
            for _ in range(3):
                result = _ok(await mcp.call_tool("search_memory", {"query": "booked room 12"}))
                found.append([r["version"]["summary"] for r in result["results"]])
            return found[0], found[-1]

    (first_a, last_a), (first_b, last_b) = await asyncio.gather(client("Eve"), client("Fay"))
    assert first_a == last_a == ["Eve booked room 12"]
    assert first_b == last_b == ["Fay booked room 12"]


EXTERNAL = "Agent-Memory-Session-External-Id"
BY_EXTERNAL_ID = """query($a: ID!, $x: String!) { agent(id: $a) { session(externalId: $x) {
  id externalId turns(first: 20, order: OLDEST_FIRST) { edges { node { status } } } } } }"""


async def test_a_session_named_by_its_external_id_is_found_or_created(
    live: str, api: Api, agent: Agent
) -> None:
    """Agent-Memory-Session-External-Id names the agent's session by the caller's own id
    (a chat thread's): the first call creates it with that externalId, every later
    connection naming it runs in it, and one createSession made beforehand is the one
    used. Naming a session both ways is BAD_INPUT."""
    thread = f"thread-{uuid.uuid4()}"
    async with connected(live, agent.token, {EXTERNAL: thread}) as mcp:
        added = _ok(await mcp.call_tool("add_memory", {"summary": "Ida drinks green tea"}))
    async with connected(live, agent.token, {EXTERNAL: thread}) as mcp:
        found = _ok(await mcp.call_tool("search_memory", {"query": "green tea"}))
    assert [r["version"]["summary"] for r in found["results"]] == ["Ida drinks green tea"]
    view = await _view(api, agent.token, BY_EXTERNAL_ID, a=agent.id, x=thread)
    session = view["agent"]["session"]
    assert session["externalId"] == thread
    assert [e["node"]["status"] for e in session["turns"]["edges"]] == ["COMMITTED"] * 2
    record = await _view(api, agent.token, RECORD, id=added["memories"][0]["recordId"])
    assert record["agentMemory"]["session"]["id"] == session["id"]

    ticket = f"ticket-{uuid.uuid4()}"
    made = await run_as(
        api, agent.token, CREATE_NAMED, input={"agentId": agent.id, "externalId": ticket}
    )
    async with connected(live, agent.token, {EXTERNAL: ticket}) as mcp:
        _ok(await mcp.call_tool("search_memory", {"query": "tea"}))
    view = await _view(api, agent.token, BY_EXTERNAL_ID, a=agent.id, x=ticket)
    assert view["agent"]["session"]["id"] == made.data["createSession"]["session"]["id"]
    assert len(view["agent"]["session"]["turns"]["edges"]) == 1

    both = {EXTERNAL: ticket, "Agent-Memory-Session": view["agent"]["session"]["id"]}
    async with connected(live, agent.token, both) as mcp:
        bad = await mcp.call_tool("search_memory", {"query": "tea"})
    assert bad.isError and _text(bad).startswith("name the session once")


async def test_a_session_created_in_between_by_its_external_id_is_the_one_used(
    api: Api, agent: Agent
) -> None:
    """Another server creates the session of an externalId between this one's look-up
    and its createSession: the CONFLICT is answered by looking it up again, so both
    use the one session."""

    class Racing(Operations):
        async def run(self, caller: Caller, document: str, variables: dict[str, Any]) -> Answer:
            if document == CREATE_SESSION:  # the other server's createSession comes first
                await super().run(caller, document, variables)
            return await super().run(caller, document, variables)

    racing = Racing(api.schema, database=api.database, embedder=api.embedder, settings=api.settings)
    assert api.database.sessionmaker is not None
    async with api.database.sessionmaker() as db:
        caller = await racing.callers.caller(db, token=agent.token)
    chat = f"chat-{uuid.uuid4()}"
    answer = await Turns(racing).run(
        caller,
        Binding(external=chat),
        lambda turn: racing.run(caller, TURN_SESSION, {"id": turn["turnId"]}),
    )
    view = await _view(api, agent.token, BY_EXTERNAL_ID, a=agent.id, x=chat)
    assert answer.data["turn"]["session"]["id"] == view["agent"]["session"]["id"]


async def test_no_session_for_an_agent_without_sessions(live: str, api: Api) -> None:
    """An agent without sessions: each unbound call's turn names the agent (R2)."""
    a = await _agent(
        api, memory_config(read=["agent"], write=["agent"], tools=["add_memory"]), sessionless=True
    )
    async with connected(live, a.token) as mcp:
        added = _ok(await mcp.call_tool("add_memory", {"summary": "Gus speaks Danish"}))
        found = _ok(await mcp.call_tool("search_memory", {"query": "Danish"}))
    assert [r["version"]["recordId"] for r in found["results"]] == [
        added["memories"][0]["recordId"]
    ]
    view = await _view(api, a.token, RECORD, id=added["memories"][0]["recordId"])
    assert view["agentMemory"]["scope"] == "AGENT" and view["agentMemory"]["session"] is None


async def test_a_bound_search_sends_the_statements_search_memory_sends(
    live: str, api: Api, agent: Agent
) -> None:
    """MCP adds no statement to a call: a bound search_memory sends what the same
    searchMemory sends over /graphql (the token's lookup, the turn, the ranking, the
    call's records), counted on the server's engine."""
    s = agent.scenario
    session = await s.session()
    await s.committed("Hal drinks coffee", session)
    turn = await s.turn(session)
    document = mutation(
        "Direct", "searchMemory", "SearchMemoryInput", results.SELECTIONS["search_memory"]
    )
    auth = {"authorization": f"Bearer {agent.token}"}
    async with (
        connected(live, agent.token, {"Agent-Memory-Turn": turn}) as mcp,
        httpx.AsyncClient(base_url=live, headers=auth) as http,
    ):

        async def over_http(query: str) -> None:
            variables = {"input": {"turnId": turn, "query": query}}
            response = await http.post("/graphql", json={"query": document, "variables": variables})
            assert "errors" not in response.json()

        for query in ("warm", "up"):
            _ok(await mcp.call_tool("search_memory", {"query": query}))
            await over_http(query)
        with counted(api.database) as over_mcp:
            _ok(await mcp.call_tool("search_memory", {"query": "what does Hal drink"}))
        with counted(api.database) as over_graphql:
            await over_http("what does Hal drink")
        # /mcp reads its caller in a transaction of its own: one COMMIT more
        assert (
            [s for s in over_mcp.statements if s != "COMMIT"]
            == [s for s in over_graphql.statements if s != "COMMIT"]
            != []
        )
