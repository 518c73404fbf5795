"""The turn lifecycle (begin, commit, roll back, fail, retry, replay), the executions and
invocations recorded inside a turn, and turns racing for the same record (R12, R21)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from tests.api.scenario import (
    ADD,
    BEGIN,
    COMMIT,
    DELETE,
    EMAIL,
    FAIL,
    INVOICES,
    INVOKE,
    OVERDUE,
    PHONE,
    ROLLBACK,
    START_EXECUTION,
    Scenario,
    memory_config,
    memory_record,
    records,
    turn_view,
)
from tests.conftest import Api

BOTH = ["session", "agent"]
BEGIN_AT = """
mutation($session: ID, $agent: ID, $version: ID) {
  beginTurn(input: {sessionId: $session, agentId: $agent, agentVersionId: $version}) {
    turn { id agentVersion { id number } }
  }
}"""
FAIL_WITH = """
mutation($turn: ID!, $error: String) {
  failTurn(input: {turnId: $turn, error: $error}) { turn { id status error endedAt } }
}"""
CLOSE_WITH_KEY = """
mutation($turn: ID!, $key: String) {
  commitTurn(input: {turnId: $turn, idempotencyKey: $key}) { turn { id status } }
}"""
CREATE_SESSION = (
    "mutation($agent: ID!) { createSession(input: {agentId: $agent}) { session { id } } }"
)


async def expect_error(api: Api, query: str, code: str, **variables: Any) -> str:
    message, ext = await api.error(query, **variables)
    assert ext.get("code") == code, (message, ext)
    return message


def summary_of(turn: dict[str, Any]) -> tuple[int, int, str]:
    return turn["number"], turn["attempt"], turn["status"]


# Beginning a turn


async def test_begin_turn_on_a_session_opens_turn_one(api: Api) -> None:
    """A session's first turn is number 1, attempt 1, open, with one running execution of
    kind turn and a transcript that starts with the memory.pinned event (R30)."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    begun = await s.begin(session)
    assert summary_of(begun["turn"]) == (1, 1, "OPEN")
    assert begun["turn"]["preview"] is False
    view = await turn_view(api, begun["turn"]["id"])
    assert view["session"] == {"id": session} and view["endedAt"] is None
    assert [(e["id"], e["kind"], e["status"], e["parent"]) for e in view["executions"]] == [
        (begun["execution"]["id"], "TURN", "RUNNING", None)
    ]
    assert view["transcript"][0]["type"] == "MEMORY_PINNED"


async def test_turn_numbers_count_per_session(api: Api) -> None:
    """Each session numbers its own turns from 1."""
    s = Scenario(api)
    await s.agent(memory_config())
    first, second = await s.session(), await s.session()
    numbers = []
    for session in (first, first, second, first):
        begun = await s.begin(session)
        await s.commit(begun["turn"]["id"])
        numbers.append(begun["turn"]["number"])
    assert numbers == [1, 2, 1, 3]


async def test_begin_turn_on_a_sessionless_agent(api: Api) -> None:
    """An agent without sessions begins turns on the agent; they number per agent and have
    no session."""
    s = Scenario(api)
    await s.agent(memory_config(read=["agent"], write=["agent"]), sessionless=True)
    one = await s.begin()
    await s.commit(one["turn"]["id"])
    two = await s.begin()
    assert (one["turn"]["number"], two["turn"]["number"]) == (1, 2)
    assert (await turn_view(api, two["turn"]["id"]))["session"] is None


async def test_begin_turn_needs_the_right_owner(api: Api) -> None:
    """Exactly one of sessionId and agentId; agentId only for agents without sessions; and
    such an agent has no sessions to create."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    await expect_error(api, BEGIN, "BAD_INPUT", session=session, agent=s.agent_id)
    await expect_error(api, BEGIN, "BAD_INPUT")
    message = await expect_error(api, BEGIN, "BAD_INPUT", agent=s.agent_id)
    assert "sessionId" in message
    lone = Scenario(api)
    await lone.agent(memory_config(read=["agent"], write=["agent"]), sessionless=True)
    await expect_error(api, CREATE_SESSION, "NOT_ALLOWED", agent=lone.agent_id)
    await expect_error(api, BEGIN, "NOT_FOUND", session=str(uuid.uuid4()))


async def test_begin_turn_needs_a_published_version(api: Api) -> None:
    """An agent with no published version cannot run a turn; the message says what to do."""
    s = Scenario(api)
    await s.agent()
    session = await s.session()
    message = await expect_error(api, BEGIN, "NOT_FOUND", session=session)
    assert "publish" in message


async def test_begin_turn_at_an_earlier_version_follows_that_config(api: Api) -> None:
    """agentVersionId pins a turn to a version; its tools follow that version's config.
    A version of another agent is not found."""
    s = Scenario(api)
    await s.agent(memory_config(tools=["add_memory"]))
    first = (
        await api.ok("query($a: ID!) { agent(id: $a) { latestVersion { id } } }", a=s.agent_id)
    )["agent"]["latestVersion"]["id"]
    await s.publish(memory_config(tools=[]))
    session = await s.session()
    old = (await api.ok(BEGIN_AT, session=session, version=first))["beginTurn"]["turn"]
    assert old["agentVersion"] == {"id": first, "number": 1}
    await s.add(old["id"], "Allowed under version 1")
    latest = await s.turn(session)
    await expect_error(api, ADD, "NOT_ALLOWED", turn=latest, summary="Refused under 2")
    other = Scenario(api)
    await other.agent(memory_config())
    await expect_error(api, BEGIN_AT, "NOT_FOUND", session=await other.session(), version=first)


# Closing a turn


async def test_commit_closes_the_turn_and_its_executions(api: Api) -> None:
    """commitTurn: status committed, an end time, every running execution succeeded."""
    s = Scenario(api)
    await s.agent(memory_config())
    turn = await s.turn(await s.session())
    await api.ok(START_EXECUTION, turn=turn, kind="HELPER")
    data = await api.ok(COMMIT, turn=turn)
    assert data["commitTurn"]["turn"] == {"id": turn, "status": "COMMITTED"}
    view = await turn_view(api, turn)
    assert view["endedAt"] is not None
    assert sorted((e["kind"], e["status"]) for e in view["executions"]) == [
        ("HELPER", "SUCCEEDED"),
        ("TURN", "SUCCEEDED"),
    ]


async def test_closed_turn_refuses_every_further_call(api: Api) -> None:
    """A turn closes once: later closes, tool calls, executions and invocations are
    CONFLICT, and change nothing."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    record = await s.committed(EMAIL, session)
    begun = await s.begin(session)
    turn, execution = begun["turn"]["id"], begun["execution"]["id"]
    await s.commit(turn)
    for query, variables in (
        (COMMIT, {}),
        (ROLLBACK, {}),
        (FAIL, {}),
        (ADD, {"summary": "late"}),
        (DELETE, {"id": record}),
        (START_EXECUTION, {"kind": "HELPER"}),
    ):
        message = await expect_error(api, query, "CONFLICT", turn=turn, **variables)
        assert "not open" in message
    await expect_error(api, INVOKE, "CONFLICT", execution=execution, purpose="TURN")
    view = await turn_view(api, turn)
    assert view["status"] == "COMMITTED" and len(view["executions"]) == 1
    assert [(r["id"], r["status"]) for r in await records(api, s.agent_id)] == [(record, "ACTIVE")]


async def test_rollback_keeps_the_transcript_but_not_the_memory(api: Api) -> None:
    """rollbackTurn: the transcript and the tool executions stay (what was tried); the
    running turn execution ends failed; the memory is gone (R12)."""
    s = Scenario(api)
    await s.agent(memory_config())
    turn = await s.turn(await s.session())
    added = await s.add(turn, OVERDUE)
    data = await api.ok(ROLLBACK, turn=turn)
    assert data["rollbackTurn"]["turn"]["status"] == "ROLLED_BACK"
    view = await turn_view(api, turn)
    assert sorted((e["kind"], e["status"]) for e in view["executions"]) == [
        ("TOOL", "SUCCEEDED"),
        ("TURN", "FAILED"),
    ]
    assert [e["type"] for e in view["transcript"]] == ["MEMORY_PINNED", "TOOL_RESULT"]
    assert view["transcript"][1]["execution"] == {"id": added["execution"]["id"]}
    assert view["memories"] == [] and await records(api, s.agent_id) == []


async def test_fail_turn_records_the_error_and_discards_memory(api: Api) -> None:
    """failTurn: status failed with its error; the attempt's memory is discarded (R12)."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    record = await s.committed(EMAIL, session)
    turn = await s.turn(session)
    await s.add(turn, PHONE, replaces=record)
    data = await api.ok(FAIL_WITH, turn=turn, error="model timed out")
    assert data["failTurn"]["turn"]["status"] == "FAILED"
    assert data["failTurn"]["turn"]["error"] == "model timed out"
    assert data["failTurn"]["turn"]["endedAt"] is not None
    assert [(r["id"], r["status"]) for r in await records(api, s.agent_id)] == [(record, "ACTIVE")]


async def test_fail_turn_error_is_bounded(api: Api) -> None:
    """An over-long error is bad input, and the turn stays open."""
    s = Scenario(api)
    await s.agent(memory_config())
    turn = await s.turn(await s.session())
    await expect_error(api, FAIL_WITH, "BAD_INPUT", turn=turn, error="e" * 10_001)
    assert (await turn_view(api, turn))["status"] == "OPEN"


# Retries


async def test_retry_keeps_the_number_and_counts_attempts(api: Api) -> None:
    """A retried attempt keeps the turn's number and increments attempt; retryOf names the
    failed attempt; the next turn takes the following number."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    first = await s.turn(session)
    await api.ok(FAIL, turn=first)
    second = await s.begin(session, retryOf=first)
    assert summary_of(second["turn"]) == (1, 2, "OPEN")
    await api.ok(FAIL, turn=second["turn"]["id"])
    third = await s.begin(session, retryOf=second["turn"]["id"])
    assert summary_of(third["turn"]) == (1, 3, "OPEN")
    assert (await turn_view(api, third["turn"]["id"]))["retryOf"] == {"id": second["turn"]["id"]}
    await s.commit(third["turn"]["id"])
    assert (await s.begin(session))["turn"]["number"] == 2


async def test_retry_gets_a_clean_slate(api: Api) -> None:
    """R12, R61: the failed attempt's memory is gone, so the retry does not see it, and
    only what the retry commits is kept."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    failed = await s.turn(session)
    lost = await s.add_id(failed, OVERDUE)
    await api.ok(FAIL, turn=failed)
    retry = (await s.begin(session, retryOf=failed))["turn"]["id"]
    assert not await s.can_read(retry, lost)
    kept = await s.add_id(retry, OVERDUE)
    await s.commit(retry)
    assert [r["id"] for r in await records(api, s.agent_id)] == [kept]


async def test_only_a_failed_turn_can_be_retried(api: Api) -> None:
    """retryOf must name a failed turn: open, committed and rolled-back turns are CONFLICT."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    committed = await s.turn(session)
    await s.commit(committed)
    rolled = await s.turn(session)
    await s.rollback(rolled)
    still_open = await s.turn(session)
    for turn in (committed, rolled, still_open):
        message = await expect_error(api, BEGIN, "CONFLICT", session=session, retryOf=turn)
        assert "failed" in message


async def test_an_attempt_is_retried_once(api: Api) -> None:
    """A failed attempt has at most one retry: a second retry of it is CONFLICT."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    failed = await s.turn(session)
    await api.ok(FAIL, turn=failed)
    await s.begin(session, retryOf=failed)
    message = await expect_error(api, BEGIN, "CONFLICT", session=session, retryOf=failed)
    assert "already retried" in message


async def test_retry_keeps_the_preview_flag(api: Api) -> None:
    """A retry of a preview attempt is a preview turn too."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    failed = await s.turn(session, preview=True)
    await api.ok(FAIL, turn=failed)
    await expect_error(api, BEGIN, "BAD_INPUT", session=session, retryOf=failed)
    retry = await s.begin(session, retryOf=failed, preview=True)
    assert retry["turn"]["preview"] is True and retry["turn"]["attempt"] == 2


async def test_retry_and_replay_stay_in_their_session(api: Api) -> None:
    """retryOf and replayOf name a turn of the same session; a turn elsewhere is not found,
    and a turn cannot be both a retry and a replay."""
    s = Scenario(api)
    await s.agent(memory_config())
    here, there = await s.session(), await s.session()
    failed = await s.turn(there)
    await api.ok(FAIL, turn=failed)
    done = await s.turn(there)
    await s.commit(done)
    await expect_error(api, BEGIN, "NOT_FOUND", session=here, retryOf=failed)
    await expect_error(api, BEGIN, "NOT_FOUND", session=here, replayOf=done)
    await expect_error(api, BEGIN, "BAD_INPUT", session=there, retryOf=failed, replayOf=done)


# Replays


async def test_replay_takes_the_original_number_and_leaves_numbering_alone(api: Api) -> None:
    """A replay of turn N carries N and replayOf; it does not advance the session's turn
    numbers."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    one = await s.turn(session)
    await s.commit(one)
    two = await s.turn(session)
    await s.commit(two)
    replay = await s.begin(session, replayOf=one, preview=True)
    assert summary_of(replay["turn"]) == (1, 1, "OPEN")
    assert (await turn_view(api, replay["turn"]["id"]))["replayOf"] == {"id": one}
    await s.commit(replay["turn"]["id"])
    assert (await s.begin(session))["turn"]["number"] == 3


async def test_only_a_committed_turn_can_be_replayed(api: Api) -> None:
    """replayOf must name a committed turn."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    failed = await s.turn(session)
    await api.ok(FAIL, turn=failed)
    still_open = await s.turn(session)
    for turn in (failed, still_open):
        await expect_error(api, BEGIN, "CONFLICT", session=session, replayOf=turn, preview=True)


async def test_retry_of_a_failed_replay_is_still_a_replay(api: Api) -> None:
    """A retried replay attempt replays the same turn: it keeps replayOf and the number,
    and the session's own turns are not disturbed."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    original = await s.turn(session)
    await s.commit(original)
    replay = (await s.begin(session, replayOf=original, preview=True))["turn"]["id"]
    await api.ok(FAIL, turn=replay)
    retry = await s.begin(session, retryOf=replay, preview=True)
    assert summary_of(retry["turn"]) == (1, 2, "OPEN")
    view = await turn_view(api, retry["turn"]["id"])
    assert view["replayOf"] == {"id": original} and view["retryOf"] == {"id": replay}
    assert (await s.begin(session))["turn"]["number"] == 2


# Idempotency of runtime calls


async def test_begin_turn_with_an_idempotency_key_runs_once(api: Api) -> None:
    """The same key and input return the first turn; other input under it is CONFLICT."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    key = f"begin-{uuid.uuid4()}"
    first = await s.begin(session, key=key)
    again = await s.begin(session, key=key)
    assert again["turn"]["id"] == first["turn"]["id"]
    await expect_error(api, BEGIN, "CONFLICT", session=session, key=key, preview=True)
    assert (await s.begin(session))["turn"]["number"] == 2


async def test_commit_with_an_idempotency_key_may_be_repeated(api: Api) -> None:
    """A repeated commit under the same key returns the committed turn, not CONFLICT."""
    s = Scenario(api)
    await s.agent(memory_config())
    turn = await s.turn(await s.session())
    key = f"commit-{uuid.uuid4()}"
    for _ in range(2):
        data = await api.ok(CLOSE_WITH_KEY, turn=turn, key=key)
        assert data["commitTurn"]["turn"] == {"id": turn, "status": "COMMITTED"}


# Executions and invocations


async def test_start_execution_records_helpers_and_programs(api: Api) -> None:
    """startExecution records a helper or program under the turn's execution, or under a
    given parent; the turn lists them and each parent its children."""
    s = Scenario(api)
    await s.agent(memory_config())
    begun = await s.begin(await s.session())
    turn, root = begun["turn"]["id"], begun["execution"]["id"]
    helper = (await api.ok(START_EXECUTION, turn=turn, kind="HELPER", name="researcher"))[
        "startExecution"
    ]["execution"]
    assert (helper["kind"], helper["name"], helper["status"], helper["parent"]) == (
        "HELPER",
        "researcher",
        "RUNNING",
        {"id": root},
    )
    program = (
        await api.ok(START_EXECUTION, turn=turn, kind="PROGRAM", name="script", parent=helper["id"])
    )["startExecution"]["execution"]
    assert program["parent"] == {"id": helper["id"]}
    children = await api.ok(
        "query($id: ID!) { execution(id: $id) { children { id kind } } }", id=helper["id"]
    )
    assert children["execution"]["children"] == [{"id": program["id"], "kind": "PROGRAM"}]
    view = await turn_view(api, turn)
    assert [e["id"] for e in view["executions"]] == [root, helper["id"], program["id"]]


async def test_start_execution_parent_must_be_a_non_tool_execution_of_the_turn(
    api: Api,
) -> None:
    """A parent from another turn is not found; a blank name is bad input; a native tool
    call can be neither a parent nor a caller of tools."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    other = await s.begin(session)
    turn = await s.turn(session)
    await expect_error(
        api, START_EXECUTION, "NOT_FOUND", turn=turn, kind="HELPER", parent=other["execution"]["id"]
    )
    await expect_error(api, START_EXECUTION, "BAD_INPUT", turn=turn, kind="HELPER", name=" ")
    tool = (await s.add(turn, OVERDUE))["execution"]["id"]
    await expect_error(api, START_EXECUTION, "BAD_INPUT", turn=turn, kind="HELPER", parent=tool)
    await expect_error(api, ADD, "BAD_INPUT", turn=turn, summary="x", execution=tool)


async def test_record_invocation_records_usage_under_its_execution(api: Api) -> None:
    """recordInvocation stores purpose, model and token counts; turn and memory calls
    count toward limits; each execution lists its own invocations."""
    s = Scenario(api)
    await s.agent(memory_config())
    begun = await s.begin(await s.session())
    turn, root = begun["turn"]["id"], begun["execution"]["id"]
    call = (
        await api.ok(INVOKE, execution=root, purpose="TURN", model="gpt-x", input=120, output=30)
    )["recordInvocation"]["invocation"]
    assert {k: call[k] for k in ("purpose", "model", "inputTokens", "outputTokens", "counted")} == {
        "purpose": "TURN",
        "model": "gpt-x",
        "inputTokens": 120,
        "outputTokens": 30,
        "counted": True,
    }
    helper = (await api.ok(START_EXECUTION, turn=turn, kind="HELPER"))["startExecution"][
        "execution"
    ]["id"]
    review = (await api.ok(INVOKE, execution=helper, purpose="MEMORY"))["recordInvocation"][
        "invocation"
    ]
    assert review["execution"] == {"id": helper} and review["counted"] is True
    view = await turn_view(api, turn)
    by_execution = {e["id"]: [i["id"] for i in e["invocations"]] for e in view["executions"]}
    assert by_execution == {root: [call["id"]], helper: [review["id"]]}


async def test_record_invocation_rejects_bad_usage(api: Api) -> None:
    """Negative tokens and an empty model are bad input; an unknown execution is not found;
    embed usage is the server's to record, not the runtime's."""
    s = Scenario(api)
    await s.agent(memory_config())
    begun = await s.begin(await s.session())
    root = begun["execution"]["id"]
    await expect_error(api, INVOKE, "BAD_INPUT", execution=root, purpose="TURN", input=-1)
    await expect_error(api, INVOKE, "BAD_INPUT", execution=root, purpose="TURN", model="")
    await expect_error(api, INVOKE, "NOT_FOUND", execution=str(uuid.uuid4()), purpose="TURN")
    # the server records its own embeddings; a runtime cannot record uncounted usage
    await expect_error(api, INVOKE, "BAD_INPUT", execution=root, purpose="EMBED")
    view = await turn_view(api, begun["turn"]["id"])
    assert view["executions"][0]["invocations"] == []


# Races: two turns changing the same record


async def _two_open_turns(api: Api) -> tuple[Scenario, str, str, str]:
    """An AGENT record and two open turns in two sessions that can both change it."""
    s = Scenario(api)
    await s.agent(memory_config(read=BOTH, write=BOTH))
    one, two = await s.session(), await s.session()
    record = await s.committed(EMAIL, one, scope="AGENT")
    return s, record, await s.turn(one), await s.turn(two)


def _outcomes(results: list[Any]) -> tuple[list[int], list[str]]:
    winners = [i for i, r in enumerate(results) if r.errors is None]
    codes = [r.errors[0].extensions["code"] for r in results if r.errors]
    return winners, codes


async def test_two_turns_replacing_the_same_record_exactly_one_wins(api: Api) -> None:
    """R21, R12: two turns replace one record at the same time: exactly one succeeds, the
    other gets CONFLICT; after both commit the record is superseded by the winner only."""
    s, record, first, second = await _two_open_turns(api)
    turns = [first, second]
    results = await asyncio.gather(
        *(
            api.execute(ADD, turn=turn, summary=f"Correction from turn {i}", replaces=record)
            for i, turn in enumerate(turns)
        )
    )
    winners, codes = _outcomes(list(results))
    assert len(winners) == 1 and codes == ["CONFLICT"]
    winner, loser = turns[winners[0]], turns[1 - winners[0]]
    new = results[winners[0]].data["addMemory"]["memories"][0]["recordId"]
    await s.commit(winner)
    await s.commit(loser)
    view = await memory_record(api, record)
    assert view["status"] == "SUPERSEDED" and view["replacedBy"] == {"id": new}
    assert [v["status"] for v in view["versions"]] == ["ACTIVE", "SUPERSEDED"]
    assert (await turn_view(api, loser))["memories"] == []
    failed = [e for e in (await turn_view(api, loser))["executions"] if e["kind"] == "TOOL"]
    assert [(e["name"], e["status"]) for e in failed] == [("add_memory", "FAILED")]


async def test_delete_racing_a_replace_exactly_one_wins(api: Api) -> None:
    """R21, R12: a delete and a replace of one record at once: one wins, one is CONFLICT."""
    s, record, first, second = await _two_open_turns(api)
    results = await asyncio.gather(
        api.execute(DELETE, turn=first, id=record),
        api.execute(ADD, turn=second, summary=PHONE, replaces=record),
    )
    winners, codes = _outcomes(list(results))
    assert len(winners) == 1 and codes == ["CONFLICT"]
    await s.commit(first)
    await s.commit(second)
    expected = "DELETED" if winners == [0] else "SUPERSEDED"
    assert (await memory_record(api, record))["status"] == expected


async def test_loser_may_change_the_record_once_the_winner_rolls_back(api: Api) -> None:
    """R12: a change staged by an open turn blocks others with CONFLICT; when that turn rolls
    back, the record is free again."""
    s, record, first, second = await _two_open_turns(api)
    await s.add(first, PHONE, replaces=record)
    message = await expect_error(
        api, ADD, "CONFLICT", turn=second, summary="Second", replaces=record
    )
    assert str(record) in message
    await s.rollback(first)
    new = await s.add_id(second, PHONE, replaces=record)
    await s.commit(second)
    view = await memory_record(api, record)
    assert view["status"] == "SUPERSEDED" and view["replacedBy"] == {"id": new}


async def test_replacing_a_record_no_longer_active_fails_with_conflict(api: Api) -> None:
    """R21: only an ACTIVE record can be replaced or deleted: a superseded or deleted one
    (committed, or changed earlier in the same turn) gives CONFLICT and changes nothing."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    old = await s.committed(EMAIL, session)
    gone = await s.committed(INVOICES, session)
    staged = await s.committed(OVERDUE, session)
    turn = await s.turn(session)
    await s.add(turn, PHONE, replaces=old)
    await api.ok(DELETE, turn=turn, id=gone)
    await s.commit(turn)
    before = {r["id"]: r for r in await records(api, s.agent_id)}
    turn = await s.turn(session)
    for target in (old, gone):
        message = await expect_error(api, ADD, "CONFLICT", turn=turn, summary="x", replaces=target)
        assert "not ACTIVE" in message
        await expect_error(api, DELETE, "CONFLICT", turn=turn, id=target)
    await s.add(turn, PHONE, replaces=staged)
    await expect_error(api, ADD, "CONFLICT", turn=turn, summary="Second fix", replaces=staged)
    await expect_error(api, DELETE, "CONFLICT", turn=turn, id=staged)
    await s.rollback(turn)
    assert {r["id"]: r for r in await records(api, s.agent_id)} == before


async def test_concurrent_turns_of_one_session_get_distinct_numbers(api: Api) -> None:
    """Turns begun at once on one session are numbered without gaps or duplicates."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    results = await asyncio.gather(*(api.execute(BEGIN, session=session) for _ in range(4)))
    assert all(r.errors is None for r in results), [r.errors for r in results]
    assert sorted(r.data["beginTurn"]["turn"]["number"] for r in results) == [1, 2, 3, 4]


async def test_a_tool_call_racing_the_commit_lands_in_the_turn_or_not_at_all(api: Api) -> None:
    """R12: a write that races its turn's commit either commits with the turn or is refused
    with CONFLICT; it never lands on a closed turn, unpublished."""
    for _ in range(3):
        s = Scenario(api)
        await s.agent(memory_config())
        turn = await s.turn(await s.session())
        added, committed = await asyncio.gather(
            api.execute(ADD, turn=turn, summary=OVERDUE),
            api.execute(COMMIT, turn=turn),
        )
        assert committed.errors is None
        listed = [r["id"] for r in await records(api, s.agent_id)]
        if added.errors is None:
            assert listed == [added.data["addMemory"]["memories"][0]["recordId"]]
        else:
            assert added.errors[0].extensions["code"] == "CONFLICT"
            assert listed == []
