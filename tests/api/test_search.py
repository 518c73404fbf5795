"""searchMemory through the schema (R40, R41, R43, R6, R14, R23, R24).

Ranked search and newest-first listing with every argument and filter, pagination
while records are written, what each search records (execution, RETRIEVED uses,
``embed`` usage), and refusals.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from sqlalchemy import and_, func, select

from bench.anatomy import counted
from server.domain.visibility import Purpose, version_in_force
from server.memory_search import ranking as memory_ranking
from server.models import Execution, Invocation, MemoryRecord, MemoryVersion, OutputUse
from server.services import memory_api
from server.storage.nearest import Path
from tests.api import test_visibility_property as vis
from tests.api.scenario import HELPER, Scenario, label_list, memory_config, turn_view
from tests.conftest import Api

SEARCH = """
mutation($turn: ID!, $q: String, $kind: String, $labels: [LabelInput!], $ids: [ID!],
         $limit: Int, $after: String, $execution: ID, $invocation: ID, $key: String) {
  searchMemory(input: {turnId: $turn, query: $q, kind: $kind, labels: $labels, ids: $ids,
                       limit: $limit, after: $after, executionId: $execution,
                       invocationId: $invocation, idempotencyKey: $key}) {
    execution { id name kind status input output parent { id } }
    results {
      score cosine lexical
      version { id recordId summary kind labels status }
      record { id status scope preview }
    }
    nextCursor
  }
}"""

LABELS = {
    "project": {"number": 5, "description": "which project"},
    "priority": {"number": 6, "description": "how urgent"},
}
KINDS = ["fact", "event", "guidance"]
PATHS: tuple[Path, ...] = ("exact", "bits", "index")

NOTES = [
    (
        "The tomato plants in the back garden need watering every morning",
        "fact",
        {"project": "garden"},
    ),
    ("Alice prefers window seats on long flights", "fact", {"project": "travel"}),
    (
        "Quarterly budget report is due on the last Friday of March",
        "event",
        {"project": "finance", "priority": "high"},
    ),
    (
        "Always answer finance questions with a short summary first",
        "guidance",
        {"project": "finance"},
    ),
    ("Booked a flight to Lisbon for the conference in June", "event", {"project": "travel"}),
    ("The dog gets a walk in the park after dinner", "fact", {}),
]


# Shares no word with NOTES[0] (the tomato plants), close to it in meaning.
MEANING_ONLY = "irrigating crops daily"
DELETE = """
mutation($turn: ID!, $id: ID!) {
  deleteMemory(input: {turnId: $turn, id: $id}) { execution { id } }
}"""


def search_config(**search: Any) -> dict[str, Any]:
    config = memory_config(
        read=["session", "agent"], write=["session", "agent"], labels=LABELS, kinds=KINDS
    )
    if search:
        config["harness"]["memory"]["search"] = search
    return config


BEGIN_VERSION = """
mutation($session: ID!, $version: ID) {
  beginTurn(input: {sessionId: $session, agentVersionId: $version}) {
    turn { id } execution { id }
  }
}"""
# The versions the shared agent publishes, by name: harness.memory.search of each.
VERSIONS: dict[str, dict[str, Any]] = {
    "vector": {"mode": "vector", "min_score": 0.1},
    "lexical": {"mode": "lexical"},
    "strict": {"min_score": 0.99},
    "open": {"min_score": -1.0},
    "default": {},
}


async def seeded(
    api: Api, config: dict[str, Any] | None = None
) -> tuple[Scenario, str, dict[str, str]]:
    """An agent with the NOTES committed in one session; the record ids by summary."""
    s = Scenario(api)
    await s.agent(config or search_config())
    session = await s.session()
    turn = await s.turn(session)
    ids = {}
    for summary, kind, labels in NOTES:
        ids[summary] = await s.add_id(turn, summary, kind=kind, labels=labels, scope="AGENT")
    await s.commit(turn)
    return s, session, ids


@dataclass
class World:
    """One agent with the NOTES, shared by the tests that only read it."""

    scenario: Scenario
    session: str
    ids: dict[str, str]
    versions: dict[str, str]

    async def turn(self, version: str = "default") -> str:
        begun = await self.scenario.api.ok(
            BEGIN_VERSION, session=self.session, version=self.versions[version]
        )
        return str(begun["beginTurn"]["turn"]["id"])


@pytest.fixture(scope="module")
async def world(api: Api) -> World:
    s, session, ids = await seeded(api)
    versions = {
        name: (await s.publish(search_config(**cfg)))["id"] for name, cfg in VERSIONS.items()
    }
    return World(scenario=s, session=session, ids=ids, versions=versions)


def _vars(kw: dict[str, Any]) -> dict[str, Any]:
    if "query" in kw:
        kw["q"] = kw.pop("query")
    if isinstance(kw.get("labels"), dict):
        kw["labels"] = label_list(kw["labels"])
    return kw


async def search(api: Api, turn: str, **kw: Any) -> dict[str, Any]:
    return dict((await api.ok(SEARCH, turn=turn, **_vars(kw)))["searchMemory"])


def summaries(result: dict[str, Any]) -> list[str]:
    return [r["version"]["summary"] for r in result["results"]]


async def scalar(api: Api, stmt: Any) -> Any:
    async with api.database.session() as db:
        return await db.scalar(stmt)


async def retrieved(api: Api, execution: str) -> list[tuple[str, int]]:
    async with api.database.session() as db:
        rows = (
            await db.execute(
                select(OutputUse.memory_version_id, OutputUse.rank, OutputUse.kind)
                .where(OutputUse.execution_id == uuid.UUID(execution))  # type: ignore[arg-type]
                .order_by(OutputUse.rank)
            )
        ).all()
    assert all(kind == "RETRIEVED" for _, _, kind in rows)
    return [(str(v), rank) for v, rank, _ in rows]


async def embeds(api: Api, execution: str) -> list[tuple[str, int, bool]]:
    async with api.database.session() as db:
        rows = (
            await db.execute(
                select(Invocation.purpose, Invocation.input_tokens, Invocation.counted).where(
                    Invocation.execution_id == uuid.UUID(execution)  # type: ignore[arg-type]
                )
            )
        ).all()
    return [tuple(r) for r in rows]  # type: ignore[misc]


# -- ranking ---------------------------------------------------------------------------


async def test_r40_r41_a_query_ranks_by_meaning_and_words(world: World) -> None:
    """R40, R41: the best match by meaning and words comes first; each result carries its
    record, version and signals; a search returns at most max_results by default."""
    api = world.scenario.api
    turn = await world.turn()
    found = await search(api, turn, query="when is the budget report due?")
    assert summaries(found)[0] == NOTES[2][0]
    top = found["results"][0]
    assert top["record"]["id"] == world.ids[NOTES[2][0]] and top["record"]["status"] == "ACTIVE"
    assert top["lexical"] > 0 and top["cosine"] > 0.3 and top["score"] > 0
    assert len(found["results"]) <= 5 and found["nextCursor"] is None
    garden = await search(api, turn, query=MEANING_ONLY, limit=1)
    assert summaries(garden) == [NOTES[0][0]]  # found by meaning, no word in common
    assert garden["results"][0]["lexical"] is None


async def test_r43_a_search_is_an_execution_with_retrieved_uses_and_embed_usage(
    world: World,
) -> None:
    """R26, R43: the search is an execution of search_memory whose output lists the records
    returned; each returned version is a RETRIEVED use, in rank order; the query's
    embedding is an ``embed`` invocation no limit counts, with a usage event."""
    api = world.scenario.api
    turn = await world.turn()
    found = await search(api, turn, query="flights and travel plans", limit=3)
    execution = found["execution"]
    assert (execution["name"], execution["kind"], execution["status"]) == (
        "search_memory",
        "TOOL",
        "SUCCEEDED",
    )
    assert execution["input"]["query"] == "flights and travel plans"
    assert execution["input"]["limit"] == 3
    output = execution["output"]["records"]
    versions = [r["version"]["id"] for r in found["results"]]
    assert versions and [o["version"] for o in output] == versions
    assert all(o["summary"] and "score" in o for o in output)
    assert await retrieved(api, execution["id"]) == [(v, i) for i, v in enumerate(versions, 1)]
    [(purpose, tokens, counted)] = await embeds(api, execution["id"])
    assert purpose == "embed" and tokens > 0 and counted is False
    view = await turn_view(api, turn)
    usage = [e for e in view["transcript"] if e["type"] == "USAGE"]
    # the payload spells the purpose as the InvocationPurpose enum does, and names the
    # model call as the Invocation type does
    assert usage and usage[0]["payload"]["purpose"] == "EMBED"
    assert {"invocationId", "inputTokens"} <= set(usage[0]["payload"])
    assert usage[0]["execution"]["id"] == execution["id"]
    assert [e["type"] for e in view["transcript"]][-1] == "TOOL_RESULT"


@pytest.mark.parametrize("mode", ["vector", "lexical"])
async def test_r6_r41_single_signal_modes(world: World, mode: str) -> None:
    """R6, R41: ``vector`` ranks by meaning alone (score = cosine), ``lexical`` by words
    alone (score = BM25 keyword score, no embedding, so no embed usage)."""
    api = world.scenario.api
    turn = await world.turn(mode)
    found = await search(api, turn, query="window seats on flights", limit=6)
    assert summaries(found)[0] == NOTES[1][0]
    for r in found["results"]:
        assert r["score"] == (r["cosine"] if mode == "vector" else r["lexical"])
    if mode == "lexical":
        assert all(r["lexical"] > 0 for r in found["results"])
        assert await embeds(api, found["execution"]["id"]) == []
        assert set(summaries(found)) == {NOTES[1][0], NOTES[4][0]}  # "flight" is shared
    else:
        assert len(await embeds(api, found["execution"]["id"])) == 1
        assert all(r["lexical"] is None and r["cosine"] >= 0.1 for r in found["results"])
        assert NOTES[0][0] in summaries(await search(api, turn, query=MEANING_ONLY))


async def test_r41_min_score_bars_matches_by_meaning_alone(world: World) -> None:
    """R6, R41: a record found only by meaning needs cosine >= min_score; a keyword match
    is found whatever its cosine."""
    api = world.scenario.api
    strict = await world.turn("strict")
    assert (await search(api, strict, query=MEANING_ONLY))["results"] == []
    words = await search(api, strict, query="dog")
    assert summaries(words) == [NOTES[5][0]] and words["results"][0]["cosine"] < 0.99
    everything = await search(api, await world.turn("open"), query=MEANING_ONLY, limit=10)
    assert len(everything["results"]) == len(NOTES)


# -- filters -----------------------------------------------------------------------------


async def test_r40_kind_labels_and_ids_filter_ranked_and_listed(world: World) -> None:
    """R40: kind, labels (exact values of declared labels) and ids filter a ranked search
    and a listing alike."""
    api = world.scenario.api
    turn = await world.turn("open")  # every record is a candidate by meaning
    for query in ("finance budget travel", None):
        by_kind = await search(api, turn, query=query, kind="event", limit=10)
        assert set(summaries(by_kind)) == {NOTES[2][0], NOTES[4][0]}
        finance = await search(api, turn, query=query, labels={"project": "finance"}, limit=10)
        assert set(summaries(finance)) == {NOTES[2][0], NOTES[3][0]}
        both = await search(
            api, turn, query=query, labels={"project": "finance", "priority": "high"}, limit=10
        )
        assert summaries(both) == [NOTES[2][0]]
        none = await search(api, turn, query=query, labels={"project": "fin"}, limit=10)
        assert none["results"] == []
        mixed = await search(
            api, turn, query=query, kind="guidance", labels={"project": "finance"}, limit=10
        )
        assert summaries(mixed) == [NOTES[3][0]]
        picked = [world.ids[NOTES[0][0]], world.ids[NOTES[5][0]], str(uuid.uuid4())]
        by_id = await search(api, turn, query=query, ids=picked, limit=10)
        assert {r["record"]["id"] for r in by_id["results"]} == set(picked[:2])
        if query is None:
            assert [r["record"]["id"] for r in by_id["results"]] == picked[1::-1]


async def test_r40_listing_is_newest_first_with_scores_absent(world: World) -> None:
    """R40: without a query, records come newest first, unscored, and nothing is embedded."""
    api = world.scenario.api
    turn = await world.turn()
    listed = await search(api, turn, limit=10)
    assert summaries(listed) == [n[0] for n in reversed(NOTES)]
    assert all(r["score"] is None and r["cosine"] is None for r in listed["results"])
    assert await embeds(api, listed["execution"]["id"]) == []
    assert len(await retrieved(api, listed["execution"]["id"])) == len(NOTES)


async def test_r40_pages_stay_stable_while_records_are_written(api: Api) -> None:
    """R40: ``after`` continues a listing from the previous page's last record; records
    committed while pages are read (newer) neither repeat nor shift later pages, and
    every record that existed at the start is listed exactly once."""
    s = Scenario(api)
    await s.agent(search_config())
    session = await s.session()
    turn = await s.turn(session)
    for n in range(7):
        await s.add_id(turn, f"note number {n}", scope="AGENT")
    await s.commit(turn)
    reader = await s.turn(session)

    async def write(n: int) -> None:
        writer = await s.turn(session)
        await s.add_id(writer, f"written during page {n}", scope="AGENT")
        await s.commit(writer)

    seen: list[str] = []
    after = None
    pages = 0
    while True:
        page, _ = await asyncio.gather(search(api, reader, limit=3, after=after), write(pages))
        seen += summaries(page)
        pages += 1
        after = page["nextCursor"]
        assert page["execution"]["output"]["next"] == after
        if after is None:
            break
    assert pages == 3
    assert [x for x in seen if x.startswith("note")] == [
        f"note number {n}" for n in range(6, -1, -1)
    ]
    assert len(seen) == len(set(seen))
    fresh = await search(api, reader, limit=100)
    assert len(fresh["results"]) == 7 + pages


# -- who may search, and what ------------------------------------------------------------


async def test_r14_only_active_records_and_the_version_this_turn_sees(api: Api) -> None:
    """R14, R12: deleted and superseded records are never found; a deletion another open
    turn staged is not seen until it commits; the turn that staged it no longer finds it."""
    s, session, ids = await seeded(api)
    turn = await s.turn(session)
    new = "The dog gets a long walk in the park at noon"
    await s.add(turn, new, scope="AGENT", replaces=ids[NOTES[5][0]])
    await api.ok(DELETE, turn=turn, id=ids[NOTES[1][0]])
    other = await s.turn(session)
    for query in ("dog walk park window seats", None):
        mine = set(summaries(await search(api, turn, query=query, limit=10)))
        theirs = set(summaries(await search(api, other, query=query, limit=10)))
        assert NOTES[5][0] not in mine and NOTES[1][0] not in mine and new in mine
        assert NOTES[5][0] in theirs and NOTES[1][0] in theirs and new not in theirs
    await s.commit(turn)
    listed = summaries(await search(api, await s.turn(session), limit=20))
    assert NOTES[5][0] not in listed and NOTES[1][0] not in listed and new in listed


async def test_r10_r11_r13_no_record_of_another_agent_session_or_preview(api: Api) -> None:
    """R10, R11, R13: a search never finds another agent's records, another session's
    session-scope records, or (in a live turn) preview records."""
    s = Scenario(api)
    await s.agent(search_config())
    session, second = await s.session(), await s.session()
    shared = await s.committed("Tomato plants need water", session, scope="AGENT")
    other_agent = Scenario(api)
    await other_agent.agent(search_config())
    await other_agent.committed(
        "Tomato plants of another agent", await other_agent.session(), scope="AGENT"
    )
    await s.committed("Tomato sauce recipe of session two", second, scope="SESSION")
    preview = await s.turn(session, preview=True)
    await s.add_id(preview, "Tomato soup in preview", scope="AGENT")
    await s.commit(preview)
    for turn, want in [
        (await s.turn(session), {shared}),
        (await s.turn(session, preview=True), {shared, "Tomato soup in preview"}),
        (await s.turn(second), {shared, "Tomato sauce recipe of session two"}),
    ]:
        for query in ("tomato", None):
            found = await search(api, turn, query=query, limit=50)
            got = {
                r["record"]["id"] if r["record"]["id"] == shared else r["version"]["summary"]
                for r in found["results"]
            }
            assert got == want, (query, got)


async def test_r23_helpers_and_programs_may_search(world: World) -> None:
    """R23: a helper's or program's search is its own execution, child of the caller."""
    api = world.scenario.api
    turn = await world.turn()
    for kind in ("HELPER", "PROGRAM"):
        helper = (await api.ok(HELPER, turn=turn, kind=kind))["startExecution"]["execution"]["id"]
        found = await search(api, turn, query="budget", execution=helper)
        assert found["execution"]["parent"]["id"] == helper
        assert summaries(found)[0] == NOTES[2][0]


async def test_r43_invocation_and_idempotency_key(world: World) -> None:
    """The model call that asked is checked; the same idempotency key returns the first
    result and records nothing more."""
    api = world.scenario.api
    begun = (await api.ok(BEGIN_VERSION, session=world.session, version=world.versions["default"]))[
        "beginTurn"
    ]
    turn, execution = begun["turn"]["id"], begun["execution"]["id"]
    invocation = (
        await api.ok(
            "mutation($e: ID!) { recordInvocation(input: {executionId: $e, purpose: TURN,"
            ' model: "m"}) { invocation { id } } }',
            e=execution,
        )
    )["recordInvocation"]["invocation"]["id"]
    key = f"k-{uuid.uuid4()}"
    first = await search(api, turn, query="budget", invocation=invocation, key=key)
    again = await search(api, turn, query="budget", invocation=invocation, key=key)
    assert again == first
    count = (
        select(func.count())
        .select_from(Execution)
        .where(
            Execution.turn_id == uuid.UUID(turn),
            Execution.name == "search_memory",  # type: ignore[arg-type]
        )
    )
    assert await scalar(api, count) == 1
    message, ext = await api.error(SEARCH, turn=turn, q="budget", invocation=str(uuid.uuid4()))
    assert ext["code"] == "NOT_FOUND" and "invocation" in message


# -- refusals ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (
            {"labels": [{"name": "project", "value": "a"}, {"name": "project", "value": "b"}]},
            "labels",
        ),
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"query": "   "}, "query"),
        ({"query": "x" * 2001}, "query"),
        ({"query": "budget", "after": "abc"}, "after"),
        ({"after": "not-a-cursor"}, "after"),
        ({"ids": []}, "ids"),
    ],
)
async def test_r24_bad_arguments_are_refused_and_recorded_failed(
    world: World, args: dict[str, Any], field: str
) -> None:
    """R24: a bad argument is a BAD_INPUT error; the failed execution is recorded with a
    tool.error, and nothing is retrieved or embedded."""
    api = world.scenario.api
    turn = await world.turn()
    message, ext = await api.error(SEARCH, turn=turn, **_vars(dict(args)))
    assert ext["code"] == "BAD_INPUT" and ext.get("field") == field, (message, ext)
    view = await turn_view(api, turn)
    runs = [e for e in view["executions"] if e["name"] == "search_memory"]
    if isinstance(args.get("labels"), list):
        assert runs == []  # refused before the tool ran
        return
    [run] = runs
    assert run["status"] == "FAILED" and run["invocations"] == []
    assert view["transcript"][-1]["type"] == "TOOL_ERROR"
    assert await retrieved(api, run["id"]) == []


@pytest.mark.parametrize(
    ("args", "field"), [({"kind": "opinion"}, "kind"), ({"labels": {"colour": "red"}}, "labels")]
)
async def test_r3_r4_r24_undeclared_kind_or_label_is_not_allowed(
    world: World, args: dict[str, Any], field: str
) -> None:
    """R24: filtering by a kind or label the configuration does not declare is NOT_ALLOWED,
    as add_memory refuses it; the failed execution is recorded, nothing is retrieved."""
    api = world.scenario.api
    turn = await world.turn()
    message, ext = await api.error(SEARCH, turn=turn, **_vars(dict(args)))
    assert ext["code"] == "NOT_ALLOWED" and ext.get("field") == field, (message, ext)
    view = await turn_view(api, turn)
    [run] = [e for e in view["executions"] if e["name"] == "search_memory"]
    assert run["status"] == "FAILED" and run["invocations"] == []
    assert await retrieved(api, run["id"]) == []


async def test_r1_r24_closed_turn_and_disabled_memory_are_refused(api: Api) -> None:
    """R1: with memory disabled search fails clearly; a closed turn is a conflict."""
    s = Scenario(api)
    await s.agent(search_config())
    session = await s.session()
    turn = await s.turn(session)
    await s.commit(turn)
    _, ext = await api.error(SEARCH, turn=turn, q="budget")
    assert ext["code"] == "CONFLICT"
    await s.publish(memory_config(enabled=False, labels=LABELS, kinds=KINDS))
    turn = await s.turn(session)
    message, ext = await api.error(SEARCH, turn=turn, q="budget")
    assert ext["code"] == "NOT_ALLOWED" and "enabled" in message


async def test_search_takes_a_bounded_number_of_statements(world: World) -> None:
    """A ranked search is a fixed, small number of statements whatever the result size."""
    api = world.scenario.api
    turn = await world.turn("open")
    await search(api, turn, query="warm", limit=1)  # the turn's facts, the agent's path
    counts = []
    for limit in (1, 6):
        with counted(api.database) as wire:
            found = await search(api, turn, query="budget flights garden", limit=limit)
        assert len(found["results"]) == limit
        counts.append(len(wire.statements))
    assert counts[0] == counts[1] and counts[0] <= 30, counts


# -- visibility through search, against the pure reference ---------------------------


@settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
@given(data=st.data())
async def test_r10_r14_search_finds_exactly_what_the_gate_allows(
    api: Api, data: st.DataObject
) -> None:
    """R10-R14: for random agents, sessions, live and preview turns, records written,
    replaced, deleted, committed and rolled back, every open turn's search (ranked and
    listed) returns exactly the records ``visible_records`` allows for search, each in
    the version that turn sees (R12: the prior one while another turn stages a change).
    The ranking finds them whichever way it finds its candidates by meaning: exactly,
    by the embedding's bits (an index-only scan of the gate's columns), or on the HNSW
    index (the gate applied above the index scan)."""
    world = vis.World(scenario=Scenario(api))
    await vis.make_agent(world, sessionless=False)
    await vis.make_agent(world, sessionless=data.draw(st.booleans(), label="sessionless"))
    for n in range(data.draw(st.integers(6, 14), label="steps")):
        action = data.draw(st.sampled_from(vis.ACTIONS), label="action")
        if action == "begin" or not world.open_turns:
            await vis.begin(world, data)
            continue
        turn = data.draw(st.sampled_from(world.open_turns), label="turn")
        if action == "add":
            await vis.add(world, data, turn, n)
        elif action == "delete" and world.record_ids:
            await vis.delete(world, data, turn)
        elif action == "end":
            await vis.end(world, data, turn)
    await vis.begin(world, data)
    for agent in world.agents:
        await _settled_agrees_with_records(api, str(agent))
    rows = await vis.load_rows(api, world.agents)
    by_id = {r.facts.id: r for r in rows}
    for turn in world.open_turns:
        reader = world.readers[turn]
        allowed = vis.ids(reader, rows, Purpose.SEARCH)
        for query in ("note", None):
            found = await search(api, str(turn), query=query, limit=100)
            got = {uuid.UUID(r["record"]["id"]): r["version"]["id"] for r in found["results"]}
            assert set(got) == allowed, (reader, query)
            for record, version in got.items():
                assert version == str(version_in_force(reader, by_id[record].facts))
        vector, _ = await api.embedder.embed_one("note")
        for path in PATHS:
            async with api.database.session() as db:
                query = memory_ranking.MemoryQuery("note", vector, "vector", -1.0, 100, path=path)
                ranked = await memory_ranking.ranked(db, reader, query)
                by_path = {f.record.id: str(f.version.id) for f in ranked}
            assert by_path == {uuid.UUID(str(r)): v for r, v in got.items()}, (reader, path)


# -- the gate's answer kept on versions (migration 0005) ----------------------------------


async def _search_scopes(api: Api, agent: str) -> dict[str, list[tuple[int, str | None]]]:
    """``search_scope`` of each version of the agent's records: record id → [(number, it)]."""
    async with api.database.session() as db:
        rows = (
            await db.execute(
                select(MemoryVersion.record_id, MemoryVersion.number, MemoryVersion.search_scope)
                .where(MemoryVersion.agent_id == uuid.UUID(agent))  # type: ignore[arg-type]
                .order_by(MemoryVersion.record_id, MemoryVersion.number)
            )
        ).all()
    out: dict[str, list[tuple[int, str | None]]] = {}
    for record, number, scope in rows:
        out.setdefault(str(record), []).append((number, scope))
    return out


async def _settled_agrees_with_records(api: Api, agent: str) -> None:
    """Every settled version says what the gate decides from its record (R10-R14)."""
    async with api.database.session() as db:
        rows = (
            await db.execute(
                select(MemoryVersion, MemoryRecord)
                .join(
                    MemoryRecord,
                    and_(
                        MemoryRecord.id == MemoryVersion.record_id,  # type: ignore[arg-type]
                        MemoryRecord.agent_id == MemoryVersion.agent_id,  # type: ignore[arg-type]
                    ),
                )
                .where(MemoryVersion.agent_id == uuid.UUID(agent))  # type: ignore[arg-type]
            )
        ).all()
    for v, r in rows:
        steady = r.committed and not r.preview and r.pending_turn_id is None
        if v.search_scope is None:
            assert not steady or r.scope == "SESSION", (v, r)
            continue
        assert steady, (v, r)
        in_force = r.status == "ACTIVE" and r.current_version_id == v.id
        assert v.search_scope == (r.scope if in_force else "NONE"), (v, r)


async def test_r12_r14_search_scope_follows_every_change_of_a_record(api: Api) -> None:
    """R12, R13, R14, R71: ``search_scope`` (what searches filter on instead of joining
    records) follows a write, a commit, a staged change, a rollback, a committed delete, an
    API delete and a preview turn; a searching turn finds what it says."""
    s = Scenario(api)
    agent = await s.agent(search_config())
    session = await s.session()
    turn = await s.turn(session)
    kept = await s.add_id(turn, "Kept note about tomatoes", scope="AGENT")
    mine = await s.add_id(turn, "Session note about tomatoes", scope="SESSION")
    gone = await s.add_id(turn, "Deleted note about tomatoes", scope="AGENT")
    api_gone = await s.add_id(turn, "Note about tomatoes the API deletes", scope="AGENT")
    assert {k: v[0][1] for k, v in (await _search_scopes(api, agent)).items()} == dict.fromkeys(
        (kept, mine, gone, api_gone)
    )  # written, not committed: the gate decides per reader
    await s.commit(turn)
    scopes = await _search_scopes(api, agent)
    assert scopes[kept] == [(1, "AGENT")] and scopes[mine] == [(1, "SESSION")]

    staging = await s.turn(session)
    await api.ok(DELETE, turn=staging, id=gone)
    await s.add(staging, "Replacement note about tomatoes", scope="AGENT", replaces=kept)
    scopes = await _search_scopes(api, agent)
    assert scopes[gone] == [(1, None), (2, None)] and scopes[kept] == [(1, None), (2, None)]
    other = await s.turn(session)
    found = set(summaries(await search(api, other, query="tomatoes", limit=20)))
    assert {"Kept note about tomatoes", "Deleted note about tomatoes"} <= found
    await s.rollback(staging)
    scopes = await _search_scopes(api, agent)
    assert scopes[gone] == [(1, "AGENT")] and scopes[kept] == [(1, "AGENT")]

    deleting = await s.turn(session)
    await api.ok(DELETE, turn=deleting, id=gone)
    await s.commit(deleting)
    assert (await _search_scopes(api, agent))[gone] == [(1, "NONE"), (2, "NONE")]
    async with api.database.session() as db:
        await memory_api.delete_record(
            db, record_id=uuid.UUID(api_gone), principal_id=None, caller="test"
        )
        await db.commit()
    assert (await _search_scopes(api, agent))[api_gone] == [(1, "NONE"), (2, "NONE")]

    preview = await s.turn(session, preview=True)
    previewed = await s.add_id(preview, "Preview note about tomatoes", scope="AGENT")
    await s.commit(preview)
    assert (await _search_scopes(api, agent))[previewed] == [(1, None)]
    await _settled_agrees_with_records(api, agent)
    found = set(summaries(await search(api, await s.turn(session), query="tomatoes", limit=20)))
    assert found == {"Kept note about tomatoes", "Session note about tomatoes"}
    elsewhere = await s.turn(await s.session())
    found = set(summaries(await search(api, elsewhere, query="tomatoes", limit=20)))
    assert found == {"Kept note about tomatoes"}
