"""A turn's scope: the open turn, its agent version, configuration and calling
execution, resolved and locked for one call in the turn (R12)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain.config import HarnessConfig
from server.domain.visibility import Reader
from server.errors import BadInputError, ConflictError, NotAllowedError, NotFoundError
from server.models import Agent, AgentVersion, Execution, Turn
from server.services.agents import config_of
from server.storage.built import built_once
from server.storage.owners import TURNS, Kept, agent_of


@dataclass(frozen=True, slots=True)
class TurnScope:
    """Everything a native tool call needs to know about its turn."""

    turn: Turn
    agent: Agent
    version: AgentVersion
    config: HarnessConfig
    caller: Execution
    reader: Reader
    started_at: datetime | None = None  # the database's clock when the scope was read

    @property
    def read_only(self) -> bool:
        return self.caller.kind in ("helper", "program")


@dataclass(frozen=True, slots=True)
class TurnFacts:
    """What never changes of a turn (R12: only its status and its transcript do): its
    agent, session and preview flag, its agent version's configuration, and the reader
    its calls read memory as. A call that knows them builds its statements before it
    reads the turn, and checks the turn is still open in the statement itself."""

    turn_id: uuid.UUID
    agent_id: uuid.UUID
    session_id: uuid.UUID | None
    preview: bool
    config: HarnessConfig
    reader: Reader


def known_turn(db: AsyncSession, turn_id: uuid.UUID) -> TurnFacts | None:
    """The facts of a turn a call of this process began or ran in, kept per database."""
    kept: Kept[uuid.UUID, TurnFacts] = db.info[TURNS]
    return kept.get(turn_id)


def remember_turn(db: AsyncSession, turn: Turn, config: HarnessConfig) -> TurnFacts:
    """Keep the facts of ``turn`` for its next calls."""
    facts = TurnFacts(
        turn_id=turn.id,
        agent_id=turn.agent_id,
        session_id=turn.session_id,
        preview=turn.preview,
        config=config,
        reader=reader_for(turn, config),
    )
    kept: Kept[uuid.UUID, TurnFacts] = db.info[TURNS]
    kept.put(turn.id, facts)
    return facts


def reader_for(turn: Turn, config: HarnessConfig) -> Reader:
    return Reader.for_turn(
        agent_id=turn.agent_id,
        session_id=turn.session_id,
        turn_id=turn.id,
        preview=turn.preview,
        read_scopes=config.memory.read_scopes,
        write_scopes=config.memory.write_scopes,
    )


async def open_turn(db: AsyncSession, *, turn_id: uuid.UUID, exclusive: bool = False) -> Turn:
    """The turn, which must be open, held open until this transaction ends (R12).

    ``FOR KEY SHARE`` lets the calls of one turn run side by side but makes a concurrent
    commit, rollback or fail wait for them (or them see it closed), so nothing is
    written to a turn after it closed. ``exclusive``: ``FOR UPDATE`` instead, one such
    call of the turn at a time (read fresh).
    """
    agent_id = await agent_of(db, Turn, turn_id)
    row = (await db.execute(_open_turn(exclusive), {"turn": turn_id, "agent": agent_id})).first()
    return _still_open(row[0] if row else None, turn_id)


def _holding(stmt: Any, *, exclusive: bool) -> Any:
    """``stmt`` (which reads the turn) for the one turn (parameters ``turn`` and its
    ``agent``), locked as :func:`open_turn` says."""
    return (
        stmt.where(col(Turn.id) == bindparam("turn"), col(Turn.agent_id) == bindparam("agent"))
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
        select(Turn, AgentVersion, Agent, Execution, func.clock_timestamp())
        .join(
            AgentVersion,
            and_(
                col(AgentVersion.id) == col(Turn.agent_version_id),
                col(AgentVersion.agent_id) == bindparam("agent"),
            ),
        )
        .join(Agent, col(Agent.id) == col(AgentVersion.agent_id))
        .join(
            Execution,
            and_(caller_of, col(Execution.agent_id) == bindparam("agent")),
            isouter=True,
        )
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
    agent_id = await agent_of(db, Turn, turn_id)
    params = {"turn": turn_id, "agent": agent_id}
    if by_caller:
        params["caller"] = caller_execution_id
    row = (await db.execute(_open_scope(by_caller, exclusive), params)).first()
    turn = _still_open(row[0] if row else None, turn_id)
    assert row is not None
    _, version, agent, caller, started_at = row
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
        reader=remember_turn(db, turn, config).reader,
        started_at=started_at,
    )


def ensure_memory_enabled(scope: TurnScope) -> None:
    if not scope.config.memory.enabled:
        raise NotAllowedError(
            "memory is not enabled for this agent version (harness.memory.enabled)"
        )
