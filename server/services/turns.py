"""The turn lifecycle: begin (a new turn, a retry or a replay), commit, roll back,
fail, and what is recorded inside an open turn (helpers, model calls).

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

from sqlalchemy import bindparam, literal_column, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain.config import HarnessConfig
from server.domain.history import SEARCH_FIRST, HistoryReader
from server.domain.text import check_text
from server.errors import BadInputError, ConflictError, NotFoundError
from server.models import (
    Agent,
    AgentVersion,
    Execution,
    HistoryEvent,
    Invocation,
    Session,
    Turn,
    table,
)
from server.models._columns import CHANGED_AT
from server.services.agents import config_of, latest_version, session_to_begin
from server.services.lookup import get
from server.services.pins import PinnedEntry, pinned_list
from server.services.staged_memory import discard_staged, publish_staged
from server.services.transcript import AS_WRITTEN, append_event, start_execution
from server.services.turn_numbers import (
    next_turn_statement,
    numbered_turn_statement,
    turn_number,
)
from server.services.turn_scope import open_scope, open_turn, remember_turn
from server.storage.built import built_once
from server.storage.history_gate import history_condition
from server.storage.owners import agent_of, remember


@dataclass(frozen=True, slots=True)
class BegunTurn:
    turn: Turn
    execution: Execution
    pinned: list[PinnedEntry]
    notes: list[str]  # lines the instructions carry after the pinned ones


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

    number, attempt, replay_of = await turn_number(
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
        stmt = next_turn_statement(in_session=session is not None)
    else:
        values["number"] = number
        stmt = numbered_turn_statement()
    turn: Turn | None = await db.scalar(stmt, values)  # no unit of work
    assert turn is not None
    remember(db, turn.id, turn.agent_id)
    execution = await start_execution(db, turn=turn, kind="turn", name="turn", parent_id=None)
    facts = remember_turn(db, turn, config_of(version, agent))  # for the turn's calls
    config = facts.config
    # R1, R7: without memory or a pin budget, nothing is pinned, so nothing is listed.
    max_tokens = config.memory.pinned_max_tokens if config.memory.enabled else None
    pins = await pinned_list(db, reader=facts.reader, max_tokens=max_tokens)
    notes = [pins.note] if pins.note else []
    if await _has_history(db, turn, config):
        notes.append(SEARCH_FIRST)
    # the instructions as given: the pinned lines, then the notes (R30, R31, R64)
    payload: dict[str, Any] = {"omitted": _versions(pins.omitted)} if pins.omitted else {}
    if notes:
        payload["notes"] = notes
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
    return BegunTurn(turn=turn, execution=execution, pinned=pins.shown, notes=notes)


def _versions(entries: list[PinnedEntry]) -> list[dict[str, str]]:
    # named as PinnedMemory names them
    return [{"recordId": str(p.record_id), "versionId": str(p.version_id)} for p in entries]


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
    update would not wait for), closes it and ends its running executions; of two
    closers the second finds it no longer open, and ends nothing."""
    agent_id = await agent_of(db, Turn, turn_id)
    closed: Turn | None = await db.scalar(
        _closing(status == "committed"),
        {
            "turn": turn_id,
            "agent": agent_id,
            "to_status": status,
            "to_error": error,
            "at": datetime.now(UTC),
        },
    )
    if closed is None:
        turn = await get(db, Turn, turn_id, fresh=True)
        raise ConflictError(f"turn {turn_id} is {turn.status}, not open")
    return closed


# built once, run with parameters (AS_WRITTEN)
@built_once
def _closing(succeeded: bool) -> Any:
    locked = (
        select(col(Turn.id))
        .where(
            col(Turn.id) == bindparam("turn"),
            col(Turn.agent_id) == bindparam("agent"),
            col(Turn.status) == "open",
        )
        .with_for_update()
        .cte("locked")
    )
    executions = table(Execution)
    ending = (
        update(executions)
        .where(
            executions.c.agent_id == bindparam("agent"),
            executions.c.turn_id.in_(select(locked.c.id)),
            executions.c.status == literal_column("'running'"),
        )
        .values(
            status=literal_column("'succeeded'" if succeeded else "'failed'"),
            ended_at=CHANGED_AT,
        )
        .cte("ending")
    )
    return (
        update(Turn)
        .where(col(Turn.id).in_(select(locked.c.id)), col(Turn.agent_id) == bindparam("agent"))
        .values(
            status=bindparam("to_status"), error=bindparam("to_error"), ended_at=bindparam("at")
        )
        .returning(Turn)
        .add_cte(ending)
        .execution_options(**AS_WRITTEN, populate_existing=True, synchronize_session=False)
    )


async def commit_turn(db: AsyncSession, *, turn_id: uuid.UUID) -> Turn:
    """Publish the turn's staged memory (R12)."""
    turn = await _close(db, turn_id, "committed", None)
    await publish_staged(db, turn_id=turn_id, agent_id=turn.agent_id)
    return turn


async def rollback_turn(db: AsyncSession, *, turn_id: uuid.UUID) -> Turn:
    turn = await _close(db, turn_id, "rolled_back", None)
    await discard_staged(db, turn_id=turn_id, agent_id=turn.agent_id)
    return turn


async def fail_turn(db: AsyncSession, *, turn_id: uuid.UUID, error: str | None) -> Turn:
    """A failed attempt keeps its transcript but none of its memory; it may be retried."""
    if error is not None and len(error) > 10_000:
        raise BadInputError("error must be at most 10000 characters", field="error")
    turn = await _close(db, turn_id, "failed", error)
    await discard_staged(db, turn_id=turn_id, agent_id=turn.agent_id)
    return turn


# the longest model call a runtime may record: a day
MAX_LATENCY_MS = 86_400_000


async def record_invocation(
    db: AsyncSession,
    *,
    execution_id: uuid.UUID,
    purpose: str,
    model: str,
    input_tokens: int = 0,
    output_tokens: int = 0,
    latency_ms: int | None = None,
) -> Invocation:
    """Record one model call (purpose ``turn`` or ``memory``) inside an open turn."""
    execution = await get(db, Execution, execution_id)
    await open_turn(db, turn_id=execution.turn_id)
    if input_tokens < 0 or output_tokens < 0:
        raise BadInputError("token counts cannot be negative", field="inputTokens")
    if latency_ms is not None and not 0 <= latency_ms <= MAX_LATENCY_MS:
        raise BadInputError(
            f"latencyMs must be from 0 to {MAX_LATENCY_MS} (a day)", field="latencyMs"
        )
    check_text(model, field="model", maximum=200)
    invocation = Invocation(
        agent_id=execution.agent_id,
        execution_id=execution.id,
        purpose=purpose,
        model=model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        latency_ms=latency_ms,
        counted=purpose != "embed",
    )
    db.add(invocation)
    await db.flush()
    return invocation
