"""Keeping a committed turn's history (R61): its kept events, cut into parts and
embedded, written in the commit's transaction.

The runtime records the turn's conversation with ``recordEvents``
(:mod:`server.services.history_record`, docs/history.md); what of it is kept
(R60) is :mod:`server.services.history_kept`.

Only a committed turn keeps anything (R61): :func:`keep_turn` runs inside the
commit's transaction, so the turn, its memory and its history land together
or not at all; a failed or rolled-back attempt keeps nothing, and its retry
keeps its own events. A replay keeps nothing either: it re-runs a turn whose
events its original already kept, and its events would otherwise show up
twice in every later search. The forward pass runs before the commit locks the
turn (:func:`prepare_keep`), so the lock is never held across it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, fields
from typing import Any

from sqlalchemy import Integer, and_, bindparam, cast, column, func, insert, select
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import Grouping
from sqlmodel import col

from server.domain.config import HarnessConfig
from server.domain.history_parts import fits_one_part, split_text
from server.embedding import Embedder
from server.models import (
    Agent,
    AgentVersion,
    HistoryEvent,
    HistoryPart,
    Turn,
    table,
)
from server.models._columns import Floats
from server.models.memory import EMBEDDING_DIM
from server.services.agents import config_of, version_and_agent
from server.services.history_kept import KeptEvent, kept_events
from server.storage.built import built_once
from server.storage.owners import agent_of


@dataclass(frozen=True, slots=True)
class _TurnFacts:
    """What keeping reads of a turn, read as columns (never the ORM row: the commit
    loads and locks that row afterwards, and must see it fresh)."""

    id: uuid.UUID
    agent_id: uuid.UUID
    agent_version_id: uuid.UUID
    session_id: uuid.UUID | None
    replay_of_id: uuid.UUID | None
    number: int
    preview: bool
    event_seq: int

    @classmethod
    def of(cls, turn: Turn) -> _TurnFacts:
        return cls(*(getattr(turn, name) for name in _TURN_FACTS))


# the columns of Turn that _TurnFacts holds, in order: its fields are named after them
_TURN_FACTS = tuple(f.name for f in fields(_TurnFacts))


@dataclass(frozen=True, slots=True)
class Prepared:
    """A turn's kept events, split and embedded, as of its transcript's ``event_seq``."""

    event_seq: int
    kept: list[KeptEvent]
    pieces: list[list[str]]
    vectors: list[list[float]]


# what prepare_keep reads of the open turn, with its version and agent (built once)
@built_once
def _turn_to_keep() -> Any:
    return (
        select(*(col(getattr(Turn, name)) for name in _TURN_FACTS), AgentVersion, Agent)
        .join(
            AgentVersion,
            and_(
                col(AgentVersion.id) == col(Turn.agent_version_id),
                col(AgentVersion.agent_id) == col(Turn.agent_id),
            ),
        )
        .join(Agent, col(Agent.id) == col(AgentVersion.agent_id))
        .where(
            col(Turn.id) == bindparam("turn"),
            col(Turn.agent_id) == bindparam("agent"),
            col(Turn.status) == "open",
        )
    )


async def prepare_keep(
    db: AsyncSession, embedder: Embedder, *, turn_id: uuid.UUID
) -> Prepared | None:
    """Read, split and embed what committing the open turn will keep, before the commit
    locks the turn: the forward pass then holds no lock. :func:`keep_turn` uses it when
    nothing was recorded in between, and does the work again otherwise. ``None``: the
    turn is not open; a turn that keeps nothing (history off, a replay, no session, no
    kept event) has a :class:`Prepared` with nothing in it, which keeping needs no more
    statements to know."""
    agent_id = await agent_of(db, Turn, turn_id)
    row = (await db.execute(_turn_to_keep(), {"turn": turn_id, "agent": agent_id})).first()
    if row is None:
        return None
    *facts, version, agent = row
    return await _prepare(db, embedder, _TurnFacts(*facts), config_of(version, agent))


async def keep_turn(
    db: AsyncSession, embedder: Embedder, *, turn: Turn, prepared: Prepared | None = None
) -> None:
    """Keep the committed turn's events per ``harness.history.index`` (R60, R61).

    Runs inside the commit's transaction: the turn, its memory and its history
    land together or not at all. Every part of the turn is embedded in one call,
    before the commit when ``prepared`` (:func:`prepare_keep`) is still current.
    """
    facts = _TurnFacts.of(turn)
    if prepared is None or prepared.event_seq != turn.event_seq:
        prepared = await _prepare(db, embedder, facts)
    if not prepared.kept:
        return
    events: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for k, pieces in zip(prepared.kept, prepared.pieces, strict=True):
        event_id = str(uuid.uuid4())
        events.append(
            {
                "id": event_id,
                "transcript_event_id": str(k.transcript_event_id),
                "execution_id": None if k.execution_id is None else str(k.execution_id),
                "sequence": k.sequence,
                "role": k.role,
                "tool_name": k.tool_name,
                "tool_call_id": k.tool_call_id,
                "is_error": k.is_error,
                "text": k.text,
            }
        )
        before = len(parts)  # the vectors of the parts before this event's
        parts.extend(
            {
                "id": str(uuid.uuid4()),
                "event_id": event_id,
                "part": n,
                "parts": len(pieces),
                "text": text,
                "n": before + n,
            }
            for n, text in enumerate(pieces, start=1)
        )
    await db.execute(
        _keeping(),
        {
            "agent": facts.agent_id,
            "session": facts.session_id,
            "turn": facts.id,
            "number": facts.number,
            "in_preview": facts.preview,
            "events": events,
            "parts": parts,
            "vectors": prepared.vectors,
        },
    )


@built_once
def _keeping() -> Any:
    """The one statement that keeps a turn's events and their parts (Core: the rows are
    complete, no ORM bookkeeping is needed). Whatever their number, the events and the
    parts travel as two JSON arrays and the parts' vectors as one ``real[]`` in binary,
    part ``n`` (counted from 1) the ``n``-th run of ``EMBEDDING_DIM`` floats: it is
    built, compiled and prepared once."""
    event_table = table(HistoryEvent)
    part_table = table(HistoryPart)
    agent = bindparam("agent", type_=event_table.c.agent_id.type)
    session = bindparam("session", type_=event_table.c.session_id.type)
    number = bindparam("number", type_=event_table.c.turn_number.type)
    preview = bindparam("in_preview", type_=event_table.c.preview.type)

    def rows(name: str, table: Any, columns: list[str], *extra: Any) -> Any:
        return (
            func.jsonb_to_recordset(bindparam(name, type_=JSONB))
            .table_valued(*(column(c, table.c[c].type) for c in columns), *extra)
            .render_derived(name=name, with_types=True)
        )

    event_columns = [
        "id",
        "transcript_event_id",
        "execution_id",
        "sequence",
        "role",
        "tool_name",
        "tool_call_id",
        "is_error",
        "text",
    ]
    event = rows("events", event_table, event_columns)
    kept_events = (
        insert(event_table)
        .from_select(
            ["agent_id", "session_id", "turn_id", "turn_number", "preview", *event_columns],
            select(
                agent,
                session,
                bindparam("turn", type_=event_table.c.turn_id.type),
                number,
                preview,
                *(event.c[c] for c in event_columns),
            ),
        )
        .cte("kept_events")
    )
    part_columns = ["id", "event_id", "part", "parts", "text"]
    part = rows("parts", part_table, part_columns, column("n", Integer))
    vectors = Grouping(bindparam("vectors", type_=Floats()))
    embedding = cast(
        vectors[(part.c.n - 1) * EMBEDDING_DIM + 1 : part.c.n * EMBEDDING_DIM],
        part_table.c.embedding.type,
    )
    return (
        insert(part_table)
        .from_select(
            ["agent_id", "session_id", "turn_number", "preview", *part_columns, "embedding"],
            select(agent, session, number, preview, *(part.c[c] for c in part_columns), embedding),
        )
        .add_cte(kept_events)
    )


async def _prepare(
    db: AsyncSession, embedder: Embedder, turn: _TurnFacts, config: HarnessConfig | None = None
) -> Prepared:
    nothing = Prepared(turn.event_seq, [], [], [])  # keeping it writes nothing
    if turn.session_id is None or turn.replay_of_id is not None:
        return nothing
    if config is None:
        config = config_of(
            *await version_and_agent(db, turn.agent_version_id, agent_id=turn.agent_id)
        )
    if config.history is None:
        return nothing
    kept = await kept_events(db, turn.id, config.history.index)
    if not kept:
        return nothing
    pieces = await _split(embedder, [k.text for k in kept])
    embedded = await embedder.embed([p for parts in pieces for p in parts], bulk=True)
    return Prepared(turn.event_seq, kept, pieces, list(embedded.vectors))


async def _split(embedder: Embedder, texts: list[str]) -> list[list[str]]:
    """Each text cut into parts that fit the model (:mod:`server.domain.history_parts`)."""
    if not embedder.loaded:
        await embedder.aload()
    long = [text for text in texts if not fits_one_part(text)]
    offsets = iter(embedder.token_offsets(long) if long else [])
    return [
        [text.strip()] if fits_one_part(text) else split_text(text, next(offsets)) for text in texts
    ]
