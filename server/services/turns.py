"""The turn lifecycle: begin, commit, roll back, fail, retry and replay.

A turn is the transaction of the memory it writes (R12): records and status
changes staged by an open turn are seen by that turn only; ``commit`` publishes
them; ``rollback`` and ``fail`` remove them (rows removed, not hidden). The turn's
transcript (its executions and events) stays in every case; the memory text in it is
then the agent's alone (resolvers/permissions.py).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import and_, bindparam, case, delete, func, insert, null, or_, select, true, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain.config import HarnessConfig
from server.domain.history import SEARCH_FIRST, HistoryReader
from server.domain.text import check_text
from server.domain.visibility import Reader
from server.errors import BadInputError, ConflictError, NotAllowedError, NotFoundError
from server.models import (
    Agent,
    AgentVersion,
    Execution,
    HistoryEvent,
    Invocation,
    MemoryRecord,
    MemoryVersion,
    Session,
    Turn,
)
from server.services.agents import (
    config_of,
    latest_version,
    session_to_begin,
)
from server.services.lookup import get
from server.services.pins import PinnedEntry, pinned_list
from server.services.transcript import AS_WRITTEN, append_event, start_execution
from server.storage.built import built_once
from server.storage.history_gate import history_condition


@dataclass(frozen=True, slots=True)
class BegunTurn:
    turn: Turn
    execution: Execution
    pinned: list[PinnedEntry]
    notes: list[str]  # lines the instructions carry after the pinned ones


@dataclass(frozen=True, slots=True)
class TurnScope:
    """Everything a native tool call needs to know about its turn."""

    turn: Turn
    agent: Agent
    version: AgentVersion
    config: HarnessConfig
    caller: Execution
    reader: Reader

    @property
    def read_only(self) -> bool:
        return self.caller.kind in ("helper", "program")


def reader_for(turn: Turn, config: HarnessConfig) -> Reader:
    return Reader.for_turn(
        agent_id=turn.agent_id,
        session_id=turn.session_id,
        turn_id=turn.id,
        preview=turn.preview,
        read_scopes=config.memory.read_scopes,
        write_scopes=config.memory.write_scopes,
    )


async def begin_turn(
    db: AsyncSession,
    *,
    session_id: uuid.UUID | None = None,
    agent_id: uuid.UUID | None = None,
    agent_version_id: uuid.UUID | None = None,
    preview: bool = False,
    replay_of: uuid.UUID | None = None,
    retry_of: uuid.UUID | None = None,
) -> BegunTurn:
    if (session_id is None) == (agent_id is None):
        raise BadInputError("pass exactly one of sessionId or agentId", field="sessionId")
    if replay_of is not None and retry_of is not None:
        raise BadInputError("a turn is either a replay or a retry, not both", field="replayOf")
    session: Session | None = None
    latest: AgentVersion | None = None
    if session_id is not None:
        session, agent, latest = await session_to_begin(db, session_id)
    else:
        assert agent_id is not None
        agent = await get(db, Agent, agent_id, lock=True)
        if not agent.sessionless:
            raise BadInputError(
                "this agent has sessions: begin its turns with sessionId", field="agentId"
            )
    if agent_version_id is None:
        version = latest or await latest_version(db, agent_id=agent.id)
    else:
        version = await get(db, AgentVersion, agent_version_id)
        if version.agent_id != agent.id:
            raise NotFoundError(f"no agent version with id {agent_version_id} for this agent")

    number, attempt, replay_of = await _number(
        db,
        agent=agent,
        session=session,
        replay_of=replay_of,
        retry_of=retry_of,
        preview=preview,
    )
    values: dict[str, Any] = {
        "id": uuid.uuid4(),
        "agent_id": agent.id,
        "session_id": session.id if session else None,
        "agent_version_id": version.id,
        "attempt": attempt,
        "status": "open",
        "preview": preview,
        "replay_of_id": replay_of,
        "retry_of_id": retry_of,
    }
    if number is None:  # the next in its place, counted by the INSERT
        values["place"] = session.id if session else agent.id
        stmt = _next_turn(in_session=session is not None)
    else:
        values["number"] = number
        stmt = _numbered()
    turn: Turn | None = await db.scalar(stmt, values)  # no unit of work
    assert turn is not None
    execution = await start_execution(db, turn=turn, kind="turn", name="turn", parent_id=None)
    config = config_of(version, agent)
    # R1, R7: without memory or a pin budget, nothing is pinned, so nothing is listed.
    max_tokens = config.memory.pinned_max_tokens if config.memory.enabled else None
    pins = await pinned_list(db, reader=reader_for(turn, config), max_tokens=max_tokens)
    notes = [pins.note] if pins.note else []
    payload: dict[str, Any] = {"omitted": _versions(pins.omitted)} if pins.omitted else {}
    await append_event(
        db,
        turn=turn,
        type="memory.pinned",
        execution_id=execution.id,
        payload={
            "lines": [p.line for p in pins.shown],
            "versions": _versions(pins.shown),
            **payload,
        },
    )
    if await _has_history(db, turn, config):
        notes.append(SEARCH_FIRST)
    return BegunTurn(turn=turn, execution=execution, pinned=pins.shown, notes=notes)


def _versions(entries: list[PinnedEntry]) -> list[dict[str, str]]:
    return [{"record": str(p.record_id), "version": str(p.version_id)} for p in entries]


async def _has_history(db: AsyncSession, turn: Turn, config: HarnessConfig) -> bool:
    """Whether the turn has kept history to search (R64: for a replay, the turns before
    its original; for a preview turn, preview turns' too) and history is on."""
    if config.history is None or turn.session_id is None:
        return False
    reader = HistoryReader(
        agent_id=turn.agent_id,
        session_id=turn.session_id,
        turn_number=turn.number,
        preview=turn.preview,
    )
    found = await db.scalar(
        select(col(HistoryEvent.id)).where(history_condition(reader, HistoryEvent)).limit(1)
    )
    return found is not None


async def _number(
    db: AsyncSession,
    *,
    agent: Agent,
    session: Session | None,
    replay_of: uuid.UUID | None,
    retry_of: uuid.UUID | None,
    preview: bool,
) -> tuple[int | None, int, uuid.UUID | None]:
    """Turn number, attempt and the replayed turn: a retry keeps the number (and, for a
    retried replay, what it replays); a replay takes the original's number. A new turn's
    number (``None`` here) is the next after its place's last, counted by the INSERT
    itself (the place, session or agent, is locked: turns are numbered one at a time)."""
    if replay_of is None and retry_of is None:
        return None, 1, None
    same_place = col(Turn.session_id) == session.id if session else col(Turn.agent_id) == agent.id
    for ref, what in ((replay_of, "replayOf"), (retry_of, "retryOf")):
        if ref is None:
            continue
        original = await db.scalar(select(Turn).where(col(Turn.id) == ref, same_place))
        if original is None:
            raise NotFoundError(f"no turn {ref} in this session", field=what)
        if what == "retryOf":
            if original.status != "failed":
                raise ConflictError("only a failed turn can be retried", field=what)
            retried = await db.scalar(
                select(col(Turn.id)).where(col(Turn.retry_of_id) == original.id)
            )
            if retried is not None:
                raise ConflictError("this attempt was already retried", field=what)
            if original.preview != preview:
                raise BadInputError("a retry keeps the original's preview flag", field=what)
            return original.number, original.attempt + 1, original.replay_of_id
        if original.status != "committed":
            raise ConflictError("only a committed turn can be replayed", field=what)
        return original.number, 1, original.id
    raise AssertionError("unreachable: a replay or a retry was named")


@built_once
def _next_turn(*, in_session: bool) -> Any:
    """A new turn, numbered the next after the last of its place (its session, or its
    agent: the column equal to the ``place`` parameter), returned."""
    place = col(Turn.session_id) if in_session else col(Turn.agent_id)
    last = func.coalesce(func.max(col(Turn.number)), 0)
    number = (
        select(last + 1)
        .where(place == bindparam("place"), col(Turn.replay_of_id).is_(None))
        .scalar_subquery()
    )
    return insert(Turn).values(number=number).returning(Turn).execution_options(**AS_WRITTEN)


@built_once
def _numbered() -> Any:
    return insert(Turn).returning(Turn).execution_options(**AS_WRITTEN)


async def open_turn(db: AsyncSession, *, turn_id: uuid.UUID, exclusive: bool = False) -> Turn:
    """The turn, which must be open, held open until this transaction ends (R12).

    ``FOR KEY SHARE`` lets the calls of one turn run side by side but makes a concurrent
    commit, rollback or fail wait for them (or them see it closed), so nothing is
    written to a turn after it closed. ``exclusive``: ``FOR UPDATE`` instead, one such
    call of the turn at a time (read fresh).
    """
    row = (await db.execute(_open_turn(exclusive), {"turn": turn_id})).first()
    return _still_open(row[0] if row else None, turn_id)


def _holding(stmt: Any, *, exclusive: bool) -> Any:
    """``stmt`` (which reads the turn) for the one turn (parameter ``turn``), locked as
    :func:`open_turn` says."""
    return (
        stmt.where(col(Turn.id) == bindparam("turn"))
        .with_for_update(of=Turn, read=not exclusive, key_share=not exclusive)
        .execution_options(populate_existing=exclusive)
    )


@built_once
def _open_turn(exclusive: bool) -> Any:
    return _holding(select(Turn), exclusive=exclusive)


@built_once
def _open_scope(by_caller: bool, exclusive: bool) -> Any:
    """:func:`open_scope`'s statement: the turn with its version, agent and caller
    execution (parameter ``caller`` if ``by_caller``, else the turn's own)."""
    if by_caller:
        caller_of = col(Execution.id) == bindparam("caller")
    else:
        caller_of = and_(col(Execution.turn_id) == col(Turn.id), col(Execution.kind) == "turn")
    stmt = (
        select(Turn, AgentVersion, Agent, Execution)
        .join(AgentVersion, col(AgentVersion.id) == col(Turn.agent_version_id))
        .join(Agent, col(Agent.id) == col(AgentVersion.agent_id))
        .outerjoin(Execution, caller_of)
    )
    return _holding(stmt, exclusive=exclusive)


def _still_open(turn: Turn | None, turn_id: uuid.UUID) -> Turn:
    if turn is None:
        raise NotFoundError(f"no turn with id {turn_id}")
    if turn.status != "open":
        raise ConflictError(f"turn {turn_id} is {turn.status}, not open")
    return turn


async def open_scope(
    db: AsyncSession,
    *,
    turn_id: uuid.UUID,
    caller_execution_id: uuid.UUID | None = None,
    exclusive: bool = False,
) -> TurnScope:
    """Resolve a tool call's turn (it must be open, locked as :func:`open_turn` locks it),
    its agent version and its caller execution (by default the turn's own), in one
    statement."""
    by_caller = caller_execution_id is not None
    params = {"turn": turn_id, "caller": caller_execution_id} if by_caller else {"turn": turn_id}
    row = (await db.execute(_open_scope(by_caller, exclusive), params)).first()
    turn = _still_open(row[0] if row else None, turn_id)
    assert row is not None
    _, version, agent, caller = row
    if caller_execution_id is not None:
        if caller is None or caller.turn_id != turn.id:
            raise NotFoundError(f"no execution {caller_execution_id} in this turn")
        if caller.kind == "tool":
            raise BadInputError("a native tool call cannot call tools", field="executionId")
    assert caller is not None
    config = config_of(version, agent)
    return TurnScope(
        turn=turn,
        agent=agent,
        version=version,
        config=config,
        caller=caller,
        reader=reader_for(turn, config),
    )


async def start_helper(
    db: AsyncSession,
    *,
    turn_id: uuid.UUID,
    kind: str,
    name: str,
    parent_execution_id: uuid.UUID | None = None,
) -> Execution:
    """Record a helper (subagent) or a program run by a programmatic tool caller (R23)."""
    if kind not in ("helper", "program"):
        raise BadInputError("kind must be helper or program", field="kind")
    check_text(name, field="name", maximum=200, blank=False)
    scope = await open_scope(db, turn_id=turn_id, caller_execution_id=parent_execution_id)
    return await start_execution(
        db, turn=scope.turn, kind=kind, name=name, parent_id=scope.caller.id
    )


async def _close(db: AsyncSession, turn_id: uuid.UUID, status: str, error: str | None) -> Turn:
    """End an open turn and its running executions. One statement locks the turn (FOR
    UPDATE: a tool call holds it FOR KEY SHARE until its write lands, which a plain
    update would not wait for) and closes it; of two closers the second finds it no
    longer open."""
    closed: Turn | None = await db.scalar(
        _closing(),
        {"turn": turn_id, "to_status": status, "to_error": error, "at": datetime.now(UTC)},
    )
    if closed is None:
        turn = await get(db, Turn, turn_id)
        await db.refresh(turn)
        raise ConflictError(f"turn {turn_id} is {turn.status}, not open")
    await db.execute(_ending(status == "committed"), {"turn": turn_id})
    return closed


# built once, run with parameters (AS_WRITTEN)
@built_once
def _closing() -> Any:
    locked = (
        select(col(Turn.id))
        .where(col(Turn.id) == bindparam("turn"), col(Turn.status) == "open")
        .with_for_update()
        .cte("locked")
    )
    return (
        update(Turn)
        .where(col(Turn.id).in_(select(locked.c.id)))
        .values(
            status=bindparam("to_status"), error=bindparam("to_error"), ended_at=bindparam("at")
        )
        .returning(Turn)
        .execution_options(**AS_WRITTEN, populate_existing=True, synchronize_session=False)
    )


@built_once
def _ending(succeeded: bool) -> Any:
    """The turn's (parameter ``turn``) running executions ended, as its close says."""
    return (
        update(Execution)
        .where(col(Execution.turn_id) == bindparam("turn"), col(Execution.status) == "running")
        .values(status="succeeded" if succeeded else "failed", ended_at=func.clock_timestamp())
        .execution_options(**AS_WRITTEN, synchronize_session="fetch")
    )


@built_once
def _publishing() -> Any:
    """The records the turn (parameter ``turn``) wrote are committed, those it changed
    released: one statement."""
    wrote = col(MemoryRecord.turn_id) == bindparam("turn")
    changed = col(MemoryRecord.pending_turn_id) == bindparam("turn")
    return (
        update(MemoryRecord)
        .where(or_(wrote, changed))
        .values(
            committed=case((wrote, true()), else_=col(MemoryRecord.committed)),
            pending_turn_id=case((changed, null()), else_=col(MemoryRecord.pending_turn_id)),
            prior_status=case((changed, null()), else_=col(MemoryRecord.prior_status)),
            prior_version_id=case((changed, null()), else_=col(MemoryRecord.prior_version_id)),
        )
        .execution_options(**AS_WRITTEN, synchronize_session="fetch")
    )


async def commit_turn(db: AsyncSession, *, turn_id: uuid.UUID) -> Turn:
    """Publish the turn's staged memory (R12)."""
    turn = await _close(db, turn_id, "committed", None)
    await db.execute(_publishing(), {"turn": turn_id})
    return turn


async def discard_staged(db: AsyncSession, *, turn_id: uuid.UUID) -> None:
    """Undo what an open turn staged: restore changed records, remove new rows (R12)."""
    changed = col(MemoryRecord.pending_turn_id) == turn_id
    await db.execute(
        update(MemoryRecord)
        .where(changed)
        .values(
            status=MemoryRecord.prior_status,
            current_version_id=MemoryRecord.prior_version_id,
            replaced_by_id=None,
            pending_turn_id=None,
            prior_status=None,
            prior_version_id=None,
        )
    )
    await db.execute(delete(MemoryVersion).where(col(MemoryVersion.turn_id) == turn_id))
    await db.execute(
        delete(MemoryRecord).where(
            col(MemoryRecord.turn_id) == turn_id, col(MemoryRecord.committed).is_(False)
        )
    )


async def rollback_turn(db: AsyncSession, *, turn_id: uuid.UUID) -> Turn:
    turn = await _close(db, turn_id, "rolled_back", None)
    await discard_staged(db, turn_id=turn_id)
    return turn


async def fail_turn(db: AsyncSession, *, turn_id: uuid.UUID, error: str | None) -> Turn:
    """A failed attempt keeps its transcript but none of its memory; it may be retried."""
    if error is not None and len(error) > 10_000:
        raise BadInputError("error must be at most 10000 characters", field="error")
    turn = await _close(db, turn_id, "failed", error)
    await discard_staged(db, turn_id=turn_id)
    return turn


def ensure_memory_enabled(scope: TurnScope) -> None:
    if not scope.config.memory.enabled:
        raise NotAllowedError(
            "memory is not enabled for this agent version (harness.memory.enabled)"
        )


async def record_invocation(
    db: AsyncSession,
    *,
    execution_id: uuid.UUID,
    purpose: str,
    model: str,
    input_tokens: int = 0,
    output_tokens: int = 0,
) -> Invocation:
    """Record one model call (purpose ``turn`` or ``memory``) inside an open turn."""
    execution = await get(db, Execution, execution_id)
    await open_turn(db, turn_id=execution.turn_id)
    if input_tokens < 0 or output_tokens < 0:
        raise BadInputError("token counts cannot be negative", field="inputTokens")
    check_text(model, field="model", maximum=200)
    invocation = Invocation(
        agent_id=execution.agent_id,
        execution_id=execution.id,
        purpose=purpose,
        model=model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        counted=purpose != "embed",
    )
    db.add(invocation)
    await db.flush()
    return invocation
