"""Session history (R60, R61): what a committed turn keeps of its transcript.

The runtime records the turn's conversation with ``recordEvents``
(:mod:`server.services.history_record`, docs/history.md).

What is kept (R60), per ``harness.history.index`` of the turn's agent version:
the agent's own conversation, that is the events of the turn's execution and
of the native tools it called (a helper's or a program's are its own):

- ``messages``: user messages and agent replies (text and tool calls);
- ``messages_and_tools``: also tool results and errors, the agent's own tools
  and the native tools that write (``add_memory``, ``delete_memory``);
- never: skill loads, retrievals, and the native tools that retrieve
  (``RETRIEVAL_TOOLS``: ``search_memory``, ``recall``, ``read_memory``,
  ``search_history``), whether they succeeded or failed.

Only a committed turn keeps anything (R61): :func:`keep_turn` runs inside the
commit's transaction, so the turn, its memory and its history land together
or not at all; a failed or rolled-back attempt keeps nothing, and its retry
keeps its own events. A replay keeps nothing either: it re-runs a turn whose
events its original already kept, and its events would otherwise show up
twice in every later search.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import Integer, bindparam, cast, column, func, insert, select
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import Grouping
from sqlmodel import col

from server.domain import history as rules
from server.domain.config import HarnessConfig
from server.domain.history import ToolCall
from server.embedding import Embedder
from server.models import (
    Agent,
    AgentVersion,
    Execution,
    HistoryEvent,
    HistoryPart,
    TranscriptEvent,
    Turn,
    table,
)
from server.models._columns import Floats
from server.models.memory import EMBEDDING_DIM
from server.services.agents import config_of, version_and_agent
from server.storage.built import built_once


class _EventColumns(Protocol):
    """What keeping reads of a transcript event, and of its execution (``run_*``)."""

    id: uuid.UUID
    sequence: int
    type: str
    tool_name: str | None
    tool_call_id: str | None
    execution_id: uuid.UUID | None
    payload: dict[str, Any]
    run_kind: str | None
    run_parent: uuid.UUID | None
    run_name: str | None
    run_status: str | None
    run_output: dict[str, Any] | None
    run_error: str | None


@dataclass(frozen=True, slots=True)
class _Source:
    """The transcript event a kept event comes from (plain values: a prepared keep
    outlives the rows it was read from)."""

    id: uuid.UUID
    sequence: int
    tool_call_id: str | None

    @classmethod
    def of(cls, event: _EventColumns) -> _Source:
        return cls(event.id, event.sequence, event.tool_call_id)


@dataclass(frozen=True, slots=True)
class _Kept:
    source: _Source
    role: rules.Role
    tool_name: str | None
    is_error: bool
    execution_id: uuid.UUID | None
    text: str


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


@dataclass(frozen=True, slots=True)
class Prepared:
    """A turn's kept events, split and embedded, as of its transcript's ``event_seq``."""

    event_seq: int
    kept: list[_Kept]
    pieces: list[list[str]]
    vectors: list[list[float]]


# what prepare_keep reads of the open turn, with its version and agent (built once)
@built_once
def _turn_to_keep() -> Any:
    return (
        select(
            col(Turn.id),
            col(Turn.agent_id),
            col(Turn.agent_version_id),
            col(Turn.session_id),
            col(Turn.replay_of_id),
            col(Turn.number),
            col(Turn.preview),
            col(Turn.event_seq),
            AgentVersion,
            Agent,
        )
        .join(AgentVersion, col(AgentVersion.id) == col(Turn.agent_version_id))
        .join(Agent, col(Agent.id) == col(AgentVersion.agent_id))
        .where(col(Turn.id) == bindparam("turn"), col(Turn.status) == "open")
    )


# a turn's transcript events in order, each with its execution and the turn's own, as
# columns (read now: as prepared, an execution may since have ended)
@built_once
def _events_to_keep() -> Any:
    return (
        select(
            col(TranscriptEvent.id),
            col(TranscriptEvent.sequence),
            col(TranscriptEvent.type),
            col(TranscriptEvent.tool_name),
            col(TranscriptEvent.tool_call_id),
            col(TranscriptEvent.execution_id),
            col(TranscriptEvent.payload),
            col(Execution.kind).label("run_kind"),
            col(Execution.parent_id).label("run_parent"),
            col(Execution.name).label("run_name"),
            col(Execution.status).label("run_status"),
            col(Execution.output).label("run_output"),
            col(Execution.error).label("run_error"),
            select(col(Execution.id))
            .where(col(Execution.turn_id) == bindparam("turn"), col(Execution.kind) == "turn")
            .scalar_subquery()
            .label("own"),
        )
        .outerjoin(Execution, col(Execution.id) == col(TranscriptEvent.execution_id))
        .where(col(TranscriptEvent.turn_id) == bindparam("turn"))
        .order_by(col(TranscriptEvent.sequence))
    )


async def prepare_keep(
    db: AsyncSession, embedder: Embedder, *, turn_id: uuid.UUID
) -> Prepared | None:
    """Read, split and embed what committing the open turn will keep, before the commit
    locks the turn: the forward pass then holds no lock. :func:`keep_turn` uses it when
    nothing was recorded in between, and does the work again otherwise."""
    row = (await db.execute(_turn_to_keep(), {"turn": turn_id})).first()
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
    facts = _TurnFacts(
        turn.id,
        turn.agent_id,
        turn.agent_version_id,
        turn.session_id,
        turn.replay_of_id,
        turn.number,
        turn.preview,
        turn.event_seq,
    )
    if prepared is None or prepared.event_seq != turn.event_seq:
        prepared = await _prepare(db, embedder, facts)
    if prepared is None:
        return
    events: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for k, pieces in zip(prepared.kept, prepared.pieces, strict=True):
        event_id = str(uuid.uuid4())
        events.append(
            {
                "id": event_id,
                "transcript_event_id": str(k.source.id),
                "execution_id": None if k.execution_id is None else str(k.execution_id),
                "sequence": k.source.sequence,
                "role": k.role,
                "tool_name": k.tool_name,
                "tool_call_id": k.source.tool_call_id,
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
) -> Prepared | None:
    if turn.session_id is None or turn.replay_of_id is not None:
        return None
    if config is None:
        config = config_of(*await version_and_agent(db, turn.agent_version_id))
    if config.history is None:
        return None
    kept = await _kept_events(db, turn.id, config.history.index)
    if not kept:
        return None
    pieces = await _split(embedder, [k.text for k in kept])
    embedded = await embedder.embed([p for parts in pieces for p in parts], bulk=True)
    return Prepared(turn.event_seq, kept, pieces, list(embedded.vectors))


async def conversation(
    db: AsyncSession, turn_id: uuid.UUID, index: rules.HistoryIndex
) -> list[tuple[rules.Role, str | None, str]]:
    """What of a turn's transcript ``index`` keeps, in order, whether or not the turn is
    kept: each event's role, tool and text (the memory review reads it, R50)."""
    return [(k.role, k.tool_name, k.text) for k in await _kept_events(db, turn_id, index)]


async def _kept_events(
    db: AsyncSession, turn_id: uuid.UUID, index: rules.HistoryIndex
) -> list[_Kept]:
    # columns, not ORM rows: nothing here changes them
    rows = (await db.execute(_events_to_keep(), {"turn": turn_id})).all()
    events: Sequence[_EventColumns] = rows
    own = rows[0].own if rows else None
    linked = {e.execution_id for e in events if e.tool_call_id is not None}
    kept: list[_Kept] = []
    for event in events:
        role = rules.kept_role(event.type, event.tool_name, index=index)
        run = event.execution_id
        if role is None or run is None:
            continue
        if event.run_kind == "tool":
            # a native call: the agent's own, once (the runtime's link, if any, names the call)
            if event.run_parent != own or (event.tool_call_id is None and run in linked):
                continue
            failed = event.run_status == "failed"
            text = rules.native_result_text(event.run_output, event.run_error if failed else None)
            kept.append(_Kept(_Source.of(event), role, event.run_name, failed, run, text))
            continue
        if run != own:
            continue
        kept.append(
            _Kept(
                _Source.of(event),
                role,
                event.tool_name,
                event.type == rules.TOOL_ERROR,
                run,
                _runtime_text(event),
            )
        )
    return [k for k in kept if k.text.strip()]


def _runtime_text(event: _EventColumns) -> str:
    payload = event.payload
    if event.type == rules.AGENT_MESSAGE:
        calls = [ToolCall.from_json(c) for c in payload.get("toolCalls", [])]
        return rules.agent_message_text(payload.get("text"), calls)
    return str(payload.get("error" if event.type == rules.TOOL_ERROR else "text") or "")


async def _split(embedder: Embedder, texts: list[str]) -> list[list[str]]:
    """Each text cut into parts that fit the model (token-aware, :mod:`rules`)."""
    if not embedder.loaded:
        await embedder.aload()
    long = [text for text in texts if not rules.fits_one_part(text)]
    offsets = iter(embedder.token_offsets(long) if long else [])
    return [
        [text.strip()] if rules.fits_one_part(text) else rules.split_text(text, next(offsets))
        for text in texts
    ]
