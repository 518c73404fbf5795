"""``python -m bench trace``: a session of 200 turns as an agent's runtime writes it, and
what the dashboard's reads of it cost.

:func:`write_session` drives the GraphQL API as a runtime does, turn after turn: the
user's message, a recall, memory written, replaced and deleted, history searched, the
agent's reply with a tool call and its result, model usage, a turn-end review now and
then, one failed attempt retried, a preview turn; then the commit. The browser tests
open the dashboard on such a session (tests/browser); this benchmark writes one into a
database of its own and times the dashboard's own documents over it
(server/web/static/dashboard/queries.js), with the server's default limits.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import connect, database, embedder, sentences, table

QUERIES = Path(__file__).resolve().parents[1] / "server/web/static/dashboard/queries.js"

CONFIG: dict[str, Any] = {
    "harness": {
        "memory": {
            "enabled": True,
            "scope": {"read": ["session", "agent"], "write": ["session", "agent"]},
            "kinds": ["fact", "event", "guidance"],
            "tools": ["add_memory", "read_memory", "delete_memory"],
            "labels": {"topic": {"number": 5, "description": "What the memory is about."}},
            "pinned": {"max_tokens": 2000},
            "extraction": {"every": {"messages": 40}},
        },
        "history": {"index": "messages_and_tools"},
    }
}

_BEGIN = """mutation($s: ID!, $retry: ID, $preview: Boolean! = false) {
  beginTurn(input: {sessionId: $s, retryOf: $retry, preview: $preview}) {
    turn { id number } execution { id } } }"""
_EVENTS = """mutation($t: ID!, $e: [ConversationEventInput!]!) {
  recordEvents(input: {turnId: $t, events: $e}) { events { sequence } } }"""
_RECALL = """mutation($t: ID!, $q: String!) {
  recall(input: {turnId: $t, query: $q}) { recorded } }"""
_ADD = """mutation($t: ID!, $summary: String!, $kind: String!, $replaces: ID,
                   $labels: [LabelInput!], $scope: Scope) {
  addMemory(input: {turnId: $t, summary: $summary, kind: $kind, replaces: $replaces,
                    labels: $labels, scope: $scope}) { memories { recordId } } }"""
_DELETE = """mutation($t: ID!, $r: ID!) {
  deleteMemory(input: {turnId: $t, id: $r}) { memories { status } } }"""
_HISTORY = """mutation($t: ID!, $q: String!) {
  searchHistory(input: {turnId: $t, query: $q, limit: 3}) { results { eventId } } }"""
_INVOKE = """mutation($e: ID!, $purpose: InvocationPurpose!, $i: Int!, $o: Int!, $ms: Int) {
  recordInvocation(input: {executionId: $e, purpose: $purpose, model: "bench-model",
                           inputTokens: $i, outputTokens: $o, latencyMs: $ms}) {
    invocation { id } } }"""
_REVIEW = """mutation($t: ID!) {
  beginMemoryReview(input: {turnId: $t}) { due review { id execution { id } } } }"""
_APPLY = """mutation($r: ID!, $summary: String!) {
  applyMemoryReview(input: {reviewId: $r, decisions: [
    {candidate: {summary: $summary, kind: "fact"}, action: ADD}]}) { decisions { applied } } }"""
_COMMIT = "mutation($t: ID!) { commitTurn(input: {turnId: $t}) { turn { status } } }"
_FAIL = """mutation($t: ID!) {
  failTurn(input: {turnId: $t, error: "the model timed out"}) { turn { status } } }"""


class _Api:
    """GraphQL over HTTP: every answer's data, or an error naming the document."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def __call__(self, query: str, **variables: Any) -> dict[str, Any]:
        response = await self.client.post("/graphql", json={"query": query, "variables": variables})
        body = response.json()
        if body.get("errors"):
            raise RuntimeError(f"{body['errors'][0]}\n{query}")
        return dict(body["data"])


async def write_session(
    client: httpx.AsyncClient, *, session_id: str, turns: int = 200, seed: int = 0
) -> dict[str, int]:
    """Write ``turns`` turns into the session, as its agent's runtime (``client`` carries
    the runtime's token); counts of what was written."""
    api = _Api(client)
    said = sentences(turns * 2, seed=seed)
    facts: list[str] = []
    counts = {"turns": 0, "attempts": 0, "records": 0, "reviews": 0}
    for n in range(1, turns + 1):
        retry = None
        if n == turns // 2:  # one attempt fails and is retried
            failed = (await api(_BEGIN, s=session_id))["beginTurn"]
            await api(_EVENTS, t=failed["turn"]["id"], e=[_user(said[2 * n])])
            await api(_FAIL, t=failed["turn"]["id"])
            retry = failed["turn"]["id"]
            counts["attempts"] += 1
        preview = n == turns - 1
        begun = (await api(_BEGIN, s=session_id, retry=retry, preview=preview))["beginTurn"]
        turn, execution = begun["turn"]["id"], begun["execution"]["id"]
        question = said[2 * n - 2]
        await api(_EVENTS, t=turn, e=[_user(f"Remember this: {question}")])
        await api(_RECALL, t=turn, q=question)
        if n % 3 == 1:
            topic = [{"name": "topic", "value": f"t{n % 7}"}]
            scope = "AGENT" if n % 9 == 1 else None
            added = await api(
                _ADD, t=turn, summary=question, kind="fact", labels=topic, scope=scope
            )
            facts.append(added["addMemory"]["memories"][0]["recordId"])
            counts["records"] += 1
        elif n % 7 == 0 and facts:
            await api(
                _ADD, t=turn, summary=f"Corrected: {question}", kind="fact", replaces=facts.pop(0)
            )
            counts["records"] += 1
        elif n % 11 == 0 and facts:
            await api(_DELETE, t=turn, r=facts.pop())
        if n % 5 == 0 and n > 1:
            await api(_HISTORY, t=turn, q=said[2 * n - 12 if n > 6 else 0])
        await api(_INVOKE, e=execution, purpose="TURN", i=800 + n, o=60 + n % 40, ms=n % 9 * 40)
        call = f"call-{n}"
        await api(
            _EVENTS,
            t=turn,
            e=[
                {
                    "type": "AGENT_MESSAGE",
                    "text": f"Noted. {said[2 * n - 1]}",
                    "toolCalls": [
                        {"id": call, "name": "calendar", "arguments": {"day": n % 28 + 1}}
                    ],
                },
                {"type": "TOOL_RESULT", "toolCallId": call, "text": f"{n % 4} meetings that day"},
            ],
        )
        if n % 20 == 0:
            review = (await api(_REVIEW, t=turn))["beginMemoryReview"]
            if review["due"]:
                await api(
                    _INVOKE,
                    e=review["review"]["execution"]["id"],
                    purpose="MEMORY",
                    i=900,
                    o=80,
                    ms=20,
                )
                await api(_APPLY, r=review["review"]["id"], summary=f"Reviewed at turn {n}")
                counts["reviews"] += 1
        await api(_COMMIT, t=turn)
        counts["turns"] += 1
    return counts


def _user(text: str) -> dict[str, str]:
    return {"type": "USER_MESSAGE", "text": text}


def dashboard_documents() -> dict[str, str]:
    """The dashboard's documents, by operation name, as queries.js holds them."""
    text = QUERIES.read_text()
    found = re.findall(r"`((?:query|mutation|subscription) (\w+)[^`]*)`", text)
    return {name: document for document, name in found}


async def _run(quick: bool) -> dict[str, Any]:
    from server.app import create_app
    from server.domain.grants import PRIVILEGES, Chain, Link, Policy
    from server.services.chain import Caller, RuntimeBinding

    turns = 40 if quick else 200
    url, _ = database("bench_trace", fresh=True)
    db = await connect(url)
    model = embedder()
    everything = Policy.parse("everything", [(p, "*") for p in PRIVILEGES])
    caller = Caller(
        name="bench",
        chain=Chain((Link("client", "bench", (everything,)),)),
        kind="admin",
        admin=True,
        runtime=RuntimeBinding(every_agent=True),
    )
    settings = db.settings
    app = create_app(settings, database=db, embedder=model, caller=caller)
    transport = httpx.ASGITransport(app=app)
    try:
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=60) as client,
        ):
            api = _Api(client)
            agent = (
                await api(
                    'mutation { createAgent(input: {namespace: "bench", name: "trace"}) '
                    "{ agent { id } } }"
                )
            )["createAgent"]["agent"]["id"]
            await api(
                "mutation($a: ID!, $c: JSON!) { publishAgentVersion(input: {agentId: $a, "
                "config: $c}) { agentVersion { id } } }",
                a=agent,
                c=CONFIG,
            )
            session = (
                await api(
                    "mutation($a: ID!) { createSession(input: {agentId: $a, "
                    'externalId: "trace"}) { session { id } } }',
                    a=agent,
                )
            )["createSession"]["session"]["id"]
            started = time.perf_counter()
            counts = await write_session(client, session_id=session, turns=turns)
            written = time.perf_counter() - started
            reads = await _time_reads(api, agent=agent, session=session)
    finally:
        await db.dispose()
        model.close()
    table(
        f"a session of {turns} turns, written as a runtime does",
        ["turns", "attempts failed", "records", "reviews", "seconds", "ms per turn"],
        [
            [
                counts["turns"],
                counts["attempts"],
                counts["records"],
                counts["reviews"],
                f"{written:.1f}",
                f"{1000 * written / turns:.0f}",
            ]
        ],
    )
    table(
        "the dashboard's reads of it (default limits), median of 5",
        ["document", "ms"],
        [[name, f"{ms:.1f}"] for name, ms in reads.items()],
    )
    return {"turns": turns, "write_ms_per_turn": 1000 * written / turns, "reads_ms": reads}


async def _time_reads(api: _Api, *, agent: str, session: str) -> dict[str, float]:
    docs = dashboard_documents()
    page = (await api(docs["Session"], id=session))["session"]["turns"]
    middle = page["edges"][len(page["edges"]) // 2]["node"]["id"]
    asks: dict[str, dict[str, Any]] = {
        "Sessions": {"id": agent},
        "Session": {"id": session},
        "Turn": {"id": middle},
        "TurnUses": {"id": middle},
        "Transcript": {"id": middle},
        "Records": {"id": agent},
        "Record": {
            "id": (await api(docs["Records"], id=agent))["agent"]["memoryRecords"]["edges"][0][
                "node"
            ]["id"]
        },
        "Search": {"id": agent, "q": "what was said about the garden"},
        "Config": {"id": agent},
        "AgentUsage": {"id": agent},
        "HistorySearch": {"ns": "bench", "q": "what was said about the garden", "agent": agent},
    }
    asks["Records as of a turn"] = {"id": agent, "asOf": {"turnId": middle}}
    out: dict[str, float] = {}
    for name, variables in asks.items():
        document = docs[name.split(" ")[0]]
        times = []
        for _ in range(5):
            started = time.perf_counter()
            await api(document, **variables)
            times.append(1000 * (time.perf_counter() - started))
        out[name] = sorted(times)[2]
    return out


def run(quick: bool) -> dict[str, Any]:
    return asyncio.run(_run(quick))


__all__ = ["CONFIG", "dashboard_documents", "run", "write_session"]
