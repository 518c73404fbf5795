"""searchHistory (R62-R64): results, parts and ids, the call a tool result answers,
recording (R63), the turn window of a replay, preview isolation, sessions, and refusals."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import and_, event, select

from server.domain import history as rules
from server.domain.dates import query_periods
from server.domain.history import HistoryReader
from server.domain.ranking import ContextPart, rank_in_context
from server.models import HistoryEvent, HistoryPart, OutputUse
from server.services.history_ranking import context_search
from server.storage import hybrid_run
from tests import bm25_reference as by_hand
from tests.api.history_scenario import (
    SEARCH,
    HistoryScenario,
    agent,
    dated,
    history_config,
    result,
    user,
)
from tests.api.scenario import HELPER
from tests.conftest import Api

TRANSCRIPT = (
    "query($id: ID!) { turn(id: $id) { transcript { sequence type toolName payload "
    "execution { id } } } }"
)


async def _agent(api: Api, index: str | None = "messages_and_tools") -> tuple[HistoryScenario, str]:
    s = HistoryScenario(api)
    await s.agent(history_config(index))
    return s, await s.session()


def _texts(results: list[dict[str, Any]]) -> list[str]:
    return [r["text"] for r in results]


async def test_r62_a_result_is_header_then_text_with_its_execution_and_sequence(
    api: Api,
) -> None:
    """R62: event id, turn, ``turn N, user`` then the text, part/parts, execution, sequence."""
    s, session = await _agent(api)
    turn1 = await s.turn(session)
    (message,) = await s.record(turn1, user("My parcel tracking number is ZX-99812"))
    await s.commit(turn1)
    reader = await s.turn(session)
    (hit,) = [r for r in await s.results(reader, "parcel tracking number") if r["turn"] == 1]
    assert hit["text"] == "turn 1, user\nMy parcel tracking number is ZX-99812"
    assert hit["header"] == "turn 1, user" and hit["role"] == "USER"
    assert (hit["part"], hit["parts"]) == (1, 1)
    assert hit["sequence"] == message["sequence"]
    assert hit["execution"] == message["execution"]
    assert hit["score"] > 0 and hit["call"] is None


async def test_r62_a_tool_result_names_the_call_it_answers(api: Api) -> None:
    """R62: for a tool's result, the call: its id, tool and arguments from the reply."""
    s, session = await _agent(api)
    await s.committed_turn(
        session,
        user("What is the weather in Porto?"),
        agent("Checking", ("call-7", "get_weather", {"city": "Porto", "unit": "C"})),
        result("call-7", "Porto: sunny, 24 degrees"),
    )
    reader = await s.turn(session)
    hits = await s.results(reader, "sunny 24 degrees", limit=10)
    tool = next(r for r in hits if r["role"] == "TOOL")
    assert tool["header"] == "turn 1, tool get_weather"
    assert tool["text"] == "turn 1, tool get_weather\nPorto: sunny, 24 degrees"
    assert tool["call"] == {
        "id": "call-7",
        "name": "get_weather",
        "arguments": {"city": "Porto", "unit": "C"},
    }
    reply = next(n for n in await s.history(session) if n["role"] == "AGENT")
    assert reply["toolCalls"] == [tool["call"]]
    assert reply["text"] == 'Checking\ncalls get_weather({"city": "Porto", "unit": "C"})'


async def test_r62_a_result_is_one_part_and_ids_reads_the_event_whole(api: Api) -> None:
    """R62: a long event is found by one part (``part`` of ``parts``); its id in ``ids``
    returns the whole event, and an id that names no event is left out. An event of
    another session is refused before anything is recorded (R64, docs/security.md,
    "Ownership")."""
    s, session = await _agent(api)
    filler = " ".join(f"filler{i}" for i in range(400))
    long = f"{filler} the vault code is kestrel {filler.replace('filler', 'pad')}"
    await s.committed_turn(session, user(long))
    other_session = await s.session()
    await s.committed_turn(other_session, user("the vault code elsewhere is osprey"))
    (elsewhere,) = await s.history(other_session)
    reader = await s.turn(session)
    hit = next(r for r in await s.results(reader, "kestrel vault code") if "kestrel" in r["text"])
    assert hit["parts"] > 1 and 1 <= hit["part"] <= hit["parts"]
    assert hit["text"].startswith("turn 1, user\n") and long not in hit["text"]
    assert len(hit["event"]["parts"]) == hit["parts"]
    whole = await s.results(reader, ids=[hit["eventId"], str(uuid.uuid4())])
    assert len(whole) == 1
    assert whole[0]["text"] == f"turn 1, user\n{long}"
    assert (whole[0]["part"], whole[0]["parts"], whole[0]["score"]) == (None, hit["parts"], None)
    executions = "query($id: ID!) { turn(id: $id) { executions { id } } }"
    before = await api.ok(executions, id=reader)
    _, ext = await s.search_error(reader, ids=[hit["eventId"], elsewhere["id"]])
    assert ext == {"code": "NOT_FOUND", "field": "ids[1]"}
    assert await api.ok(executions, id=reader) == before  # refused before it was recorded


async def test_r62_only_turns_before_the_current_one(api: Api) -> None:
    """R62: the session's earlier turns only: not the current turn, nor a later turn that
    committed while the current one was open."""
    s, session = await _agent(api)
    await s.committed_turn(session, user("earlier: the dog is called Biscuit"))
    reader = await s.turn(session)
    await s.record(reader, user("current: the dog is called Biscuit"))
    later = await s.committed_turn(session, user("later: the dog is called Biscuit"))
    assert later
    hits = await s.results(reader, "dog called Biscuit", limit=50)
    assert _texts(hits) == ["turn 1, user\nearlier: the dog is called Biscuit"]
    fresh = await s.turn(session)
    assert len(await s.results(fresh, "dog called Biscuit", limit=50)) == 2


_SEARCH_TEXTS = """mutation($turn: ID!, $q: String!) {
  searchHistory(input: {turnId: $turn, query: $q}) { results { text part parts score } } }"""


async def test_a_history_search_reads_history_in_two_statements_with_no_settings(
    api: Api,
) -> None:
    """Parts have no vector index (migration 0006): a history search ranks them by their
    bits and the best of them exactly (migration 0012), with no setting before it (with
    sorts disabled the planner avoided the sorts the ranking needs, docs/scaling.md). It
    reads the session's history in one statement: the ranking (its keywords' BM25 from
    the session's postings) with each part and its event; the resolver shows them
    without reading them again."""
    s, session = await _agent(api)
    await s.committed_turn(session, user("the dog is called Biscuit"))
    reader = await s.turn(session)
    sent: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        sent.append(statement)

    engine = api.database.engine.sync_engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        found = await api.ok(_SEARCH_TEXTS, turn=reader, q="dog called Biscuit")
    finally:
        event.remove(engine, "before_cursor_execute", record)
    hits = found["searchHistory"]["results"]
    assert [(h["text"], h["part"], h["parts"]) for h in hits] == [
        ("turn 1, user\nthe dog is called Biscuit", 1, 1)
    ]
    reads = [x for x in sent if "history_parts" in x or "history_events" in x]
    assert len(reads) == 1, [" ".join(r.split()[:8]) for r in reads]
    assert not [x for x in sent if "enable_sort" in x or "hnsw." in x or "plan_cache" in x]


async def test_r64_a_replay_sees_only_the_turns_before_its_original(api: Api) -> None:
    """R64: a replay of turn N searches turns before N, though later turns committed since."""
    s, session = await _agent(api)
    turns = [
        await s.committed_turn(session, user(f"turn {n} mentions the heron")) for n in (1, 2, 3)
    ]
    replay = await s.turn(session, replayOf=turns[1])
    hits = await s.results(replay, "heron", limit=50)
    assert [r["turn"] for r in hits] == [1]
    replay3 = await s.turn(session, replayOf=turns[2])
    assert sorted(r["turn"] for r in await s.results(replay3, "heron", limit=50)) == [1, 2]


async def test_r64_preview_turns_events_are_searched_by_preview_turns_only(api: Api) -> None:
    """R64: what a preview turn keeps is searched only by preview turns; a preview turn
    also sees the live turns' events. A live turn naming a preview event is refused."""
    s, session = await _agent(api)
    await s.committed_turn(session, user("live says the pelican is blue"))
    await s.committed_turn(session, user("preview says the pelican is green"), preview=True)
    live = await s.turn(session)
    assert _texts(await s.results(live, "pelican", limit=50)) == [
        "turn 1, user\nlive says the pelican is blue"
    ]
    preview = await s.turn(session, preview=True)
    assert sorted(_texts(await s.results(preview, "pelican", limit=50))) == [
        "turn 1, user\nlive says the pelican is blue",
        "turn 2, user\npreview says the pelican is green",
    ]
    preview_ids = [n["id"] for n in await s.history(session) if n["preview"]]
    assert (await s.search_error(live, ids=preview_ids))[1] == {
        "code": "NOT_FOUND",
        "field": "ids[0]",
    }
    assert len(await s.results(preview, ids=preview_ids)) == 1


async def test_r64_history_never_crosses_sessions_or_agents(api: Api) -> None:
    """R64: another session's history, or another agent's, is never found."""
    s, session = await _agent(api)
    other = await s.session()
    await s.committed_turn(other, user("the albatross flies at dawn"))
    t = HistoryScenario(api)
    await t.agent(history_config())
    stranger = await t.session()
    await t.committed_turn(stranger, user("the albatross flies at dawn"))
    reader = await s.turn(session)
    assert await s.results(reader, "albatross flies at dawn", limit=50) == []


async def test_r64_an_agent_without_sessions_has_no_history(api: Api) -> None:
    """R64: a session-less agent's search is refused with a clear NOT_ALLOWED."""
    s = HistoryScenario(api)
    await s.agent(history_config(None, read=["agent"], write=["agent"]), sessionless=True)
    turn = await s.turn(None)
    message, ext = await s.search_error(turn, "anything")
    assert ext["code"] == "NOT_ALLOWED" and "without sessions" in message


async def test_r60_history_off_refuses_the_search(api: Api) -> None:
    """R60: without harness.history there is no history to search: NOT_ALLOWED, readable,
    and the refused call is recorded as a failed search_history execution."""
    s, session = await _agent(api, None)
    turn = await s.turn(session)
    message, ext = await s.search_error(turn, "anything")
    assert ext["code"] == "NOT_ALLOWED" and "harness.history" in message
    transcript = (await api.ok(TRANSCRIPT, id=turn))["turn"]["transcript"]
    assert transcript[-1]["type"] == "TOOL_ERROR"
    assert transcript[-1]["toolName"] == "search_history"


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({}, "query"),
        ({"q": "x", "ids": [str(uuid.uuid4())]}, "query"),
        ({"q": "   "}, "query"),
        ({"q": "x" * 2001}, "query"),
        ({"q": "x", "limit": 0}, "limit"),
        ({"q": "x", "limit": 51}, "limit"),
        ({"ids": []}, "ids"),
        ({"ids": [str(uuid.uuid4()) for _ in range(51)]}, "ids"),
    ],
)
async def test_bad_search_input_is_bad_input(api: Api, args: dict[str, Any], field: str) -> None:
    """Bad arguments: BAD_INPUT naming the field; no result, no output use, no usage."""
    s, session = await _agent(api)
    await s.committed_turn(session, user("hello"))
    turn = await s.turn(session)
    _, ext = await api.error(SEARCH, turn=turn, **args)
    assert (ext["code"], ext["field"]) == ("BAD_INPUT", field)
    transcript = (await api.ok(TRANSCRIPT, id=turn))["turn"]["transcript"]
    assert [t["type"] for t in transcript] == ["MEMORY_PINNED", "TOOL_ERROR"]


async def test_r63_a_search_is_a_recorded_execution_with_retrieved_uses_and_embed_usage(
    api: Api,
) -> None:
    """R63: an execution of search_history (input, output listing the events), RETRIEVED
    output uses of the parts returned, and the query's embedding as embed usage, which no
    limit counts, in the invocations and in the transcript."""
    s, session = await _agent(api)
    await s.committed_turn(
        session, user("the invoice INV-2231 was paid"), agent("Noted: invoice INV-2231 is paid")
    )
    turn = await s.begin(session)
    found = await s.search(turn["turn"]["id"], "invoice INV-2231", limit=3)
    execution = found["execution"]
    assert (execution["kind"], execution["name"], execution["status"]) == (
        "TOOL",
        "search_history",
        "SUCCEEDED",
    )
    assert execution["parent"]["id"] == turn["execution"]["id"]
    assert execution["input"] == {"query": "invoice INV-2231", "ids": None, "limit": 3}
    listed = execution["output"]["events"]
    assert [e["eventId"] for e in listed] == [r["eventId"] for r in found["results"]]
    assert [(e["turn"], e["part"], e["parts"]) for e in listed] == [
        (r["turn"], r["part"], r["parts"]) for r in found["results"]
    ]
    assert len(listed) == 2
    (usage,) = execution["invocations"]
    assert usage["purpose"] == "EMBED" and usage["counted"] is False
    assert usage["inputTokens"] > 0 and usage["model"] == "all-MiniLM-L6-v2"
    transcript = (await api.ok(TRANSCRIPT, id=turn["turn"]["id"]))["turn"]["transcript"]
    assert [t["type"] for t in transcript[-2:]] == ["USAGE", "TOOL_RESULT"]
    assert transcript[-2]["payload"]["purpose"] == "EMBED"
    assert transcript[-2]["payload"]["counted"] is False
    assert {t["execution"]["id"] for t in transcript[-2:]} == {execution["id"]}
    async with api.database.session() as db:
        uses = (
            await db.execute(
                select(OutputUse.kind, OutputUse.rank, HistoryPart.event_id)
                .join(
                    HistoryPart,
                    and_(
                        HistoryPart.id == OutputUse.history_part_id,  # type: ignore[arg-type]
                        HistoryPart.agent_id == OutputUse.agent_id,  # type: ignore[arg-type]
                    ),
                )
                .where(OutputUse.execution_id == uuid.UUID(execution["id"]))
                .order_by(OutputUse.rank)
            )
        ).all()
    assert [(k, r, str(e)) for k, r, e in uses] == [
        ("RETRIEVED", i, hit["eventId"]) for i, hit in enumerate(found["results"], start=1)
    ]


async def test_r63_reading_ids_records_a_use_per_part_and_no_embedding(api: Api) -> None:
    """R63: an event read whole by id puts all its parts before the model; no query, no
    embedding."""
    s, session = await _agent(api)
    await s.committed_turn(session, user(" ".join(f"word{i}" for i in range(500))))
    (event,) = await s.history(session)
    turn = await s.turn(session)
    found = await s.search(turn, ids=[event["id"]])
    assert found["execution"]["invocations"] == []
    async with api.database.session() as db:
        parts = (
            await db.scalars(
                select(OutputUse.history_part_id).where(
                    OutputUse.execution_id == uuid.UUID(found["execution"]["id"])
                )
            )
        ).all()
    assert sorted(map(str, parts)) == sorted(p["id"] for p in event["parts"])
    assert len(parts) > 1


async def test_a_helper_may_search_history(api: Api) -> None:
    """Searching is reading: a helper of the turn may search its session's history."""
    s, session = await _agent(api)
    await s.committed_turn(session, user("the gate code is 4512"))
    turn = await s.turn(session)
    helper = (await api.ok(HELPER, turn=turn, kind="HELPER"))["startExecution"]["execution"]["id"]
    found = await s.search(turn, "gate code", execution=helper)
    assert found["execution"]["parent"]["id"] == helper
    assert _texts(found["results"]) == ["turn 1, user\nthe gate code is 4512"]


async def test_search_history_is_idempotent(api: Api) -> None:
    """The same key returns the first search; other arguments with it are CONFLICT."""
    s, session = await _agent(api)
    await s.committed_turn(session, user("the meeting is on Friday"))
    turn = await s.turn(session)
    first = await s.search(turn, "meeting", key="s1")
    again = await s.search(turn, "meeting", key="s1")
    assert again["execution"]["id"] == first["execution"]["id"]
    assert again["results"] == first["results"]
    _, ext = await api.error(SEARCH, turn=turn, q="other", key="s1")
    assert ext["code"] == "CONFLICT"


async def test_session_history_pages_newest_first(api: Api) -> None:
    """Dashboard: a session's kept events, newest first, a page at a time, with turnNumber;
    ``first`` is required and at most 100."""
    s, session = await _agent(api)
    for n in range(3):
        await s.committed_turn(session, user(f"question {n}"), agent(f"answer {n}"))
    everything = await s.history(session)
    assert [(e["turnNumber"], e["text"]) for e in everything] == [
        (3, "answer 2"),
        (3, "question 2"),
        (2, "answer 1"),
        (2, "question 1"),
        (1, "answer 0"),
        (1, "question 0"),
    ]
    from tests.api.history_scenario import SESSION_HISTORY

    pages, after = [], None
    while True:
        page = (await api.ok(SESSION_HISTORY, session=session, first=4, after=after))["session"][
            "history"
        ]
        pages.append([e["node"]["text"] for e in page["edges"]])
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert pages == [[e["text"] for e in everything[:4]], [e["text"] for e in everything[4:]]]
    assert [e["text"] for e in await s.history(session, turnNumber=2)] == ["answer 1", "question 1"]
    for args in ({"first": 0}, {"first": 101}, {"first": 5, "after": "bogus"}):
        _, ext = await api.error(SESSION_HISTORY, session=session, **args)
        assert ext["code"] == "BAD_INPUT"


async def test_session_history_costs_a_bounded_number_of_statements(api: Api) -> None:
    """A page of events with their parts, calls, executions and turns: the same statement
    count for 4 events in 2 turns as for 40."""
    from tests.api.history_scenario import SESSION_HISTORY

    counts = []
    for size in (1, 10):
        s, session = await _agent(api)
        for turn in range(2):
            pairs = [(f"c{turn}-{n}", f"r{turn}-{n}") for n in range(size)]
            await s.committed_turn(
                session,
                agent(None, *((c, "lookup", {"n": c}) for c, _ in pairs)),
                *(result(c, r) for c, r in pairs),
            )
        with api.count_statements():
            data = await api.ok(SESSION_HISTORY, session=session, first=100)
        edges = data["session"]["history"]["edges"]
        assert len(edges) == 2 * (size + 1)
        assert all(e["node"]["call"] for e in edges if e["node"]["role"] == "TOOL")
        counts.append(api.statements)
    assert counts[0] == counts[1]


async def test_r62_keywords_leave_out_words_too_common_in_the_session(api: Api) -> None:
    """R62: a word in more than the preset's common share of the session's parts (here a
    name in every message) finds no keyword candidates, counted on the session's parts;
    the search then finds the message the rare words name, in lexical mode too, and the
    name still weighs (a little) in its score."""
    from server.domain.history import HistoryReader
    from server.services.history_ranking import rank_parts

    s, session = await _agent(api)
    chatter = [user(f"Dana: Dana says hello again, Dana is here, note {i}") for i in range(24)]
    await s.committed_turn(session, *chatter, user("Dana: the spare key is under the flowerpot"))
    reader_turn = await s.turn(session)
    reader = HistoryReader(
        agent_id=uuid.UUID(s.agent_id),
        session_id=uuid.UUID(session),
        turn_number=2,
        preview=False,
    )
    seeking = rules.PRESET.seeking
    assert seeking.common_share is not None and seeking.common_min < 25  # "dana": all 25
    query = "Where did Dana leave the spare key?"
    async with api.database.session() as db:
        # one place in the pool: were the name finding candidates, its 25 parts would
        # crowd the flowerpot out
        found = await rank_parts(
            db, reader=reader, query=query, vector=None, limit=1, mode="lexical"
        )
        (top,) = found
        part = await db.get(HistoryPart, top.key)
        only_name = await rank_parts(
            db, reader=reader, query="Dana", vector=None, limit=50, mode="lexical"
        )
    assert part is not None and part.text == "Dana: the spare key is under the flowerpot"
    # every word common: the query is read whole, and every part holds the name
    assert len(only_name) == 25
    (hit, *_) = await s.results(reader_turn, query)
    assert hit["text"].endswith("the spare key is under the flowerpot")


async def test_r62_an_answer_is_found_by_the_question_before_it(api: Api) -> None:
    """R62, ranking in context: an answer that shares no word with the query is found
    through the question before it in its turn, ahead of other turns' parts that share
    a word with the query."""
    s, session = await _agent(api)
    await s.committed_turn(
        session,
        user("The puppy chewed my shoes again"),
        agent("Puppies chew when their teeth grow."),
    )
    await s.committed_turn(
        session, user("Which breed is your new puppy?"), agent("A beagle, three months old.")
    )
    await s.committed_turn(
        session,
        user("Puppy training classes start on Monday"),
        agent("I put the puppy class in your calendar."),
    )
    reader_turn = await s.turn(session)
    texts = [r["text"] for r in await s.results(reader_turn, "What breed is the puppy?", limit=2)]
    assert texts == [
        "turn 2, user\nWhich breed is your new puppy?",
        "turn 2, agent\nA beagle, three months old.",
    ]


async def test_r62_the_sql_ranks_candidate_turns_in_context_as_the_reference_does(
    api: Api,
) -> None:
    """R62: the statement of a hybrid history search scores every part of the candidates'
    turns as :func:`server.domain.ranking.rank_in_context` does, read from the same rows
    (each part's keyword weight its BM25 score, computed by hand), the part after each
    and the period the query names included."""
    s, session = await _agent(api)
    for events in (
        (
            user("We adopted a beagle puppy named Biscuit"),
            agent("Biscuit is a lovely name for a beagle."),
        ),
        (user("The car needs new tyres before winter"), agent("I noted the tyres.")),
        (
            user("Biscuit chewed the sofa cushion to pieces"),
            agent("Puppies chew while teething; try a frozen toy."),
            user("Good idea, thanks"),
        ),
        (user("My sister visits from Lisbon next week"), agent("Shall I book a table?")),
    ):
        await s.committed_turn(session, *events)
    now = datetime.now(UTC)
    await dated(api, session, 3, now - timedelta(days=now.weekday() + 4))  # last week
    await s.turn(session)
    reader = HistoryReader(
        agent_id=uuid.UUID(s.agent_id), session_id=uuid.UUID(session), turn_number=5, preview=False
    )
    query = "what did the puppy chew last week?"
    vector, _ = await api.embedder.embed_one(query)
    periods = query_periods(query, now=now)
    assert len(periods) == 1
    async with api.database.session() as db:
        stmt = context_search(
            reader=reader,
            query=query,
            vector=vector,
            min_score=rules.MIN_SCORE,
            limit=50,
            now=now,
            periods=periods,
        )
        rows = await hybrid_run.scanned_rows(db, *stmt)
        hits = hybrid_run.hits(rows)
        keys = [h.key for h in hits]
        turns = {
            t
            for (t,) in (
                await db.execute(
                    select(HistoryPart.turn_number).where(HistoryPart.id.in_(keys))  # type: ignore[attr-defined]
                )
            ).all()
        }
        rows = (
            await db.execute(
                select(
                    HistoryPart.id,
                    HistoryPart.turn_number,
                    HistoryEvent.sequence,
                    HistoryPart.part,
                    HistoryPart.created_at,
                    (1 - HistoryPart.embedding.cosine_distance(vector)).label("cosine"),  # type: ignore[attr-defined]
                )
                .join(
                    HistoryEvent,
                    and_(
                        HistoryEvent.id == HistoryPart.event_id,  # type: ignore[arg-type]
                        HistoryEvent.agent_id == HistoryPart.agent_id,  # type: ignore[arg-type]
                    ),
                )
                .where(
                    HistoryPart.session_id == uuid.UUID(session),  # type: ignore[arg-type]
                    HistoryPart.turn_number.in_(turns),
                )  # type: ignore[attr-defined]
            )
        ).all()
        # a part's keyword weight: its BM25 score, idf counted over the session's parts
        terms = await by_hand.query_terms(db, query)
        session_parts = await by_hand.documents(
            db, table="history_parts", key="id", where="session_id = :s", params={"s": session}
        )
    assert {"puppi", "chew", "last", "week"} <= set(terms)
    bm25 = by_hand.scores(session_parts, session_parts, terms)
    parts = [
        ContextPart(
            key=str(r[0]),
            turn=r[1],
            sequence=r[2],
            part=r[3],
            created_at=r[4],
            cosine=float(r[5]),
            keywords=bm25[str(r[0])] or 0.0,
        )
        for r in rows
    ]
    assert {1, 3} <= turns < {1, 2, 3, 4}  # the puppy's turns, not every turn
    assert len(hits) == len(parts)  # every part of those turns is ranked
    reference = rank_in_context(parts, now=now, limit=50, periods=periods)
    (start, end), turn_of = periods[0], {p.key: p.turn for p in parts}
    assert {p.turn for p in parts if start <= p.created_at < end} == {3}  # kept last week
    assert turn_of[str(hits[0].key)] == 3
    assert [str(h.key) for h in hits] == [r.key for r in reference]
    for hit, want in zip(hits, reference, strict=True):
        assert hit.score == pytest.approx(want.score, abs=1e-9)
        assert hit.lexical == (None if want.lexical is None else pytest.approx(want.lexical))
