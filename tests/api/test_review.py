"""The turn-end memory review (R8, R50) through the schema, on real PostgreSQL with the
real model: when a review is due, what it reads, the watermark across commit, rollback,
failure, retry, replay and preview, and the decisions applied all or none."""

from __future__ import annotations

import uuid
from typing import Any

from tests.api.history_scenario import agent, history_config, result, user
from tests.api.review_scenario import APPLY, BEGIN_REVIEW, ReviewScenario, decide, fact
from tests.api.scenario import FAIL, MEMORY, memory_record, records, turn_view
from tests.auth_helpers import bearer, codes, run_as
from tests.conftest import Api

EXECUTION_OUTPUT = "query($t: ID!) { turn(id: $t) { executions { id output } } }"


def config(every: Any = None, **memory: Any) -> dict[str, Any]:
    cfg = history_config("messages", tools=[], **memory)
    if every is not None:
        cfg["harness"]["memory"]["extraction"] = {"every": every}
    return cfg


async def _said(s: ReviewScenario, turn: str, text: str) -> None:
    await s.record(turn, user(text), agent(f"Noted: {text}"))


async def _world(api: Api, every: Any = None, **memory: Any) -> tuple[ReviewScenario, str]:
    s = ReviewScenario(api)
    await s.agent(config(every, **memory))
    return s, await s.session()


async def test_every_turn_a_review_reads_the_turn_and_its_writes_name_their_provenance(
    api: Api,
) -> None:
    """R8 default: every turn is reviewed; R25: each version names the review's
    execution, its memory model call, the agent version and the session."""
    s, session = await _world(api)
    turn = await s.turn(session)
    await _said(s, turn, "My name is Ada and I live in Lisbon")
    begun = await s.begin_review(turn)
    assert begun["due"] and begun["messages"] == 2
    assert [e["header"] for e in begun["conversation"]] == ["turn 1, user", "turn 1, agent"]
    assert begun["text"].startswith("turn 1, user\nMy name is Ada")
    assert "one line" in begun["instructions"] and '"REPLACE"' in begun["instructions"]
    execution = begun["review"]["execution"]
    assert (execution["kind"], execution["name"], execution["status"]) == (
        "TOOL",
        "memory_review",
        "RUNNING",
    )
    invocation = await s.invoke(begun)
    applied = await s.apply(begun["review"]["id"], decide("ADD", "The user lives in Lisbon"))
    assert applied["review"]["status"] == "APPLIED"
    assert applied["execution"]["status"] == "SUCCEEDED"
    assert applied["execution"]["output"]["memories"][0]["summary"] == "The user lives in Lisbon"
    record = applied["memories"][0]["recordId"]
    # the output names its decisions' targets as MemoryDecisionOutcome does (an ADD has none)
    [decision] = applied["execution"]["output"]["decisions"]
    assert (decision["action"], decision["recordId"]) == ("ADD", None)
    assert "record" not in decision
    assert await records(api, s.agent_id) == []  # visible at commit (R12)
    await s.commit(turn)
    written = (await memory_record(api, record))["versions"][0]["writtenBy"]
    assert written["execution"]["id"] == execution["id"]
    assert written["invocation"] == {"id": invocation, "purpose": "MEMORY"}
    assert written["session"] == {"id": session} and written["turn"] == {"id": turn}


async def test_every_n_messages_counts_across_turns_and_the_watermark_moves_at_commit(
    api: Api,
) -> None:
    """R8 {"messages": N}: due once N messages were added since the last applied
    review, counted across turns; not due records nothing."""
    s, session = await _world(api, {"messages": 4})
    one = await s.turn(session)
    await _said(s, one, "I prefer tea")
    early = await s.begin_review(one)
    assert (early["due"], early["review"], early["conversation"]) == (False, None, [])
    # nothing to read and nothing to follow: both null, as the review
    assert (early["instructions"], early["text"]) == (None, None)
    assert early["reason"] == "2 of 4 messages since the last review"
    await s.commit(one)
    two = await s.turn(session)
    await _said(s, two, "I work at the harbour")
    begun = await s.begin_review(two)
    assert begun["due"] and begun["reason"].startswith("4 of 4")
    assert [e["turn"] for e in begun["conversation"]] == [1, 1, 2, 2]
    assert begun["review"]["afterTurn"] == 0 and begun["review"]["throughTurn"] == 2
    await s.invoke(begun)
    await s.apply(begun["review"]["id"])
    await s.commit(two)
    three = await s.turn(session)
    await _said(s, three, "I have a cat")
    later = await s.begin_review(three)
    assert not later["due"] and later["messages"] == 2  # turns 1-2 were reviewed


async def test_rollback_failure_and_retry_move_no_watermark(api: Api) -> None:
    """A review applied in a turn that rolls back or fails moves nothing and writes
    nothing; the next turn, or the retry, reads the same conversation again."""
    s, session = await _world(api)
    one = await s.turn(session)
    await _said(s, one, "I prefer tea")
    await s.commit(one)  # not reviewed
    two = await s.turn(session)
    await _said(s, two, "My dog is Rex")
    await s.reviewed(two, decide("ADD", "The user's dog is called Rex"))
    await s.rollback(two)
    assert await records(api, s.agent_id) == []
    three = await s.turn(session)
    begun = await s.begin_review(three)
    assert [e["turn"] for e in begun["conversation"]] == [1, 1]  # turn 2 rolled back
    await s.invoke(begun)
    await s.apply(begun["review"]["id"], decide("ADD", "The user prefers tea"))
    await api.ok(FAIL, turn=three)
    retry = await s.turn(session, retryOf=three)
    again = await s.begin_review(retry)
    assert again["review"]["afterTurn"] == 0
    assert [e["turn"] for e in again["conversation"]] == [1, 1]
    await s.invoke(again)
    await s.apply(again["review"]["id"], decide("ADD", "The user prefers tea"))
    await s.commit(retry)
    assert [r["current"]["summary"] for r in await records(api, s.agent_id)] == [
        "The user prefers tea"
    ]
    four = await s.turn(session)
    assert (await s.begin_review(four))["review"]["afterTurn"] == 3


async def test_preview_and_replay_reviews_write_preview_records_and_move_no_live_watermark(
    api: Api,
) -> None:
    """R13, R22: a preview turn's review writes preview records, and replacing a live
    record names it instead of changing it; neither it nor a replay's review moves the
    watermark live turns read."""
    s, session = await _world(api)
    one = await s.turn(session)
    await _said(s, one, "I live in Lisbon")
    applied = await s.reviewed(one, decide("ADD", "The user lives in Lisbon"))
    lisbon = applied["memories"][0]["recordId"]
    await s.commit(one)
    preview = await s.turn(session, preview=True)
    await _said(s, preview, "I moved to Porto")
    begun = await s.begin_review(preview)
    assert begun["review"]["preview"] and begun["review"]["afterTurn"] == 1
    await s.invoke(begun)
    moved = await s.apply(
        begun["review"]["id"], decide("REPLACE", "The user lives in Porto", lisbon)
    )
    await s.commit(preview)
    (new,) = moved["memories"]  # the live record is named, not changed
    assert (await memory_record(api, new["recordId"]))["preview"] is True
    assert (await memory_record(api, lisbon))["status"] == "ACTIVE"
    replay = await s.turn(session, replayOf=one, preview=True)
    replayed = await s.begin_review(replay)
    assert replayed["review"]["afterTurn"] == 0
    await s.invoke(replayed)
    await s.apply(replayed["review"]["id"])
    await s.commit(replay)
    two = await s.turn(session)
    live = await s.begin_review(two)
    assert live["review"]["afterTurn"] == 1  # not the preview turn's, not the replay's
    assert live["conversation"] == []  # the preview turn's conversation is not live


async def test_a_restatement_adds_nothing_and_a_correction_and_a_deletion_change_records(
    api: Api,
) -> None:
    """R50: an ADD that restates a record is applied as SKIP; REPLACE supersedes with
    replacedBy; DELETE leaves the record DELETED and readable (R21, R25)."""
    s, session = await _world(api)
    one = await s.turn(session)
    added = await s.reviewed(
        one, decide("ADD", "The user lives in Lisbon"), decide("ADD", "The user has a cat")
    )
    lisbon, cat = (m["recordId"] for m in added["memories"])
    await s.commit(one)
    two = await s.turn(session)
    begun = await s.begin_review(two)
    compared = await s.compare(
        begun["review"]["id"], fact("the user lives in Lisbon."), fact("The user owns a boat")
    )
    restated, boat = compared["candidates"]
    assert restated["restates"]["version"]["recordId"] == lisbon
    assert restated["similar"][0]["similarity"] > 0.9 and boat["restates"] is None
    assert f"id {lisbon}" in compared["text"]
    await s.invoke(begun)
    applied = await s.apply(
        begun["review"]["id"],
        decide("ADD", "the user lives in Lisbon."),
        decide("REPLACE", "The user lives in Porto", lisbon),
        decide("DELETE", "The user's cat died", cat),
        decide("SKIP", "The user said hello"),
    )
    outcomes = [(d["action"], d["applied"], d["restates"]) for d in applied["decisions"]]
    assert outcomes == [
        ("ADD", "SKIP", lisbon),
        ("REPLACE", "REPLACE", None),
        ("DELETE", "DELETE", None),
        ("SKIP", "SKIP", None),
    ]
    await s.commit(two)
    porto = applied["decisions"][1]["memories"][0]["recordId"]
    old = await memory_record(api, lisbon)
    assert old["status"] == "SUPERSEDED" and old["replacedBy"] == {"id": porto}
    gone = await memory_record(api, cat)
    assert gone["status"] == "DELETED" and gone["current"]["summary"] == "The user has a cat"
    active = await records(api, s.agent_id, status="ACTIVE")
    assert [r["current"]["summary"] for r in active] == ["The user lives in Porto"]


async def test_a_lightly_edited_restatement_is_skipped_and_a_changed_number_is_added(
    api: Api,
) -> None:
    """R50: a restatement in lightly edited words (its cosine under the meaning threshold,
    0.85 with this model) adds nothing; a candidate that changes a number (cosine 0.94)
    is a new fact, not a restatement, so its ADD is applied."""
    s, session = await _world(api)
    one = await s.turn(session)
    added = await s.reviewed(
        one,
        decide("ADD", "The user's daughter plays the violin"),
        decide("ADD", "The user has 2 dogs"),
    )
    violin, _ = (m["recordId"] for m in added["memories"])
    await s.commit(one)
    two = await s.turn(session)
    begun = await s.begin_review(two)
    edited, dogs = "also the user's daughter plays the violin!", "The user has 3 dogs"
    compared = await s.compare(begun["review"]["id"], fact(edited), fact(dogs))
    restated, corrected = compared["candidates"]
    assert restated["restates"]["version"]["recordId"] == violin
    assert restated["similar"][0]["similarity"] < 0.9
    assert corrected["restates"] is None and corrected["similar"][0]["similarity"] > 0.9
    await s.invoke(begun)
    applied = await s.apply(begun["review"]["id"], decide("ADD", edited), decide("ADD", dogs))
    outcomes = [(d["applied"], d["restates"]) for d in applied["decisions"]]
    assert outcomes == [("SKIP", violin), ("ADD", None)]
    await s.commit(two)
    active = await records(api, s.agent_id, status="ACTIVE")
    assert sorted(r["current"]["summary"] for r in active) == [
        "The user has 2 dogs",
        "The user has 3 dogs",
        "The user's daughter plays the violin",
    ]


async def test_one_bad_decision_refuses_the_set_and_changes_nothing(api: Api) -> None:
    """All or none: the refusal names the decision; nothing is written and the review
    stays open for a corrected set. Agent scope needs agent in scope.write (R20, R24)."""
    s, session = await _world(api)
    turn = await s.turn(session)
    begun = await s.begin_review(turn)
    review = begun["review"]["id"]
    await s.invoke(begun)
    message, ext = await s.apply_error(
        review, decide("ADD", "The user likes jazz"), decide("ADD", "Jazz", scope="AGENT")
    )
    assert ext["code"] == "NOT_ALLOWED" and message.startswith("decision 1: ")
    message, ext = await s.apply_error(
        review,
        decide("ADD", "The user likes jazz"),
        decide("DELETE", "gone", "00000000-0000-0000-0000-000000000000"),
    )
    assert ext == {"code": "NOT_FOUND", "field": "decisions[1].recordId"}
    assert message == "no memory record with id 00000000-0000-0000-0000-000000000000"
    message, ext = await s.apply_error(review, decide("REPLACE", "no target"))
    assert ext["code"] == "BAD_INPUT" and "decision 0" in message
    message, ext = await s.apply_error(review, decide("ADD", "Jazz", kind="mood"))
    assert ext["code"] == "NOT_ALLOWED" and "kind" in message
    assert (await turn_view(api, turn))["memories"] == []
    applied = await s.apply(review, decide("ADD", "The user likes jazz"))
    assert applied["review"]["status"] == "APPLIED"


async def test_agent_scope_where_the_agent_writes_it(api: Api) -> None:
    s, session = await _world(api, write=["session", "agent"], read=["session", "agent"])
    turn = await s.turn(session)
    begun = await s.begin_review(turn)
    assert "scope is AGENT" in begun["instructions"]
    await s.invoke(begun)
    applied = await s.apply(
        begun["review"]["id"], decide("ADD", "Support closes at six", scope="AGENT")
    )
    await s.commit(turn)
    scope = (await memory_record(api, applied["memories"][0]["recordId"]))["scope"]
    assert scope == "AGENT"


async def test_a_review_applies_once_and_one_session_reviews_one_turn_at_a_time(
    api: Api,
) -> None:
    """Idempotency keys on all three mutations; a second apply is a CONFLICT; a
    second begin in the turn returns the first review; a concurrent turn's begin is a
    CONFLICT until the first turn ends."""
    s, session = await _world(api)
    turn = await s.turn(session)
    other = await s.turn(session)
    begun = await s.begin_review(turn, key="b1")
    review = begun["review"]["id"]
    assert (await s.begin_review(turn, key="b1")) == begun
    assert (await s.begin_review(turn))["review"]["id"] == review
    message, ext = await s.api.error(
        "mutation($t: ID!) { beginMemoryReview(input: {turnId: $t}) { due } }", t=other
    )
    assert ext["code"] == "CONFLICT" and "reviewing" in message
    await s.invoke(begun)
    first = await s.compare(review, fact("The user likes jazz"), key="c1")
    assert await s.compare(review, fact("The user likes jazz"), key="c1") == first
    applied = await s.apply(review, decide("ADD", "The user likes jazz"), key="a1")
    assert await s.apply(review, decide("ADD", "The user likes jazz"), key="a1") == applied
    _, ext = await s.apply_error(review, decide("ADD", "The user likes jazz"))
    assert ext["code"] == "CONFLICT"
    await s.commit(turn)
    assert len(await records(api, s.agent_id)) == 1
    assert (await s.begin_review(other))["due"]  # the first turn ended


async def test_a_review_needs_memory_and_its_model_call(api: Api) -> None:
    s = ReviewScenario(api)
    await s.agent(config(enabled=False))
    turn = await s.turn(await s.session())
    _, ext = await s.api.error(
        "mutation($t: ID!) { beginMemoryReview(input: {turnId: $t}) { due } }", t=turn
    )
    assert ext["code"] == "NOT_ALLOWED"
    s, session = await _world(api)
    turn = await s.turn(session)
    begun = await s.begin_review(turn)
    message, ext = await s.apply_error(begun["review"]["id"], decide("ADD", "x"))
    assert ext["code"] == "BAD_INPUT" and "recordInvocation" in message


async def test_grants_the_review_is_the_agents_own_and_its_records_read_as_r71_allows(
    api: Api,
) -> None:
    """R70: the review mutations are for the agent itself (its runtime token); R71: a
    client reads the records a review wrote, and the review's execution output, only
    with SELECT on AgentMemory.indexes.* and AgentMemory.document."""
    ns = f"rv{uuid.uuid4().hex[:8]}"
    s = ReviewScenario(api)
    await s.agent(config(), namespace=ns)
    session = await s.session()
    turn = await s.turn(session)
    runtime = await bearer(api, kind="runtime", agent_id=s.agent_id)
    begun = await run_as(api, runtime, BEGIN_REVIEW, turn=turn)
    assert begun.errors is None, begun.errors
    review = begun.data["beginMemoryReview"]["review"]
    client = await bearer(api, kind="client", grants=(("SELECT", f"{ns}.*"), ("INSERT", "*")))
    refused = await run_as(api, client, APPLY, review=review["id"], decisions=[])
    assert codes(refused) == ["FORBIDDEN"]
    await s.invoke(begun.data["beginMemoryReview"])
    applied = await s.apply(review["id"], decide("ADD", "The user likes jazz"))
    await s.commit(turn)
    record = applied["memories"][0]["recordId"]
    execution = review["execution"]["id"]
    base = (("SELECT", f"{ns}.Session"), ("SELECT", f"{ns}.Agent"))
    document = ("SELECT", f"{ns}.AgentMemory.document")
    session_only = await bearer(api, kind="client", grants=base)
    half = await bearer(api, kind="client", grants=(*base, document))
    reader = await bearer(
        api,
        kind="client",
        grants=(*base, ("SELECT", f"{ns}.AgentMemory.indexes.*"), document),
    )
    for token in (session_only, half):
        assert codes(await run_as(api, token, MEMORY, id=record)) == ["NOT_FOUND"]
        view = await run_as(api, token, EXECUTION_OUTPUT, t=turn)
        (out,) = [e["output"] for e in view.data["turn"]["executions"] if e["id"] == execution]
        assert out is None  # the review's output is memory: redacted
    read = await run_as(api, reader, MEMORY, id=record)
    assert read.errors is None and read.data["agentMemory"]["current"]["summary"] == (
        "The user likes jazz"
    )
    view = await run_as(api, reader, EXECUTION_OUTPUT, t=turn)
    (out,) = [e["output"] for e in view.data["turn"]["executions"] if e["id"] == execution]
    assert out["memories"][0]["summary"] == "The user likes jazz"


async def test_with_messages_and_tools_the_conversation_holds_tool_results(api: Api) -> None:
    """The review reads what harness.history.index keeps: with messages_and_tools the
    agent's tool results too (R60), which are not counted as messages (R8)."""
    s = ReviewScenario(api)
    cfg = history_config("messages_and_tools", tools=[])
    cfg["harness"]["memory"]["extraction"] = {"every": {"messages": 3}}
    await s.agent(cfg)
    session = await s.session()
    turn = await s.turn(session)
    await s.record(
        turn,
        user("What is the weather in Porto?"),
        agent(None, ("c1", "weather", {"city": "Porto"})),
        result("c1", "sunny in Porto"),
    )
    early = await s.begin_review(turn)
    assert early["reason"] == "2 of 3 messages since the last review"
    await s.record(turn, agent("It is sunny in Porto."))
    begun = await s.begin_review(turn)
    assert [e["header"] for e in begun["conversation"]] == [
        "turn 1, user",
        "turn 1, agent",
        "turn 1, tool weather",
        "turn 1, agent",
    ]
    assert begun["messages"] == 3


async def test_an_agent_without_sessions_reviews_its_own_turns(api: Api) -> None:
    """The watermark of an agent without sessions is the agent's (R2: agent scope)."""
    s = ReviewScenario(api)
    cfg = config(read=["agent"], write=["agent"])
    del cfg["harness"]["history"]  # an agent without sessions has no history
    await s.agent(cfg, sessionless=True)
    one = await s.turn()
    await _said(s, one, "Support closes at six")
    applied = await s.reviewed(one, decide("ADD", "Support closes at six"))
    assert applied["memories"][0]["status"] == "ACTIVE"
    await s.commit(one)
    two = await s.turn()
    await _said(s, two, "Support opens at nine")
    begun = await s.begin_review(two)
    assert begun["review"]["afterTurn"] == 1
    assert [e["turn"] for e in begun["conversation"]] == [2, 2]
