"""Memory visibility (R10-R14) and writes (R20-R26), through the schema.

Every test drives a real agent's turns through the GraphQL mutations and checks
the outcome twice: as the agent sees it (its own tool calls) and as a dashboard
sees it (the record listing, ``agentMemory`` and the turn's executions).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sqlalchemy import text

from tests.api.scenario import (
    ADD,
    DELETE,
    EMAIL,
    INVOICES,
    INVOKE,
    OVERDUE,
    PHONE,
    REFUNDS,
    SHIPPING,
    START_EXECUTION,
    Scenario,
    memory_config,
    memory_record,
    records,
    turn_view,
)
from tests.conftest import Api

BOTH = ["session", "agent"]
SEARCH = """
mutation($turn: ID!) {
  searchMemory(input: {turnId: $turn, limit: 50}) { results { version { recordId } } }
}"""
READ_AS = """
mutation($turn: ID!, $id: ID!, $execution: ID) {
  readMemory(input: {turnId: $turn, id: $id, executionId: $execution}) { sources { recordId } }
}"""
RECALL = """
mutation($turn: ID!, $q: String!) {
  recall(input: {turnId: $turn, query: $q}) { results { version { recordId } } }
}"""
ADD_INVOKED = """
mutation($turn: ID!, $summary: String!, $invocation: ID, $execution: ID,
         $replaces: ID) {
  addMemory(input: {turnId: $turn, summary: $summary, invocationId: $invocation,
                    executionId: $execution, replaces: $replaces}) {
    execution { id }
    memories { id recordId status }
  }
}"""


async def expect_error(api: Api, query: str, code: str, **variables: Any) -> str:
    message, ext = await api.error(query, **variables)
    assert ext.get("code") == code, (message, ext)
    return message


async def status_seen(s: Scenario, turn: str, record: str) -> str | None:
    """The status ``turn`` reads for ``record`` with read_memory, or None if unreachable."""
    result = await s.read(turn, record)
    if isinstance(result, tuple):
        assert result[1]["code"] == "NOT_FOUND", result
        return None
    return str(result["sources"][0]["status"])


async def row_counts(api: Api, turn: str) -> tuple[int, int]:
    """Rows of memory_records and memory_versions a turn wrote, straight from the database."""
    async with api.database.session() as db:
        recs = await db.scalar(
            text("SELECT count(*) FROM memory_records WHERE turn_id = :t"), {"t": turn}
        )
        vers = await db.scalar(
            text("SELECT count(*) FROM memory_versions WHERE turn_id = :t"), {"t": turn}
        )
    return int(recs or 0), int(vers or 0)


# R10 - nothing crosses agents


async def test_r10_agent_never_reaches_another_agents_record(api: Api) -> None:
    """R10: another agent can neither read, delete nor replace a record; it stays as it was,
    and each agent's listing holds only its own records."""
    owner, other = Scenario(api), Scenario(api)
    await owner.agent(memory_config(read=BOTH, write=BOTH))
    record = await owner.committed(EMAIL, await owner.session(), scope="AGENT")
    await other.agent(memory_config(read=BOTH, write=BOTH))
    turn = await other.turn(await other.session())
    assert await status_seen(other, turn, record) is None
    await expect_error(api, DELETE, "NOT_FOUND", turn=turn, id=record)
    await expect_error(api, ADD, "NOT_FOUND", turn=turn, summary="x", replaces=record)
    theirs = await other.add_id(turn, OVERDUE)
    await other.commit(turn)
    seen = await memory_record(api, record)
    assert seen["status"] == "ACTIVE" and len(seen["versions"]) == 1
    assert [r["id"] for r in await records(api, owner.agent_id)] == [record]
    assert [r["id"] for r in await records(api, other.agent_id)] == [theirs]


async def test_r10_tool_call_cannot_borrow_another_agents_execution(api: Api) -> None:
    """R10: a tool call names its turn; an execution of another turn is not found."""
    one, two = Scenario(api), Scenario(api)
    await one.agent(memory_config())
    await two.agent(memory_config())
    foreign = await one.begin(await one.session())
    turn = await two.turn(await two.session())
    await expect_error(
        api, ADD, "NOT_FOUND", turn=turn, summary="x", execution=foreign["execution"]["id"]
    )
    await two.commit(turn)
    assert await records(api, two.agent_id) == []


# R11 - scopes decide which sessions see a record


async def test_r11_session_records_stay_in_their_session_agent_records_do_not(
    api: Api,
) -> None:
    """R11: a SESSION record reaches only the session that wrote it; an AGENT record reaches
    every session of the agent."""
    s = Scenario(api)
    await s.agent(memory_config(read=BOTH, write=BOTH))
    first, second, third = await s.session(), await s.session(), await s.session()
    turn = await s.turn(first)
    own = await s.add_id(turn, OVERDUE)
    shared = await s.add_id(turn, INVOICES, scope="AGENT")
    await s.commit(turn)
    here = await s.turn(first)
    assert (await status_seen(s, here, own), await status_seen(s, here, shared)) == (
        "ACTIVE",
        "ACTIVE",
    )
    for session in (second, third):
        there = await s.turn(session)
        assert await status_seen(s, there, own) is None
        assert await status_seen(s, there, shared) == "ACTIVE"


@pytest.mark.parametrize(("read", "hidden"), [(["session"], "AGENT"), (["agent"], "SESSION")])
async def test_r11_each_scope_needs_its_place_in_scope_read(
    api: Api, read: list[str], hidden: str
) -> None:
    """R11: once a version stops reading a scope, that scope's records are out of reach,
    even in the session that wrote them; the other scope's stay readable."""
    s = Scenario(api)
    await s.agent(memory_config(read=BOTH, write=BOTH))
    session = await s.session()
    turn = await s.turn(session)
    written = {
        "SESSION": await s.add_id(turn, OVERDUE, scope="SESSION"),
        "AGENT": await s.add_id(turn, INVOICES, scope="AGENT"),
    }
    await s.commit(turn)
    await s.publish(memory_config(read=read, write=read))
    reader = await s.turn(session)
    seen = {scope: await status_seen(s, reader, rid) for scope, rid in written.items()}
    assert seen == {scope: None if scope == hidden else "ACTIVE" for scope in written}


# R12 - a turn is the transaction of its memory


async def test_r12_open_turn_record_is_visible_to_that_turn_only_until_commit(
    api: Api,
) -> None:
    """R12: before commit, only the writing turn sees the record, not a concurrent turn of
    its session nor a dashboard; at commit it becomes visible to both."""
    s = Scenario(api)
    await s.agent(memory_config(read=BOTH, write=BOTH))
    session = await s.session()
    writer = await s.turn(session)
    record = await s.add_id(writer, OVERDUE, scope="AGENT")
    assert await status_seen(s, writer, record) == "ACTIVE"
    concurrent = await s.turn(session)
    assert await status_seen(s, concurrent, record) is None
    await expect_error(
        api, "query($id: ID!) { agentMemory(id: $id) { id } }", "NOT_FOUND", id=record
    )
    assert await records(api, s.agent_id) == []
    await s.commit(writer)
    assert await status_seen(s, concurrent, record) == "ACTIVE"
    assert [r["id"] for r in await records(api, s.agent_id)] == [record]


async def test_r12_rollback_leaves_no_trace(api: Api) -> None:
    """R12: a rolled-back turn's records and versions are removed, not hidden."""
    s = Scenario(api)
    await s.agent(memory_config(pinned=500))
    session = await s.session()
    turn = await s.turn(session)
    first = await s.add_id(turn, OVERDUE, pinned=True)
    await s.add(turn, PHONE, replaces=first)
    assert await row_counts(api, turn) == (2, 3)
    await s.rollback(turn)
    assert await row_counts(api, turn) == (0, 0)
    assert (await turn_view(api, turn))["memories"] == []
    assert await records(api, s.agent_id) == []
    assert await status_seen(s, await s.turn(session), first) is None
    assert (await s.begin(session))["pinned"] == []


async def test_r12_staged_delete_is_seen_by_its_turn_only_until_commit(api: Api) -> None:
    """R12: a status change staged by an open turn is invisible to other turns and to
    dashboards until commit."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    record = await s.committed(INVOICES, session)
    deleter = await s.turn(session)
    await api.ok(DELETE, turn=deleter, id=record)
    assert await status_seen(s, deleter, record) == "DELETED"
    assert await status_seen(s, await s.turn(session), record) == "ACTIVE"
    seen = await memory_record(api, record)
    assert seen["status"] == "ACTIVE" and [v["status"] for v in seen["versions"]] == ["ACTIVE"]
    await s.commit(deleter)
    seen = await memory_record(api, record)
    assert seen["status"] == "DELETED"
    assert [v["status"] for v in seen["versions"]] == ["ACTIVE", "DELETED"]


async def test_r12_rollback_restores_a_replaced_record(api: Api) -> None:
    """R12: rolling back a replacement restores the original exactly."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    record = await s.committed(EMAIL, session)
    before = await memory_record(api, record)
    turn = await s.turn(session)
    await s.add(turn, PHONE, replaces=record)
    await s.rollback(turn)
    assert await memory_record(api, record) == before
    assert before["replacedBy"] is None and before["status"] == "ACTIVE"
    assert [r["id"] for r in await records(api, s.agent_id)] == [record]


# R13 - preview records


async def test_r13_live_turn_never_sees_a_preview_record(api: Api) -> None:
    """R13: live turns cannot read, delete or replace a preview record."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    preview = await s.turn(session, preview=True)
    record = await s.add_id(preview, OVERDUE)
    await s.commit(preview)
    live = await s.turn(session)
    assert await status_seen(s, live, record) is None
    await expect_error(api, DELETE, "NOT_FOUND", turn=live, id=record)
    await expect_error(api, ADD, "NOT_FOUND", turn=live, summary="x", replaces=record)
    await s.commit(live)
    assert (await memory_record(api, record))["status"] == "ACTIVE"


async def test_r13_preview_turns_do_not_see_what_preview_records_replace(api: Api) -> None:
    """R13: preview turns see live and preview records, except a record a preview record
    names in replaces (a replacement or a deletion), from the moment it is named; live
    turns still see it."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    first = await s.turn(session)
    kept = await s.add_id(first, EMAIL)
    replaced = await s.add_id(first, INVOICES)
    deleted = await s.add_id(first, OVERDUE)
    await s.commit(first)
    turn = await s.turn(session, preview=True)
    replacement = await s.add_id(turn, PHONE, replaces=replaced)
    await api.ok(DELETE, turn=turn, id=deleted)
    assert await status_seen(s, turn, replaced) is None
    await s.commit(turn)
    later = await s.turn(session, preview=True)
    seen = {r: await status_seen(s, later, r) for r in (kept, replaced, deleted, replacement)}
    assert seen == {kept: "ACTIVE", replaced: None, deleted: None, replacement: "ACTIVE"}
    live = await s.turn(session)
    assert [await status_seen(s, live, r) for r in (replaced, deleted)] == ["ACTIVE", "ACTIVE"]


async def test_r13_preview_search_and_recall_skip_what_preview_records_replace(
    api: Api,
) -> None:
    """R13: in preview turns, search and recall find the preview replacement and never
    the live record it replaces (nor one a preview deletion names); live turns find the
    live records only."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    live = await s.committed(EMAIL, session)
    doomed = await s.committed(INVOICES, session)
    turn = await s.turn(session, preview=True)
    draft = await s.add_id(turn, PHONE, replaces=live)
    await api.ok(DELETE, turn=turn, id=doomed)
    await s.commit(turn)
    found: dict[bool, tuple[set[str], set[str]]] = {}
    for preview in (True, False):
        reader = await s.turn(session, preview=preview)
        listed = (await api.ok(SEARCH, turn=reader))["searchMemory"]["results"]
        recalled = (
            await api.ok(
                RECALL,
                turn=reader,
                q="how does the customer like to be contacted, and when do invoices go out",
            )
        )["recall"]
        found[preview] = (
            {r["version"]["recordId"] for r in listed},
            {r["version"]["recordId"] for r in recalled["results"]},
        )
    assert found[True] == ({draft}, {draft})
    assert found[False][0] == {live, doomed} and found[False][1] <= {live, doomed}
    assert found[False][1]


# R14 - read_memory reads any status


async def test_r14_read_memory_reads_superseded_and_deleted_records(api: Api) -> None:
    """R14: read_memory reads a record whatever its status."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    old = await s.committed(EMAIL, session)
    gone = await s.committed(INVOICES, session)
    turn = await s.turn(session)
    await s.add(turn, PHONE, replaces=old)
    await api.ok(DELETE, turn=turn, id=gone)
    await s.commit(turn)
    reader = await s.turn(session)
    assert await status_seen(s, reader, old) == "SUPERSEDED"
    assert await status_seen(s, reader, gone) == "DELETED"


async def test_r14_pinned_list_holds_active_records_only(api: Api) -> None:
    """R14 (search purpose): a superseded or deleted pin leaves the pinned list."""
    s = Scenario(api)
    await s.agent(memory_config(pinned=1000))
    session = await s.session()
    kept = await s.committed(REFUNDS, session, pinned=True)
    replaced = await s.committed(SHIPPING, session, pinned=True)
    deleted = await s.committed(INVOICES, session, pinned=True)
    turn = await s.turn(session)
    await s.add(turn, PHONE, replaces=replaced)
    await api.ok(DELETE, turn=turn, id=deleted)
    await s.commit(turn)
    pinned = (await s.begin(session))["pinned"]
    assert [p["recordId"] for p in pinned] == [kept]


# R20 - the scope of a new record


@pytest.mark.parametrize(
    ("write", "outcomes"),
    [
        (["session"], {None: "SESSION", "SESSION": "SESSION", "AGENT": "NOT_ALLOWED"}),
        (BOTH, {None: "SESSION", "SESSION": "SESSION", "AGENT": "AGENT"}),
        (["agent"], {None: "AGENT", "AGENT": "AGENT", "SESSION": "NOT_ALLOWED"}),
    ],
)
async def test_r20_scope_of_a_new_record(
    api: Api, write: list[str], outcomes: dict[str | None, str]
) -> None:
    """R20, R24: session when scope.write includes it; agent only on request, or when it is
    the only scope written; a scope outside scope.write is NOT_ALLOWED and says so."""
    s = Scenario(api)
    await s.agent(memory_config(read=BOTH, write=write))
    turn = await s.turn(await s.session())
    written = []
    for requested, expected in outcomes.items():
        if expected == "NOT_ALLOWED":
            message = await expect_error(
                api, ADD, "NOT_ALLOWED", turn=turn, summary="x", scope=requested
            )
            assert "scope.write" in message and str(requested).lower() in message
            continue
        added = (await s.add(turn, EMAIL, scope=requested))["memories"][0]
        assert added["record"]["scope"] == expected
        written.append(added["recordId"])
    await s.commit(turn)
    assert sorted(r["id"] for r in await records(api, s.agent_id)) == sorted(written)


async def test_r20_sessionless_agent_writes_agent_scope(api: Api) -> None:
    """R20, R2: an agent without sessions writes AGENT records, never SESSION ones."""
    s = Scenario(api)
    await s.agent(memory_config(read=["agent"], write=["agent"]), sessionless=True)
    turn = await s.turn()
    added = await s.add(turn, OVERDUE)
    assert added["memories"][0]["record"]["scope"] == "AGENT"
    await expect_error(api, ADD, "NOT_ALLOWED", turn=turn, summary="x", scope="SESSION")
    await s.commit(turn)
    assert await status_seen(s, await s.turn(), added["memories"][0]["recordId"]) == "ACTIVE"


# R21 - replace and delete


async def test_r21_replace_supersedes_and_links_both_ways(api: Api) -> None:
    """R21: the replaced record becomes SUPERSEDED with replacedBy; the new one links back."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    old = await s.committed(EMAIL, session)
    turn = await s.turn(session)
    added = await s.add(turn, PHONE, replaces=old)
    new = added["memories"][0]["recordId"]
    assert [(m["recordId"], m["status"]) for m in added["memories"]] == [
        (new, "ACTIVE"),
        (old, "SUPERSEDED"),
    ]
    await s.commit(turn)
    old_view, new_view = await memory_record(api, old), await memory_record(api, new)
    assert old_view["status"] == "SUPERSEDED" and old_view["replacedBy"] == {"id": new}
    assert new_view["replaces"] == {"id": old} and new_view["status"] == "ACTIVE"
    assert [v["status"] for v in old_view["versions"]] == ["ACTIVE", "SUPERSEDED"]
    assert old_view["versions"][1]["summary"] == EMAIL


async def test_r21_delete_sets_deleted(api: Api) -> None:
    """R21: delete_memory makes the record DELETED; no new record is written."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    record = await s.committed(INVOICES, session)
    turn = await s.turn(session)
    out = (await api.ok(DELETE, turn=turn, id=record))["deleteMemory"]
    assert [(m["recordId"], m["status"]) for m in out["memories"]] == [(record, "DELETED")]
    await s.commit(turn)
    assert [(r["id"], r["status"]) for r in await records(api, s.agent_id)] == [(record, "DELETED")]


async def test_r21_changes_only_within_written_scopes(api: Api) -> None:
    """R21, R24: an AGENT record the agent reads but does not write can be neither deleted
    nor replaced; the refusal is NOT_ALLOWED and names scope.write."""
    s = Scenario(api)
    await s.agent(memory_config(read=BOTH, write=BOTH))
    session = await s.session()
    record = await s.committed(OVERDUE, session, scope="AGENT")
    await s.publish(memory_config(read=BOTH, write=["session"]))
    turn = await s.turn(session)
    assert await status_seen(s, turn, record) == "ACTIVE"
    message = await expect_error(api, DELETE, "NOT_ALLOWED", turn=turn, id=record)
    assert "scope.write" in message
    message = await expect_error(api, ADD, "NOT_ALLOWED", turn=turn, summary="x", replaces=record)
    assert "scope.write" in message
    await s.commit(turn)
    assert [(r["id"], r["status"]) for r in await records(api, s.agent_id)] == [(record, "ACTIVE")]


# R22 - a preview turn never changes a live record


async def test_r22_preview_replace_and_delete_write_preview_records(api: Api) -> None:
    """R22: replacing or deleting a live record in preview leaves it untouched and writes a
    preview record naming it: the replacement, ACTIVE, or the deletion, DELETED."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    first = await s.turn(session)
    replaced = await s.add_id(first, EMAIL)
    deleted = await s.add_id(first, INVOICES)
    await s.commit(first)
    before = [await memory_record(api, r) for r in (replaced, deleted)]
    turn = await s.turn(session, preview=True)
    added = (await s.add(turn, PHONE, replaces=replaced))["memories"]
    (marker,) = (await api.ok(DELETE, turn=turn, id=deleted))["deleteMemory"]["memories"]
    assert len(added) == 1 and added[0]["recordId"] not in (replaced, deleted)
    assert marker["recordId"] not in (replaced, deleted) and marker["status"] == "DELETED"
    assert marker["record"]["preview"] is True and marker["record"]["replaces"] == {"id": deleted}
    await s.commit(turn)
    assert [await memory_record(api, r) for r in (replaced, deleted)] == before
    preview = await memory_record(api, added[0]["recordId"])
    assert (preview["preview"], preview["status"], preview["replaces"]) == (
        True,
        "ACTIVE",
        {"id": replaced},
    )
    listed = {r["id"]: r["status"] for r in await records(api, s.agent_id, preview=True)}
    assert listed == {added[0]["recordId"]: "ACTIVE", marker["recordId"]: "DELETED"}


async def test_r22_preview_turn_changes_preview_records_in_place(api: Api) -> None:
    """R22 concerns live records: a preview record is deleted or replaced directly."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    first = await s.turn(session, preview=True)
    to_delete = await s.add_id(first, OVERDUE)
    to_replace = await s.add_id(first, REFUNDS)
    await s.commit(first)
    turn = await s.turn(session, preview=True)
    out = (await api.ok(DELETE, turn=turn, id=to_delete))["deleteMemory"]
    assert out["memories"][0]["recordId"] == to_delete
    added = await s.add(turn, PHONE, replaces=to_replace)
    assert [m["recordId"] for m in added["memories"]][1:] == [to_replace]
    await s.commit(turn)
    assert (await memory_record(api, to_delete))["status"] == "DELETED"
    assert (await memory_record(api, to_replace))["status"] == "SUPERSEDED"


async def test_r22_turn_memories_list_live_and_preview_records(api: Api) -> None:
    """Spec's Action.memories: a turn lists every record it wrote; a preview deletion is a
    preview record of status DELETED. A live turn lists what it created and changed."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    first = await s.turn(session)
    kept = await s.add_id(first, EMAIL)
    replaced = await s.add_id(first, SHIPPING)
    deleted = await s.add_id(first, INVOICES)
    await s.commit(first)

    preview = await s.turn(session, preview=True)
    new = await s.add_id(preview, OVERDUE)
    replacement = await s.add_id(preview, PHONE, replaces=replaced)
    marker = (await api.ok(DELETE, turn=preview, id=deleted))["deleteMemory"]["memories"][0]
    await s.commit(preview)
    listed = (await turn_view(api, preview))["memories"]
    assert [(m["id"], m["preview"], m["status"]) for m in listed] == [
        (new, True, "ACTIVE"),
        (replacement, True, "ACTIVE"),
        (marker["recordId"], True, "DELETED"),
    ]
    assert listed[1]["replaces"] == {"id": replaced}
    assert listed[2]["replaces"] == {"id": deleted}

    live = await s.turn(session)
    fresh = await s.add_id(live, OVERDUE)
    fix = await s.add_id(live, PHONE, replaces=replaced)
    await api.ok(DELETE, turn=live, id=deleted)
    await s.commit(live)
    statuses = {
        m["id"]: (m["preview"], m["status"]) for m in (await turn_view(api, live))["memories"]
    }
    assert statuses == {
        replaced: (False, "SUPERSEDED"),
        deleted: (False, "DELETED"),
        fresh: (False, "ACTIVE"),
        fix: (False, "ACTIVE"),
    }
    assert kept not in statuses


# R23 - only the agent itself writes


@pytest.mark.parametrize("kind", ["HELPER", "PROGRAM"])
async def test_r23_helpers_and_programs_read_but_never_write(api: Api, kind: str) -> None:
    """R23: a helper or a program may read memory; its add and delete are NOT_ALLOWED,
    recorded as failed executions under it, and change nothing."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    record = await s.committed(EMAIL, session)
    turn = await s.turn(session)
    helper = (await api.ok(START_EXECUTION, turn=turn, kind=kind))["startExecution"]["execution"][
        "id"
    ]
    read = await api.ok(READ_AS, turn=turn, id=record, execution=helper)
    assert read["readMemory"]["sources"] == [{"recordId": record}]
    message = await expect_error(api, ADD, "NOT_ALLOWED", turn=turn, summary="x", execution=helper)
    assert "never write" in message
    await expect_error(
        api, ADD, "NOT_ALLOWED", turn=turn, summary="x", execution=helper, replaces=record
    )
    await expect_error(api, DELETE, "NOT_ALLOWED", turn=turn, id=record, execution=helper)
    await s.commit(turn)
    tools = [e for e in (await turn_view(api, turn))["executions"] if e["kind"] == "TOOL"]
    assert [(e["name"], e["status"], e["parent"]["id"]) for e in tools] == [
        ("read_memory", "SUCCEEDED", helper),
        ("add_memory", "FAILED", helper),
        ("add_memory", "FAILED", helper),
        ("delete_memory", "FAILED", helper),
    ]
    assert [(r["id"], r["status"]) for r in await records(api, s.agent_id)] == [(record, "ACTIVE")]


# R24 - refused calls fail readably and change nothing

LABELS = {"customer_id": {"number": 5, "description": "The customer the memory is about."}}
# name: (harness.memory settings of the version, the call, words the message must hold)
REFUSALS: dict[str, tuple[dict[str, Any], dict[str, Any], str]] = {
    "add_not_offered": ({"tools": ["read_memory"]}, {"summary": "x"}, "add_memory is not offered"),
    "delete_not_offered": ({"tools": ["add_memory"]}, {"delete": True}, "delete_memory is not"),
    "read_not_offered": ({"tools": ["add_memory"]}, {"read": True}, "read_memory is not offered"),
    "pin_over_budget": ({"pinned": 20}, {"summary": "x" * 40, "pinned": True}, "consolidate"),
    "pin_without_budget": ({}, {"summary": "x", "pinned": True}, "harness.memory.pinned"),
    "undeclared_kind": ({"kinds": ["note"]}, {"summary": "x", "kind": "fact"}, "kind 'fact'"),
    "undeclared_label": (
        {},
        {"summary": "x", "labels": [{"name": "account", "value": "A1"}]},
        "label 'account'",
    ),
    "scope_not_writable": ({}, {"summary": "x", "scope": "AGENT"}, "scope.write"),
    "memory_disabled_add": ({"enabled": False}, {"summary": "x"}, "memory is not enabled"),
    "memory_disabled_read": ({"enabled": False}, {"read": True}, "memory is not enabled"),
    "memory_disabled_delete": ({"enabled": False}, {"delete": True}, "memory is not enabled"),
}


@pytest.fixture(scope="module")
async def refusing(api: Api) -> tuple[Scenario, str, str]:
    """One agent for every refusal: a session and one committed record. Each case publishes
    its own version; refusals change nothing, so the cases cannot disturb one another."""
    s = Scenario(api)
    await s.agent(memory_config(labels=LABELS))
    session = await s.session()
    return s, session, await s.committed(EMAIL, session)


@pytest.mark.parametrize("case", sorted(REFUSALS))
async def test_r24_refused_call_fails_readably_and_changes_nothing(
    api: Api, refusing: tuple[Scenario, str, str], case: str
) -> None:
    """R24 (and R1, R3, R4, R5, R20, R31): the refusal is NOT_ALLOWED with a message the
    agent can read; no record changes; the failed execution is recorded with its error
    and a tool.error transcript event; the turn stays open and commits."""
    settings, call, words = REFUSALS[case]
    s, session, existing = refusing
    await s.publish(memory_config(labels=LABELS, **settings))
    before = await records(api, s.agent_id)
    turn = await s.turn(session)
    call = dict(call)
    if call.pop("delete", False):
        tool, query, variables = "delete_memory", DELETE, {"id": existing}
    elif call.pop("read", False):
        tool, query, variables = "read_memory", READ_AS, {"id": existing}
    else:
        tool, query, variables = "add_memory", ADD, call
    message = await expect_error(api, query, "NOT_ALLOWED", turn=turn, **variables)
    assert words in message
    view = await turn_view(api, turn)
    assert view["status"] == "OPEN"
    (failed,) = [e for e in view["executions"] if e["kind"] == "TOOL"]
    assert (failed["name"], failed["status"], failed["error"]) == (tool, "FAILED", message)
    await s.commit(turn)
    view = await turn_view(api, turn)
    assert view["memories"] == []
    # a memory tool's events are read once the turn commits (staged until then)
    errors = [e for e in view["transcript"] if e["type"] == "TOOL_ERROR"]
    assert [(e["toolName"], e["payload"]["code"]) for e in errors] == [(tool, "NOT_ALLOWED")]
    assert (
        await records(api, s.agent_id)
        == before
        == [{**before[0], "id": existing, "status": "ACTIVE"}]
    )


async def test_r24_pin_over_budget_with_replaces_keeps_the_replaced_record(api: Api) -> None:
    """R24: a refused replacement leaves the record it named ACTIVE, in the turn and after."""
    s = Scenario(api)
    await s.agent(memory_config(pinned=20))
    session = await s.session()
    record = await s.committed(OVERDUE, session)
    turn = await s.turn(session)
    await expect_error(
        api, ADD, "NOT_ALLOWED", turn=turn, summary="y" * 60, pinned=True, replaces=record
    )
    assert await status_seen(s, turn, record) == "ACTIVE"
    await s.commit(turn)
    view = await memory_record(api, record)
    assert view["status"] == "ACTIVE" and len(view["versions"]) == 1


async def test_r24_refusal_mid_turn_keeps_the_turns_earlier_writes(api: Api) -> None:
    """R24 changes nothing, including what the same turn wrote before the refused call."""
    s = Scenario(api)
    await s.agent(memory_config(kinds=["note"]))
    session = await s.session()
    turn = await s.turn(session)
    kept = await s.add_id(turn, OVERDUE)
    await expect_error(api, ADD, "NOT_ALLOWED", turn=turn, summary="x", kind="fact")
    assert await status_seen(s, turn, kept) == "ACTIVE"
    await s.commit(turn)
    assert [r["id"] for r in await records(api, s.agent_id)] == [kept]


# R3, R4 - kinds and labels of a written record


async def test_r3_default_kind_is_the_first_declared(api: Api) -> None:
    """R3: without a kind, a record takes the first declared kind."""
    s = Scenario(api)
    await s.agent(memory_config(kinds=["note", "decision"]))
    turn = await s.turn(await s.session())
    plain = await s.add_id(turn, SHIPPING)
    decision = await s.add_id(turn, REFUNDS, kind="decision")
    await s.commit(turn)
    assert (await memory_record(api, plain))["current"]["kind"] == "note"
    assert (await memory_record(api, decision))["current"]["kind"] == "decision"


async def test_r4_label_values_are_stored_and_filterable(api: Api) -> None:
    """R4: declared label values are kept as exact strings and filter the listing."""
    s = Scenario(api)
    await s.agent(memory_config(labels=LABELS))
    turn = await s.turn(await s.session())
    first = await s.add_id(turn, OVERDUE, labels={"customer_id": "42"})
    await s.add_id(turn, REFUNDS, labels={"customer_id": "7"})
    await s.commit(turn)
    assert (await memory_record(api, first))["current"]["labels"] == {"customer_id": "42"}
    found = await records(api, s.agent_id, labels=[{"name": "customer_id", "value": "42"}])
    assert [r["id"] for r in found] == [first]


async def test_r4_malformed_label_values_are_bad_input(api: Api) -> None:
    """R4: a label value is a non-empty string of bounded length, and a label is given
    once."""
    s = Scenario(api)
    await s.agent(memory_config(labels=LABELS))
    turn = await s.turn(await s.session())
    malformed = [[("customer_id", "")], [("customer_id", "v" * 201)]]
    for labels in [*malformed, [("customer_id", "1"), ("customer_id", "2")]]:
        given = [{"name": name, "value": value} for name, value in labels]
        message = await expect_error(api, ADD, "BAD_INPUT", turn=turn, summary="x", labels=given)
        assert "customer_id" in message
    await s.commit(turn)
    assert await records(api, s.agent_id) == []


async def test_summary_must_be_one_bounded_line(api: Api) -> None:
    """A record's summary is one line, enough to act on; anything else is bad input."""
    s = Scenario(api)
    await s.agent(memory_config())
    turn = await s.turn(await s.session())
    for summary in ("", "   ", "two\nlines", "s" * 501):
        message = await expect_error(api, ADD, "BAD_INPUT", turn=turn, summary=summary)
        assert "summary" in message
    await s.commit(turn)
    assert await records(api, s.agent_id) == []


# R25 - provenance and history


async def test_r25_every_version_names_who_wrote_it(api: Api) -> None:
    """R25: each version names its execution, invocation, agent version, session and turn."""
    s = Scenario(api)
    await s.agent(memory_config())
    v1 = (await api.ok("query($a: ID!) { agent(id: $a) { latestVersion { id } } }", a=s.agent_id))[
        "agent"
    ]["latestVersion"]["id"]
    session = await s.session()
    first = await s.begin(session)
    turn1, exec1 = first["turn"]["id"], first["execution"]["id"]
    inv1 = (await api.ok(INVOKE, execution=exec1, purpose="TURN"))["recordInvocation"][
        "invocation"
    ]["id"]
    added = (await api.ok(ADD_INVOKED, turn=turn1, summary=OVERDUE, invocation=inv1))["addMemory"]
    record = added["memories"][0]["recordId"]
    await s.commit(turn1)

    v2 = (await s.publish(memory_config()))["id"]
    second = await s.begin(session)
    turn2, exec2 = second["turn"]["id"], second["execution"]["id"]
    inv2 = (await api.ok(INVOKE, execution=exec2, purpose="MEMORY"))["recordInvocation"][
        "invocation"
    ]["id"]
    replaced = (
        await api.ok(ADD_INVOKED, turn=turn2, summary=PHONE, invocation=inv2, replaces=record)
    )["addMemory"]
    await s.commit(turn2)

    created, superseded = (await memory_record(api, record))["versions"]
    assert created["writtenBy"] == {
        "execution": {"id": added["execution"]["id"], "kind": "TOOL", "name": "add_memory"},
        "invocation": {"id": inv1, "purpose": "TURN"},
        "agentVersion": {"id": v1},
        "session": {"id": session},
        "turn": {"id": turn1},
    }
    assert superseded["writtenBy"] == {
        "execution": {"id": replaced["execution"]["id"], "kind": "TOOL", "name": "add_memory"},
        "invocation": {"id": inv2, "purpose": "MEMORY"},
        "agentVersion": {"id": v2},
        "session": {"id": session},
        "turn": {"id": turn2},
    }


async def test_r25_invocation_must_belong_to_the_calling_execution(api: Api) -> None:
    """R25: provenance cannot name a model call of another execution; nothing is written."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    other = await s.begin(session)
    foreign = (await api.ok(INVOKE, execution=other["execution"]["id"], purpose="TURN"))[
        "recordInvocation"
    ]["invocation"]["id"]
    turn = await s.turn(session)
    for invocation in (foreign, str(uuid.uuid4())):
        await expect_error(
            api, ADD_INVOKED, "NOT_FOUND", turn=turn, summary="x", invocation=invocation
        )
    await s.commit(turn)
    assert (await turn_view(api, turn))["memories"] == []


async def test_r25_deleted_and_superseded_records_stay_listed(api: Api) -> None:
    """R25: history stays readable: the listing filters by status and keeps them all."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    old = await s.committed(EMAIL, session)
    gone = await s.committed(INVOICES, session)
    turn = await s.turn(session)
    new = await s.add_id(turn, PHONE, replaces=old)
    await api.ok(DELETE, turn=turn, id=gone)
    await s.commit(turn)
    by_status = {
        st: [r["id"] for r in await records(api, s.agent_id, status=st)]
        for st in ("ACTIVE", "SUPERSEDED", "DELETED")
    }
    assert by_status == {"ACTIVE": [new], "SUPERSEDED": [old], "DELETED": [gone]}


# R26 - each native tool call is an execution


async def test_r26_add_memory_is_an_execution_listing_the_records_written(api: Api) -> None:
    """R26: add_memory is a tool execution under the turn's, its input the arguments and
    its output the records written (the new one and the one it superseded)."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    old = await s.committed(EMAIL, session)
    begun = await s.begin(session)
    turn = begun["turn"]["id"]
    added = await s.add(turn, PHONE, kind="fact", replaces=old)
    new = added["memories"][0]["recordId"]
    execution = added["execution"]
    assert (execution["name"], execution["status"]) == ("add_memory", "SUCCEEDED")
    assert [(m["id"], m["status"]) for m in execution["output"]["memories"]] == [
        (new, "ACTIVE"),
        (old, "SUPERSEDED"),
    ]
    await s.commit(turn)  # an open turn's memory tools read as staged until it commits
    view = await turn_view(api, turn)
    (tool,) = [e for e in view["executions"] if e["kind"] == "TOOL"]
    assert tool["parent"] == {"id": begun["execution"]["id"]}
    assert tool["input"]["summary"] == PHONE and tool["input"]["replaces"] == old
    results = [e for e in view["transcript"] if e["type"] == "TOOL_RESULT"]
    assert [(e["toolName"], e["execution"]["id"]) for e in results] == [("add_memory", tool["id"])]


async def test_r26_delete_and_read_outputs(api: Api) -> None:
    """R26: delete_memory's output lists the record deleted in memories; read_memory's
    lists the record read in sources."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    record = await s.committed(EMAIL, session)
    turn = await s.turn(session)
    read = await s.read(turn, record)
    assert isinstance(read, dict)
    assert (
        read["execution"]["name"],
        [x["id"] for x in read["execution"]["output"]["sources"]],
    ) == ("read_memory", [record])
    deleted = (await api.ok(DELETE, turn=turn, id=record))["deleteMemory"]["execution"]
    assert deleted["name"] == "delete_memory"
    assert [(m["id"], m["status"]) for m in deleted["output"]["memories"]] == [(record, "DELETED")]


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"summary": "prefers \x00 email"}, "summary"),
        ({"summary": "ok", "content": "line\x00two"}, "content"),
        ({"summary": "ok", "kind": "fa\x00ct"}, "kind"),
    ],
)
async def test_a_tool_argument_with_nul_is_bad_input_and_records_nothing(
    api: Api, arguments: dict[str, Any], field: str
) -> None:
    """A native tool keeps its arguments as its execution's input, and PostgreSQL holds
    no NUL: the call is BAD_INPUT naming the argument, and the turn shows no trace."""
    s = Scenario(api)
    await s.agent(memory_config())
    turn = await s.turn(await s.session())
    before = await turn_view(api, turn)
    message, ext = await api.error(ADD, turn=turn, **arguments)
    assert ext == {"code": "BAD_INPUT", "field": field}, message
    assert await turn_view(api, turn) == before
