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
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain import history as rules
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
)
from server.services.agents import config_of
from server.services.lookup import get


@dataclass(frozen=True, slots=True)
class _Kept:
    source: TranscriptEvent
    role: rules.Role
    tool_name: str | None
    is_error: bool
    execution_id: uuid.UUID | None
    text: str


async def keep_turn(db: AsyncSession, embedder: Embedder, *, turn: Turn) -> None:
    """Keep the committed turn's events per ``harness.history.index`` (R60, R61).

    Runs inside the commit's transaction: the turn, its memory and its history
    land together or not at all. Every part of the turn is embedded in one call.
    """
    if turn.session_id is None or turn.replay_of_id is not None:
        return
    version = await get(db, AgentVersion, turn.agent_version_id)
    config = config_of(version, await get(db, Agent, turn.agent_id))
    if config.history is None:
        return
    kept = await _kept_events(db, turn, config.history.index)
    if not kept:
        return
    pieces = await _split(embedder, [k.text for k in kept])
    embedded = await embedder.embed([p for parts in pieces for p in parts])
    vectors = iter(embedded.vectors)
    event_rows: list[dict[str, Any]] = []
    part_rows: list[dict[str, Any]] = []
    for k, parts in zip(kept, pieces, strict=True):
        event_id = uuid.uuid4()
        event_rows.append(
            {
                "id": event_id,
                "agent_id": turn.agent_id,
                "session_id": turn.session_id,
                "turn_id": turn.id,
                "turn_number": turn.number,
                "transcript_event_id": k.source.id,
                "execution_id": k.execution_id,
                "sequence": k.source.sequence,
                "role": k.role,
                "tool_name": k.tool_name,
                "tool_call_id": k.source.tool_call_id,
                "is_error": k.is_error,
                "preview": turn.preview,
                "text": k.text,
            }
        )
        part_rows.extend(
            {
                "id": uuid.uuid4(),
                "event_id": event_id,
                "agent_id": turn.agent_id,
                "session_id": turn.session_id,
                "turn_number": turn.number,
                "preview": turn.preview,
                "part": n,
                "parts": len(parts),
                "text": text,
                "embedding": next(vectors),
            }
            for n, text in enumerate(parts, start=1)
        )
    await db.execute(insert(HistoryEvent), event_rows)
    await db.execute(insert(HistoryPart), part_rows)


async def _kept_events(db: AsyncSession, turn: Turn, index: rules.HistoryIndex) -> list[_Kept]:
    events = (
        await db.scalars(
            select(TranscriptEvent)
            .where(col(TranscriptEvent.turn_id) == turn.id)
            .order_by(col(TranscriptEvent.sequence))
        )
    ).all()
    executions = {
        e.id: e
        for e in (
            await db.scalars(select(Execution).where(Execution.turn_id == turn.id))  # type: ignore[arg-type]
        ).all()
    }
    own = next(e.id for e in executions.values() if e.kind == "turn")
    linked = {e.execution_id for e in events if e.tool_call_id is not None}
    kept: list[_Kept] = []
    for event in events:
        role = rules.kept_role(event.type, event.tool_name, index=index)
        if role is None or event.execution_id is None:
            continue
        run = executions[event.execution_id]
        if run.kind == "tool":
            # a native call: the agent's own, once (the runtime's link, if any, names the call)
            if run.parent_id != own or (event.tool_call_id is None and run.id in linked):
                continue
            failed = run.status == "failed"
            text = rules.native_result_text(run.output, run.error if failed else None)
            kept.append(_Kept(event, role, run.name, failed, run.id, text))
            continue
        if run.id != own:
            continue
        kept.append(
            _Kept(
                event,
                role,
                event.tool_name,
                event.type == rules.TOOL_ERROR,
                run.id,
                _runtime_text(event),
            )
        )
    return [k for k in kept if k.text.strip()]


def _runtime_text(event: TranscriptEvent) -> str:
    payload = event.payload
    if event.type == rules.AGENT_MESSAGE:
        calls = [ToolCall.from_json(c) for c in payload.get("toolCalls", [])]
        return rules.agent_message_text(payload.get("text"), calls)
    return str(payload.get("error" if event.type == rules.TOOL_ERROR else "text") or "")


async def _split(embedder: Embedder, texts: list[str]) -> list[list[str]]:
    """Each text cut into parts that fit the model (token-aware, :mod:`rules`)."""
    if not embedder.loaded:
        await embedder.aload()
    return [
        rules.split_text(text, offsets)
        for text, offsets in zip(texts, embedder.token_offsets(texts), strict=True)
    ]
