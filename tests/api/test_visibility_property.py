"""The visibility gate end to end (R10-R14, R21, R30): what the API lets a reader see is
exactly what :func:`visible_records` allows, and the SQL gate is its twin.

The property test drives two random agents through the real schema (sessions, live
and preview turns, some left open, records written with scope choices, replaced,
deleted, committed and rolled back), then reads the records' facts back from the
database and checks, for many readers, that the API's read_memory (Purpose.READ), the
pinned list of beginTurn (Purpose.SEARCH), and replace/delete (Purpose.CHANGE) agree
with the reference filter, and that ``record_condition`` selects the very same rows.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st
from sqlalchemy import and_, insert, literal, select, union_all
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from server.domain.pinned import pinned_line
from server.domain.visibility import (
    Purpose,
    Reader,
    RecordFacts,
    effective_status,
    version_in_force,
    visible_records,
)
from server.models import MemoryRecord, MemoryVersion
from server.storage.gate import effective_status as sql_status
from server.storage.gate import record_condition
from server.storage.gate import version_in_force as sql_version
from tests.api.scenario import ADD, DELETE, READ, Scenario, memory_config
from tests.conftest import Api

EXAMPLES = 15
PIN_BUDGET = 100_000
READING_TURNS = 3  # open turns that read every id through the API, per example

# (scope.read, scope.write) of the versions each agent publishes; a reader's turn picks one.
SESSION_CONFIGS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("session",), ("session",)),
    (("agent",), ("agent",)),
    (("session", "agent"), ("session", "agent")),
    (("session",), ("session", "agent")),
    (("session", "agent"), ("session",)),
)
SESSIONLESS_CONFIGS = ((("agent",), ("agent",)),)
SCOPE_SETS = (("session",), ("agent",), ("session", "agent"))

BEGIN_VERSION = """
mutation($session: ID, $agent: ID, $version: ID!, $preview: Boolean!) {
  beginTurn(input: {sessionId: $session, agentId: $agent, agentVersionId: $version,
                    preview: $preview}) {
    turn { id preview }
    pinned { recordId versionId summary line }
  }
}"""
# Weighted: most steps write, so that each example holds records in many states.
ACTIONS = ("begin", "add", "add", "add", "add", "delete", "delete", "end")
AGENT_MEMORY = """
query($id: ID!) { agentMemory(id: $id) { id status preview scope } }"""


@dataclass
class World:
    """What the test created through the API, and what it knows of each turn."""

    scenario: Scenario
    agents: list[uuid.UUID] = field(default_factory=list)
    sessionless: dict[uuid.UUID, bool] = field(default_factory=dict)
    versions: dict[uuid.UUID, dict[tuple[tuple[str, ...], tuple[str, ...]], str]] = field(
        default_factory=dict
    )
    sessions: dict[uuid.UUID, list[uuid.UUID]] = field(default_factory=dict)
    readers: dict[uuid.UUID, Reader] = field(default_factory=dict)  # every turn begun
    open_turns: list[uuid.UUID] = field(default_factory=list)
    record_ids: list[uuid.UUID] = field(default_factory=list)  # rolled back ones stay listed


@dataclass(frozen=True)
class Row:
    facts: RecordFacts
    pinned: bool
    summary: str


async def load_rows(api: Api, agents: list[uuid.UUID]) -> list[Row]:
    """Every record of these agents as the database holds it now."""
    assert api.database.sessionmaker is not None
    async with api.database.sessionmaker() as db:
        rows = (
            await db.execute(
                select(MemoryRecord, MemoryVersion.summary)
                .join(
                    MemoryVersion,
                    and_(
                        MemoryVersion.id == MemoryRecord.current_version_id,  # type: ignore[arg-type]
                        MemoryVersion.agent_id == MemoryRecord.agent_id,  # type: ignore[arg-type]
                    ),
                )
                .where(MemoryRecord.agent_id.in_(agents))  # type: ignore[attr-defined]
                .order_by(MemoryRecord.seq)
            )
        ).all()
    return [Row(facts=facts_of(r), pinned=r.pinned, summary=summary) for r, summary in rows]


def facts_of(r: MemoryRecord) -> RecordFacts:
    return RecordFacts(
        id=r.id,
        agent_id=r.agent_id,
        scope=r.scope,
        session_id=r.session_id,
        status=r.status,
        preview=r.preview,
        committed=r.committed,
        turn_id=r.turn_id,
        replaces_id=r.replaces_id,
        pending_turn_id=r.pending_turn_id,
        prior_status=r.prior_status,
        current_version_id=r.current_version_id,
        prior_version_id=r.prior_version_id,
    )


def ids(reader: Reader, rows: list[Row], purpose: Purpose) -> set[uuid.UUID]:
    return {f.id for f in visible_records(reader, [r.facts for r in rows], purpose=purpose)}


async def gate_ids(db: AsyncSession, asks: list[tuple[Reader, Purpose]]) -> list[set[uuid.UUID]]:
    """``select(MemoryRecord.id).where(record_condition(reader, purpose=p))`` for each ask,
    sent as one UNION ALL per hundred asks to spare round trips."""
    found: list[set[uuid.UUID]] = [set() for _ in asks]
    for start in range(0, len(asks), 100):
        chunk = asks[start : start + 100]
        selects = [
            select(literal(start + n).label("ask"), MemoryRecord.id).where(
                record_condition(reader, purpose=purpose)
            )
            for n, (reader, purpose) in enumerate(chunk)
        ]
        for ask, record in (await db.execute(union_all(*selects))).all():
            found[ask].add(record)
    return found


def asks_for(reader: Reader) -> list[tuple[Reader, Purpose]]:
    """The reader as it is, and its turn under every other configuration and mode: the SQL
    twin must agree for configurations no version published. Write scopes matter only to
    Purpose.CHANGE, so only there are they varied."""
    assert reader.turn_id is not None
    asks = [(reader, purpose) for purpose in Purpose]
    for read, write, preview in itertools.product(SCOPE_SETS, SCOPE_SETS, (False, True)):
        variant = Reader.for_turn(
            agent_id=reader.agent_id,
            session_id=reader.session_id,
            turn_id=reader.turn_id,
            preview=preview,
            read_scopes=read,
            write_scopes=write,
        )
        asks.append((variant, Purpose.CHANGE))
        if write == SCOPE_SETS[0]:
            asks += [(variant, Purpose.SEARCH), (variant, Purpose.READ)]
    return asks


async def check_gate_twin(api: Api, world: World, rows: list[Row]) -> None:
    """``record_condition`` selects exactly what ``visible_records`` keeps, for every reader
    and purpose (among this example's agents; the gate itself keeps to one agent)."""
    ours = {r.facts.id for r in rows}
    asks = [ask for reader in world.readers.values() for ask in asks_for(reader)]
    asks += itertools.product([Reader.for_api(agent_id=a) for a in world.agents], Purpose)
    assert api.database.sessionmaker is not None
    async with api.database.sessionmaker() as db:
        found = await gate_ids(db, asks)
    for (reader, purpose), got in zip(asks, found, strict=True):
        assert got <= ours, "the gate let through another agent's records (R10)"
        assert got == ids(reader, rows, purpose), (reader, purpose)


# -- driving the API ------------------------------------------------------------------


async def make_agent(world: World, *, sessionless: bool) -> None:
    agent = uuid.UUID(await world.scenario.agent(sessionless=sessionless))
    world.agents.append(agent)
    world.sessionless[agent] = sessionless
    world.sessions[agent] = []
    world.versions[agent] = {}


async def version_for(
    world: World, agent: uuid.UUID, data: st.DataObject
) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """A version of a random configuration, published the first time it is drawn."""
    configs = SESSIONLESS_CONFIGS if world.sessionless[agent] else SESSION_CONFIGS
    read, write = data.draw(st.sampled_from(configs), label="scope read/write")
    if (read, write) not in world.versions[agent]:
        world.scenario.agent_id = str(agent)
        published = await world.scenario.publish(
            memory_config(read=list(read), write=list(write), pinned=PIN_BUDGET)
        )
        world.versions[agent][read, write] = published["id"]
    return world.versions[agent][read, write], read, write


async def begin(world: World, data: st.DataObject) -> uuid.UUID:
    """Open a turn of a random agent, session, version and mode; check its pinned list."""
    s = world.scenario
    agent = data.draw(st.sampled_from(world.agents), label="agent")
    s.agent_id = str(agent)
    session: uuid.UUID | None = None
    if not world.sessionless[agent]:
        known = world.sessions[agent]
        pick = data.draw(st.integers(0, len(known)), label="session (last: new)")
        if pick == len(known):
            known.append(uuid.UUID(await s.session()))
        session = known[pick]
    version, read, write = await version_for(world, agent, data)
    preview = data.draw(st.booleans(), label="preview")
    before = await load_rows(s.api, world.agents)
    begun = (
        await s.api.ok(
            BEGIN_VERSION,
            session=str(session) if session else None,
            agent=None if session else str(agent),
            version=version,
            preview=preview,
        )
    )["beginTurn"]
    turn = uuid.UUID(begun["turn"]["id"])
    reader = Reader.for_turn(
        agent_id=agent,
        session_id=session,
        turn_id=turn,
        preview=preview,
        read_scopes=read,
        write_scopes=write,
    )
    world.readers[turn] = reader
    world.open_turns.append(turn)
    check_pinned(reader, before, begun["pinned"])
    return turn


def check_pinned(reader: Reader, rows: list[Row], pinned: list[dict[str, Any]]) -> None:
    """R30 through the gate: beginTurn lists, oldest first, the pinned records the turn can
    recall (Purpose.SEARCH: ACTIVE only), each line its summary and id, each naming the
    version in force for the turn."""
    visible = ids(reader, rows, Purpose.SEARCH)
    want = [r for r in rows if r.pinned and r.facts.id in visible]
    assert [uuid.UUID(p["recordId"]) for p in pinned] == [r.facts.id for r in want]
    assert [p["line"] for p in pinned] == [pinned_line(r.summary, r.facts.id) for r in want]
    # R12: the version listed is the one in force for this turn, never another turn's staging.
    assert [uuid.UUID(p["versionId"]) for p in pinned] == [
        version_in_force(reader, r.facts) for r in want
    ]


def pick_target(world: World, data: st.DataObject, reader: Reader, rows: list[Row]) -> uuid.UUID:
    """Any id the test knows, or, half the time, one the reference lets the turn change:
    refusals come easily, while successful changes build the states worth checking."""
    # in creation order, not sorted by id: ids are fresh each run, and a draw must pick the
    # same record whenever hypothesis replays the same choices
    changeable = ids(reader, rows, Purpose.CHANGE)
    reachable = [r for r in world.record_ids if r in changeable]
    if reachable and data.draw(st.booleans(), label="reachable target?"):
        return data.draw(st.sampled_from(reachable), label="target")
    return data.draw(st.sampled_from(world.record_ids), label="target")


def change_refusal(
    reader: Reader, rows: list[Row], target: uuid.UUID, *, changes_status: bool
) -> str | None:
    """The error code replacing or deleting ``target`` must give, by the reference (R21, R12)."""
    if target not in ids(reader, rows, Purpose.CHANGE):
        # R24: a record the agent reads but may not change is refused as not allowed.
        return "NOT_ALLOWED" if target in ids(reader, rows, Purpose.READ) else "NOT_FOUND"
    facts = next(r.facts for r in rows if r.facts.id == target)
    if effective_status(reader, facts) != "ACTIVE":
        return "CONFLICT"
    staged_by_other = facts.pending_turn_id not in (None, reader.turn_id)
    if staged_by_other and (facts.preview or not reader.preview) and changes_status:
        return "CONFLICT"
    return None


def out_of_reach(reader: Reader, facts: RecordFacts | None) -> bool:
    """docs/security.md, "Ownership": a record a turn may not name at all (another
    agent's; another session's session-scope record; a preview turn's, from a live turn;
    one another open turn staged) is refused NOT_FOUND before the call runs, ahead of
    any other refusal. An id that names nothing is left to the call."""
    if facts is None:
        return False
    return (
        facts.agent_id != reader.agent_id
        or (facts.scope == "SESSION" and facts.session_id != reader.session_id)
        or (facts.preview and not reader.preview)
        or (not facts.committed and facts.turn_id != reader.turn_id)
    )


def scope_refusal(reader: Reader, scope: str | None) -> str | None:
    """R20: session unless the agent asks for agent; only scopes in scope.write."""
    choice = (
        scope.lower() if scope else ("session" if "session" in reader.write_scopes else "agent")
    )
    if choice not in reader.write_scopes or (choice == "session" and reader.session_id is None):
        return "NOT_ALLOWED"
    return None


async def add(world: World, data: st.DataObject, turn: uuid.UUID, n: int) -> None:
    s = world.scenario
    reader = world.readers[turn]
    scope = data.draw(st.sampled_from([None, None, "SESSION", "AGENT"]), label="scope")
    pinned = data.draw(st.booleans(), label="pinned")
    rows = await load_rows(s.api, world.agents)
    replaces = None
    if world.record_ids and data.draw(st.booleans(), label="replaces?"):
        replaces = pick_target(world, data, reader, rows)
    target_refusal = None
    unreachable = False
    if replaces is not None:
        facts = next((r.facts for r in rows if r.facts.id == replaces), None)
        # A preview turn changes no live record: it names it from a new preview record.
        changes_status = facts is not None and (facts.preview or not reader.preview)
        target_refusal = change_refusal(reader, rows, replaces, changes_status=changes_status)
        unreachable = out_of_reach(reader, facts)
    refusal = "NOT_FOUND" if unreachable else scope_refusal(reader, scope) or target_refusal
    event(f"add: {refusal or 'saved'}{' (replaces)' if replaces else ''}")
    result = await s.api.execute(
        ADD,
        turn=str(turn),
        summary=f"note {n}",
        scope=scope,
        pinned=pinned,
        replaces=str(replaces) if replaces else None,
    )
    if refusal is not None:
        assert result.errors, f"expected {refusal}, the API saved {result.data}"
        assert result.errors[0].extensions["code"] == refusal, result.errors[0].message
        return
    assert result.errors is None, [(e.message, e.extensions) for e in result.errors]
    world.record_ids.append(uuid.UUID(result.data["addMemory"]["memories"][0]["recordId"]))


async def delete(world: World, data: st.DataObject, turn: uuid.UUID) -> None:
    s = world.scenario
    reader = world.readers[turn]
    rows = await load_rows(s.api, world.agents)
    target = pick_target(world, data, reader, rows)
    facts = next((r.facts for r in rows if r.facts.id == target), None)
    changes_status = facts is not None and (facts.preview or not reader.preview)
    refusal = change_refusal(reader, rows, target, changes_status=changes_status)
    event(f"delete: {refusal or ('deleted' if changes_status else 'preview marker')}")
    result = await s.api.execute(DELETE, turn=str(turn), id=str(target))
    if refusal is not None:
        assert result.errors, f"expected {refusal}, the API deleted: {result.data}"
        assert result.errors[0].extensions["code"] == refusal, result.errors[0].message
        return
    assert result.errors is None, [(e.message, e.extensions) for e in result.errors]
    written = result.data["deleteMemory"]["memories"][0]
    if not changes_status:  # R22: a preview record of status DELETED that names it
        assert written["record"]["preview"] and written["record"]["replaces"]["id"] == str(target)
        world.record_ids.append(uuid.UUID(written["recordId"]))


async def end(world: World, data: st.DataObject, turn: uuid.UUID) -> None:
    if data.draw(st.sampled_from(["commit", "commit", "commit", "rollback"]), label="end") == (
        "commit"
    ):
        await world.scenario.commit(str(turn))
    else:
        await world.scenario.rollback(str(turn))
    world.open_turns.remove(turn)


async def check_reads(world: World, rows: list[Row], readers: list[uuid.UUID]) -> None:
    """Each reading turn reads every id it might know (R14: any status) exactly when the
    reference allows, and sees the version and status in force for it (R12: the prior ones
    while another turn stages a change)."""
    s = world.scenario
    by_id = {r.facts.id: r for r in rows}
    for turn in readers:
        reader = world.readers[turn]
        allowed = ids(reader, rows, Purpose.READ)
        for record in world.record_ids:
            result = await s.api.execute(READ, turn=str(turn), id=str(record))
            if record not in allowed:
                assert result.errors, f"{reader} read {record}, which it must not see"
                assert result.errors[0].extensions["code"] == "NOT_FOUND"
                continue
            assert result.errors is None, (reader, record, result.errors[0].message)
            (source,) = result.data["readMemory"]["sources"]
            facts = by_id[record].facts
            assert source["recordId"] == str(record)
            assert source["id"] == str(version_in_force(reader, facts))
            assert source["status"] == effective_status(reader, facts)


async def check_api_reader(world: World, rows: list[Row]) -> None:
    """R25, R71: agentMemory shows every committed record of the agent, any status, preview
    or live, with the status before any change an open turn staged; never an uncommitted one."""
    by_id = {r.facts.id: r for r in rows}
    for record in world.record_ids:
        row = by_id.get(record)
        result = await world.scenario.api.execute(AGENT_MEMORY, id=str(record))
        if row is None:  # rolled back: no trace (R12)
            assert result.errors and result.errors[0].extensions["code"] == "NOT_FOUND"
            continue
        api_reader = Reader.for_api(agent_id=row.facts.agent_id)
        if record not in ids(api_reader, rows, Purpose.READ):
            assert result.errors and result.errors[0].extensions["code"] == "NOT_FOUND"
            continue
        assert result.errors is None, result.errors[0].message
        shown = result.data["agentMemory"]
        assert shown["status"] == effective_status(api_reader, row.facts)
        assert shown["preview"] is row.facts.preview


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    # record ids are fresh UUIDs every run, so a stored example cannot be replayed
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    # No shrinking: an example costs seconds of API calls, so shrinking one takes minutes;
    # a failure prints every draw, which names the steps to replay.
    phases=[Phase.explicit, Phase.generate],
)
@given(data=st.data())
async def test_r10_r14_r21_r30_api_shows_exactly_what_the_gate_allows(
    api: Api, data: st.DataObject
) -> None:
    """R10-R14, R21, R30: for random agents, sessions, turns and records built through the
    API, every open turn reads, pins, replaces and deletes exactly the records
    ``visible_records`` allows, API readers see every committed record, and the SQL gate
    (``record_condition``) selects the same rows as the reference for every purpose."""
    world = World(scenario=Scenario(api))
    await make_agent(world, sessionless=False)
    await make_agent(world, sessionless=data.draw(st.booleans(), label="second sessionless"))
    steps = data.draw(st.integers(10, 24), label="steps")
    for n in range(steps):
        action = data.draw(st.sampled_from(ACTIONS), label="action")
        if action == "begin" or not world.open_turns:
            await begin(world, data)
            continue
        turn = data.draw(st.sampled_from(world.open_turns), label="turn")
        if action == "add":
            await add(world, data, turn, n)
        elif action == "delete" and world.record_ids:
            await delete(world, data, turn)
        elif action == "end":
            await end(world, data, turn)
    for _ in range(data.draw(st.integers(1, 3), label="fresh readers")):
        await begin(world, data)  # checks the pinned list against the reference
    rows = await load_rows(api, world.agents)
    await check_gate_twin(api, world, rows)
    reading = data.draw(
        st.lists(
            st.sampled_from(world.open_turns), min_size=1, max_size=READING_TURNS, unique=True
        ),
        label="reading turns",
    )
    await check_reads(world, rows, reading)
    await check_api_reader(world, rows)


# -- every row shape, inserted directly, against the SQL gate ------------------------------


async def test_r10_r14_r21_sql_gate_is_the_twin_of_the_reference_on_every_row_shape(
    api: Api,
) -> None:
    """R10-R14, R21: rows in every shape the gate reads (scope, session, preview, status,
    staged change, writer) plus preview and live records naming others, of two agents,
    inserted in one transaction that is rolled back; for every kind of reader and purpose,
    ``record_condition`` selects exactly what ``visible_records`` keeps."""
    s = Scenario(api)
    other_agent = uuid.UUID(
        await s.agent(memory_config(read=["agent"], write=["agent"]), sessionless=True)
    )
    foreign_turn = uuid.UUID(await s.turn())
    await s.commit(str(foreign_turn))
    agent = uuid.UUID(
        await s.agent(memory_config(read=["session", "agent"], write=["session", "agent"]))
    )
    one, two = uuid.UUID(await s.session()), uuid.UUID(await s.session())
    committed_turn = uuid.UUID(await s.turn(str(one)))
    await s.commit(str(committed_turn))
    reader_turn = uuid.UUID(await s.turn(str(one)))
    other_turn = uuid.UUID(await s.turn(str(two)))

    writers = {"committed": committed_turn, "reader": reader_turn, "other": other_turn}
    staged = {"none": None, "reader": reader_turn, "other": other_turn}
    states = (
        [("ACTIVE", "none")]
        + [(status, by) for status in ("SUPERSEDED", "DELETED") for by in ("reader", "other")]
        + [("SUPERSEDED", "none"), ("DELETED", "none")]
    )
    rows: list[MemoryRecord] = []
    for scope, session, preview, (status, by), writer in itertools.product(
        ("SESSION", "AGENT"), (one, two, None), (False, True), states, writers
    ):
        rows.append(
            MemoryRecord(
                agent_id=agent,
                scope=scope,
                session_id=session,
                status=status,
                preview=preview,
                committed=writer == "committed",
                turn_id=writers[writer],
                pending_turn_id=staged[by],
                prior_status=None if by == "none" else "ACTIVE",
                current_version_id=uuid.uuid4(),
                prior_version_id=None if by == "none" else uuid.uuid4(),
            )
        )
    # Each pair of shapes (record named, preview record naming it) once, on a fresh pair of
    # rows; and each named shape once more under a live record naming it (which hides nothing).
    shapes = list(itertools.product(("SESSION", "AGENT"), (one, two, None), writers, (False, True)))
    pairs = [(named, naming) for named in shapes for naming in shapes if naming[3]]
    pairs += [(named, ("AGENT", one, "committed", False)) for named in shapes]
    for n, (named, naming) in enumerate(pairs):
        target = MemoryRecord(
            agent_id=agent,
            scope=named[0],
            session_id=named[1],
            preview=named[3],
            committed=named[2] == "committed",
            turn_id=writers[named[2]],
        )
        rows += [
            target,
            MemoryRecord(
                agent_id=agent,
                scope=naming[0],
                session_id=naming[1],
                preview=naming[3],
                status=("ACTIVE", "DELETED")[n % 2],
                committed=naming[2] == "committed",
                turn_id=writers[naming[2]],
                replaces_id=target.id,
            ),
        ]
    # Another agent's preview record naming one of this agent's records hides nothing (R10).
    # On Citus the database refuses it outright: a record names records of its own agent
    # (a foreign key of (agent_id, replaces_id), docs/scaling.md).
    foreign = MemoryRecord(
        agent_id=other_agent,
        scope="AGENT",
        status="DELETED",
        preview=True,
        committed=True,
        turn_id=foreign_turn,
        replaces_id=rows[0].id,
    )
    facts = [facts_of(r) for r in (*rows, foreign)]
    readers = [
        Reader.for_turn(
            agent_id=agent,
            session_id=session,
            turn_id=turn,
            preview=preview,
            read_scopes=read,
            write_scopes=write,
        )
        for session, turn, preview, read, write in itertools.product(
            (one, None), (reader_turn, other_turn), (False, True), SCOPE_SETS, SCOPE_SETS
        )
    ] + [Reader.for_api(agent_id=agent), Reader.for_api(agent_id=other_agent)]
    asks = list(itertools.product(readers, Purpose))
    ours = {f.id for f in facts}

    assert api.database.sessionmaker is not None
    async with api.database.sessionmaker() as db:
        columns = [
            c.name
            for c in MemoryRecord.__table__.columns  # type: ignore[attr-defined]
            if c.name not in ("seq", "created_at")
        ]
        await db.execute(insert(MemoryRecord), [{c: getattr(r, c) for c in columns} for r in rows])
        try:
            async with db.begin_nested():
                await db.execute(insert(MemoryRecord), [{c: getattr(foreign, c) for c in columns}])
        except IntegrityError:
            facts.pop()  # refused (Citus): nothing to hide, nothing to show
            ours.discard(foreign.id)
        try:
            found = await gate_ids(db, asks)
            seen = {
                reader: (
                    await db.execute(
                        select(MemoryRecord.id, sql_status(reader), sql_version(reader)).where(
                            MemoryRecord.agent_id == agent  # type: ignore[arg-type]
                        )
                    )
                ).all()
                for reader in {r.turn_id: r for r in readers}.values()  # each turn, and none
            }
        finally:
            await db.rollback()
    by_id = {f.id: f for f in facts}
    for reader, shown_rows in seen.items():
        assert len(shown_rows) == sum(f.agent_id == agent for f in facts)
        for record, status, version in shown_rows:
            assert status == effective_status(reader, by_id[record]), (reader, record)
            assert version == version_in_force(reader, by_id[record]), (reader, record)
    shown = 0
    for (reader, purpose), got in zip(asks, found, strict=True):
        want = {f.id for f in visible_records(reader, facts, purpose=purpose)}
        assert got & ours == want, (reader, purpose, sorted(map(str, got ^ want)))
        shown += len(want)
    assert 0 < shown < len(asks) * len(facts)  # the rows are neither all shown nor all hidden


async def test_r12_r30_pinned_list_names_the_version_in_force_while_a_change_is_staged(
    api: Api,
) -> None:
    """R12, R30: while an open turn has staged the deletion of a pinned record, every other
    turn still lists it (prior status ACTIVE) and names the version in force, not the
    staged version that a rollback would remove."""
    s = Scenario(api)
    await s.agent(memory_config(read=["session", "agent"], write=["session", "agent"], pinned=1000))
    session = await s.session()
    turn = await s.turn(session)
    written = (await s.add(turn, "The customer prefers email", pinned=True))["memories"][0]
    await s.commit(turn)
    staging = await s.turn(session)
    await api.ok(DELETE, turn=staging, id=written["recordId"])
    listed = (await s.begin(session))["pinned"]
    assert [(p["recordId"], p["versionId"]) for p in listed] == [
        (written["recordId"], written["id"])
    ]
    assert (await s.begin(session))["pinned"] == listed
