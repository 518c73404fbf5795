"""What a committed turn keeps (R60, R61), its parts (R62), and the commit as one
transaction: the turn, its memory and its history land together or not at all."""

from __future__ import annotations

import dataclasses
import itertools
import math
import uuid
from typing import Any

import numpy as np
from sqlalchemy import text

from tests.api.history_scenario import (
    HISTORY_EVENT,
    HistoryScenario,
    agent,
    history_config,
    result,
    user,
)
from tests.api.scenario import COMMIT, HELPER, READ
from tests.conftest import Api

TURN = "query($id: ID!) { turn(id: $id) { status memories { id } } }"
MEMORY = "query($id: ID!) { agentMemory(id: $id) { id status } }"


def _kept(nodes: list[dict[str, Any]]) -> list[tuple[str, str | None, bool, str]]:
    """(role, tool, isError, text) of kept events, in transcript order."""
    return [
        (n["role"], n["toolName"], n["isError"], n["text"])
        for n in sorted(nodes, key=lambda n: (n["turnNumber"], n["sequence"]))
    ]


async def _conversation(s: HistoryScenario, turn: str) -> None:
    await s.record(
        turn,
        user("My account is A-4417"),
        agent("Looking it up", ("c1", "lookup_account", {"id": "A-4417"})),
        result("c1", "balance 1200 EUR"),
        agent(None, ("c2", "lookup_orders", {"id": "A-4417"})),
        result("c2", "orders service timed out", error=True),
        {"type": "SKILL_LOAD", "name": "billing", "text": "Billing skill instructions"},
        {"type": "RETRIEVAL", "name": "recall", "text": "memory: customer prefers email"},
        agent("Your balance is 1200 EUR"),
    )


async def test_r60_messages_keeps_the_message_and_replies_with_their_calls(api: Api) -> None:
    """R60 ``messages``: the incoming message and each reply with the tools it called;
    no tool results or errors, no skill loads, no retrievals."""
    s = HistoryScenario(api)
    await s.agent(history_config("messages"))
    session = await s.session()
    turn = await s.turn(session)
    await _conversation(s, turn)
    await s.commit(turn)
    nodes = await s.history(session)
    assert _kept(nodes) == [
        ("USER", None, False, "My account is A-4417"),
        ("AGENT", None, False, 'Looking it up\ncalls lookup_account({"id": "A-4417"})'),
        ("AGENT", None, False, 'calls lookup_orders({"id": "A-4417"})'),
        ("AGENT", None, False, "Your balance is 1200 EUR"),
    ]
    reply = next(n for n in nodes if n["text"].startswith("Looking"))
    assert reply["toolCalls"] == [
        {"id": "c1", "name": "lookup_account", "arguments": {"id": "A-4417"}}
    ]
    assert reply["header"] == "turn 1, agent"
    assert reply["execution"]["kind"] == "TURN" and reply["turn"]["status"] == "COMMITTED"
    assert reply["transcriptEvent"]["type"] == "AGENT_MESSAGE"
    assert reply["transcriptEvent"]["sequence"] == reply["sequence"]


async def test_r60_messages_and_tools_also_keeps_results_and_errors(api: Api) -> None:
    """R60 ``messages_and_tools``: also the tools' results and errors, each naming its call."""
    s = HistoryScenario(api)
    await s.agent(history_config("messages_and_tools"))
    session = await s.session()
    turn = await s.turn(session)
    await _conversation(s, turn)
    await s.commit(turn)
    nodes = await s.history(session)
    assert _kept(nodes) == [
        ("USER", None, False, "My account is A-4417"),
        ("AGENT", None, False, 'Looking it up\ncalls lookup_account({"id": "A-4417"})'),
        ("TOOL", "lookup_account", False, "balance 1200 EUR"),
        ("AGENT", None, False, 'calls lookup_orders({"id": "A-4417"})'),
        ("TOOL", "lookup_orders", True, "orders service timed out"),
        ("AGENT", None, False, "Your balance is 1200 EUR"),
    ]
    error = next(n for n in nodes if n["isError"])
    assert error["header"] == "turn 1, tool lookup_orders"
    assert error["toolCallId"] == "c2"
    assert error["call"] == {"id": "c2", "name": "lookup_orders", "arguments": {"id": "A-4417"}}


async def test_r60_history_off_keeps_nothing(api: Api) -> None:
    """R60: without harness.history a committed turn keeps nothing."""
    s = HistoryScenario(api)
    await s.agent(history_config(None))
    session = await s.session()
    turn = await s.turn(session)
    await _conversation(s, turn)
    await s.commit(turn)
    assert await s.history(session) == []


async def test_r60_native_tools_writes_kept_retrievals_never(api: Api) -> None:
    """R60: a native add_memory/delete_memory result (or refusal) is a kept tool result, linked
    to its call when the runtime names it; read_memory and search_history are the agent's own
    retrievals and are never kept, nor is a runtime result of a retrieval tool."""
    s = HistoryScenario(api)
    await s.agent(history_config(kinds=["fact"]))
    session = await s.session()
    first = await s.committed_turn(session, user("hello"))
    turn = await s.turn(session)
    added = await s.add(turn, "Customer lives in Lisbon")
    record = added["memories"][0]["recordId"]
    refused = await api.execute(
        'mutation($t: ID!) { addMemory(input: {turnId: $t, summary: "x", kind: "nope"}) '
        "{ execution { id } } }",
        t=turn,
    )
    assert refused.errors and refused.errors[0].extensions["code"] == "NOT_ALLOWED"
    read = await api.ok(READ, turn=turn, id=record)
    searched = await s.search(turn, "hello")
    assert searched["results"] and first
    deleted = await api.ok(
        "mutation($t: ID!, $id: ID!) { deleteMemory(input: {turnId: $t, id: $id}) "
        "{ execution { id } } }",
        t=turn,
        id=record,
    )
    await s.record(
        turn,
        agent(
            None,
            ("c1", "add_memory", {"summary": "Customer lives in Lisbon"}),
            ("c2", "read_memory", {"id": record}),
            ("c3", "search_memory", {"query": "x"}),
        ),
        result("c1", execution=added["execution"]["id"]),
        result("c2", execution=read["readMemory"]["execution"]["id"]),
        result("c3", "memory: Customer lives in Lisbon"),
    )
    await s.commit(turn)
    kept = [n for n in await s.history(session, turnNumber=2) if n["role"] == "TOOL"]
    by_tool: dict[str, list[dict[str, Any]]] = {}
    for n in kept:
        by_tool.setdefault(n["toolName"], []).append(n)
    assert sorted(by_tool) == ["add_memory", "delete_memory"]
    assert len(by_tool["add_memory"]) == 2  # the saved record, linked; and the refusal
    saved = next(n for n in by_tool["add_memory"] if not n["isError"])
    assert saved["call"]["id"] == "c1" and saved["execution"]["id"] == added["execution"]["id"]
    assert "Customer lives in Lisbon" in saved["text"] and record in saved["text"]
    refusal = next(n for n in by_tool["add_memory"] if n["isError"])
    assert "kind" in refusal["text"] and refusal["call"] is None
    (gone,) = by_tool["delete_memory"]
    assert gone["execution"]["id"] == deleted["deleteMemory"]["execution"]["id"]
    assert gone["text"].startswith("deleted ")


async def test_r60_a_helpers_conversation_is_its_own(api: Api) -> None:
    """R60: only the agent's own conversation is kept, not a helper's."""
    s = HistoryScenario(api)
    await s.agent(history_config())
    session = await s.session()
    turn = await s.turn(session)
    helper = (await api.ok(HELPER, turn=turn, kind="HELPER"))["startExecution"]["execution"]["id"]
    await s.record(turn, user("helper task brief"), execution=helper)
    await s.record(turn, user("agent message"))
    await s.commit(turn)
    assert [n["text"] for n in await s.history(session)] == ["agent message"]


async def test_r61_only_a_committed_attempt_is_kept(api: Api) -> None:
    """R61: an open turn keeps nothing yet; a failed or rolled-back attempt never; the retried
    attempt keeps its own events under the same turn number."""
    s = HistoryScenario(api)
    await s.agent(history_config())
    session = await s.session()
    failed = await s.turn(session)
    await s.record(failed, user("attempt one says walrus"))
    assert await s.history(session) == []
    await api.ok("mutation($t: ID!) { failTurn(input: {turnId: $t}) { turn { id } } }", t=failed)
    retry = await s.begin(session, retryOf=failed)
    await s.record(retry["turn"]["id"], user("attempt two says narwhal"))
    await s.commit(retry["turn"]["id"])
    rolled = await s.turn(session)
    await s.record(rolled, user("rolled back says platypus"))
    await s.rollback(rolled)
    nodes = await s.history(session)
    assert [(n["turnNumber"], n["turn"]["attempt"], n["text"]) for n in nodes] == [
        (1, 2, "attempt two says narwhal")
    ]


async def test_replay_keeps_nothing(api: Api) -> None:
    """A replay re-runs a turn its original already kept: its own events are not kept."""
    s = HistoryScenario(api)
    await s.agent(history_config())
    session = await s.session()
    original = await s.committed_turn(session, user("the original message"))
    replay = await s.turn(session, replayOf=original)
    await s.record(replay, user("the replayed message"))
    await s.commit(replay)
    assert [n["text"] for n in await s.history(session)] == ["the original message"]


async def test_r62_a_long_event_is_kept_in_overlapping_parts_that_fit_the_model(
    api: Api,
) -> None:
    """R62: a long event is cut into parts of at most 200 word pieces, neighbours sharing a
    few; together they hold every word of the event, in order."""
    s = HistoryScenario(api)
    await s.agent(history_config())
    session = await s.session()
    words = [f"item{i}" for i in range(700)]
    long = " ".join(words)
    await s.committed_turn(session, user(long))
    (event,) = await s.history(session)
    parts = event["parts"]
    assert event["text"] == long
    assert len(parts) > 3 and [p["part"] for p in parts] == list(range(1, len(parts) + 1))
    assert {p["parts"] for p in parts} == {len(parts)}
    tokenizer = api.embedder._model.tokenizer
    for p in parts:
        assert len(tokenizer(p["text"], add_special_tokens=False)["input_ids"]) <= 200
    for a, b in itertools.pairwise(parts):
        assert 0 < len(set(a["text"].split()) & set(b["text"].split())) < 40
    seen = [w for p in parts for w in p["text"].split()]
    assert sorted(set(seen), key=seen.index) == words
    one = await api.ok(HISTORY_EVENT, id=event["id"])
    assert one["historyEvent"]["parts"] == parts


async def test_r62_each_part_is_stored_with_the_models_own_vector(api: Api) -> None:
    """A turn's vectors travel to PostgreSQL together, in binary: what each part stores
    is the model's vector for that part's text, float for float, whether its event is cut
    into one part or several."""
    s = HistoryScenario(api)
    await s.agent(history_config())
    session = await s.session()
    turn = await s.turn(session)
    tag = uuid.uuid4().hex
    long = " ".join(f"{tag} item{i}" for i in range(300))
    messages = [f"the invoice {tag} was paid on Tuesday", long, f"thanks, {tag} is closed"]
    await s.record(turn, *(user(m) for m in messages))
    await s.commit(turn)
    async with api.database.session() as db:
        rows = (
            await db.execute(
                text(
                    "SELECT p.text, p.embedding::text FROM history_parts p "
                    "JOIN history_events e ON e.id = p.event_id AND e.agent_id = p.agent_id "
                    "WHERE p.session_id = :s ORDER BY e.sequence, p.part"
                ),
                {"s": session},
            )
        ).all()
    assert len(rows) > len(messages)  # the long message is cut into several parts
    assert rows[0][0] == messages[0] and rows[-1][0] == messages[-1]
    for part, stored in rows:
        vector, _ = await api.embedder.embed_one(part)
        # pgvector prints a float4 in its shortest form, which reads back to the same float4
        floats = np.array(stored.strip("[]").split(","), dtype=np.float32)
        assert np.array_equal(floats, np.array(vector, dtype=np.float32)), part[:40]


async def test_r62_a_turns_parts_are_embedded_in_one_batch(api: Api) -> None:
    """Keeping embeds every part of the turn in one call: passes of the model's batch
    size, not a forward pass per event."""
    s = HistoryScenario(api)
    await s.agent(history_config())
    session = await s.session()
    turn = await s.turn(session)
    tag = uuid.uuid4().hex
    await s.record(turn, *(user(f"message {i} of batch {tag}") for i in range(20)))
    before = api.embedder.forward_passes
    await s.commit(turn)
    batches = math.ceil(20 / api.embedder.batch_size)
    assert api.embedder.forward_passes - before == batches < 20
    assert len(await s.history(session)) == 20


async def test_commit_lands_turn_memory_and_history_together_or_not_at_all(api: Api) -> None:
    """R12, R61: when keeping the history fails inside the commit (here a real CHECK
    constraint refuses the part), the commit fails whole: the turn stays open, its memory
    unpublished, nothing kept. Once the cause is gone, the same commit lands all three."""
    s = HistoryScenario(api)
    await s.agent(history_config())
    session = await s.session()
    turn = await s.turn(session)
    record = await s.add_id(turn, "The customer prefers phone calls")
    poison = f"poison{uuid.uuid4().hex}"
    await s.record(turn, user("first message is fine"), user(f"this one holds {poison}"))
    constraint = f"history_test_{poison}"
    assert api.database.engine is not None
    async with api.database.engine.begin() as conn:
        await conn.execute(
            text(
                f"ALTER TABLE history_parts ADD CONSTRAINT {constraint} "
                f"CHECK (text NOT LIKE '%{poison}%') NOT VALID"
            )
        )
    try:
        result_ = await api.execute(COMMIT, turn=turn)
        assert result_.errors and result_.errors[0].extensions["code"] == "INTERNAL"
        assert (await api.ok(TURN, id=turn))["turn"]["status"] == "OPEN"
        _, ext = await api.error(MEMORY, id=record)
        assert ext["code"] == "NOT_FOUND"  # not published
        assert await s.history(session) == []
    finally:
        async with api.database.engine.begin() as conn:
            await conn.execute(text(f"ALTER TABLE history_parts DROP CONSTRAINT {constraint}"))
    await s.commit(turn)
    assert (await api.ok(TURN, id=turn))["turn"]["status"] == "COMMITTED"
    assert (await api.ok(MEMORY, id=record))["agentMemory"]["status"] == "ACTIVE"
    kept = await s.history(session)
    assert sorted(n["toolName"] or n["text"] for n in kept) == [
        "add_memory",
        "first message is fine",
        f"this one holds {poison}",
    ]


async def test_r61_what_was_embedded_before_the_commit_is_redone_if_the_turn_grew(
    api: Api,
) -> None:
    """R61: committing embeds the turn's kept events before it locks the turn; an event
    recorded after that embedding and before the lock is kept too (the work is redone),
    and an unchanged turn keeps exactly what was prepared."""
    from server.services import history, turns

    only = f"only message {uuid.uuid4().hex[:8]}"
    s = HistoryScenario(api)
    await s.agent(history_config())
    session = await s.session()
    grown, unchanged = await s.turn(session), await s.turn(session)
    await s.record(grown, user("first message"))
    await s.record(unchanged, user(only))
    assert api.database.sessionmaker is not None
    async with api.database.sessionmaker() as db:
        early = await history.prepare_keep(db, api.embedder, turn_id=uuid.UUID(grown))
        same = await history.prepare_keep(db, api.embedder, turn_id=uuid.UUID(unchanged))
        await db.rollback()
    assert early is not None and [k.text for k in early.kept] == ["first message"]
    assert same is not None
    # marked vectors show which embedding the unchanged turn's parts were written with
    marker, _ = await api.embedder.embed_one("a marker, not the message")
    same = dataclasses.replace(same, vectors=[marker] * len(same.vectors))
    await s.record(grown, agent("a reply recorded after the embedding"))
    for turn_id, prepared in ((grown, early), (unchanged, same)):
        async with api.database.sessionmaker() as db:
            turn = await turns.commit_turn(db, turn_id=uuid.UUID(turn_id))
            await history.keep_turn(db, api.embedder, turn=turn, prepared=prepared)
            await db.commit()
    assert sorted(_kept(await s.history(session))) == sorted(
        [
            ("USER", None, False, "first message"),
            ("AGENT", None, False, "a reply recorded after the embedding"),
            ("USER", None, False, only),
        ]
    )
    async with api.database.sessionmaker() as db:
        stored = await db.scalar(
            text("SELECT embedding <=> CAST(:m AS vector) FROM history_parts WHERE text = :t"),
            {"m": str(marker), "t": only},
        )
    assert stored is not None and stored < 1e-6
