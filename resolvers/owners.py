"""Who owns what an id names (R10–R13, R70): for every id kind, the one statement that
finds its owner. The owner is the agent (and its namespace) and, where it matters, the
session and turn the object belongs to, whether a preview turn made it, and whether it
is *staged*: written by an open turn and not yet committed, so that only that turn
reaches it (R12).

All the ids of one operation field are resolved in one statement (a primary-key probe of
each kind's table, joined to what names its owner), cached for the operation.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Boolean, String, Uuid, and_, bindparam, cast, false, literal, null, union_all
from sqlalchemy import select as sa_select
from sqlmodel import col

from resolvers.context import Context
from resolvers.kinds import BY_MODEL, Kind
from server import models
from server.storage.built import built_once
from server.storage.gate import staged_version
from server.storage.owners import OWNERS_OF, Kept, kept, remember

A, S, T, E = models.Agent, models.Session, models.Turn, models.Execution
R, V = models.MemoryRecord, models.MemoryVersion


@dataclass(frozen=True, slots=True)
class Owner:
    """Where one object belongs."""

    kind: Kind
    id: uuid.UUID
    agent_id: uuid.UUID
    namespace: str
    session_id: uuid.UUID | None
    turn_id: uuid.UUID | None  # the turn it belongs to; for a staged object, the writing turn
    preview: bool  # made by (or, for a turn, is) a preview turn
    staged: bool  # written by turn_id, which has not committed: no one else reaches it
    scope: str | None  # a memory record's (or version's record's) SESSION or AGENT
    memory: bool  # an output use that names a record version


# The kinds whose owner never changes: no row of them is ever deleted or moved to another
# agent, session or turn, and a turn's preview flag is fixed. Their owners are kept by
# the server (per database) once read; a record, a version and an output use are staged
# until their turn commits, so theirs are read every time.
SETTLED = frozenset(Kind) - {Kind.MEMORY_RECORD, Kind.MEMORY_VERSION, Kind.OUTPUT_USE}

_NO_ID = cast(null(), Uuid)
_NO = cast(false(), Boolean)


def _columns(
    kind: Kind,
    id_: Any,
    agent: Any,
    *,
    session: Any = _NO_ID,
    turn: Any = _NO_ID,
    preview: Any = _NO,
    staged: Any = _NO,
    scope: Any = None,
    memory: Any = _NO,
) -> Any:
    return sa_select(
        literal(kind.name).label("kind"),
        id_.label("id"),
        agent.label("agent_id"),
        col(A.namespace).label("namespace"),
        session.label("session_id"),
        turn.label("turn_id"),
        preview.label("preview"),
        staged.label("staged"),
        (cast(null(), String) if scope is None else scope).label("scope"),
        memory.label("memory"),
    )


def _of_turn(model: Any) -> Any:
    """An object that belongs to a turn through its ``turn_id``."""
    return (
        _columns(
            BY_MODEL[model],
            col(model.id),
            col(model.agent_id),
            session=col(T.session_id),
            turn=col(model.turn_id),
            preview=col(T.preview),
        )
        .join(T, _same(T, model, col(T.id) == col(model.turn_id)))
        .join(A, col(A.id) == col(model.agent_id))
    )


def _same(other: Any, model: Any, on: Any) -> Any:
    """The join condition ``on``, with ``other``'s agent that of ``model``'s row: the
    same rows (an id names one agent's row), and on Citus a join Citus runs on each
    agent's shard (docs/scaling.md)."""
    return and_(on, col(other.agent_id) == col(model.agent_id))


def _statement(kind: Kind) -> Any:
    """How the owner of an object of ``kind`` is found: the one table of this module."""
    m = kind.model
    if kind is Kind.AGENT:
        return _columns(kind, col(A.id), col(A.id)).select_from(A)
    if kind is Kind.AGENT_VERSION:
        return _columns(kind, col(m.id), col(m.agent_id)).join(A, col(A.id) == col(m.agent_id))
    if kind is Kind.SESSION:
        return _columns(kind, col(S.id), col(S.agent_id), session=col(S.id)).join(
            A, col(A.id) == col(S.agent_id)
        )
    if kind is Kind.TURN:
        return _columns(
            kind,
            col(T.id),
            col(T.agent_id),
            session=col(T.session_id),
            turn=col(T.id),
            preview=col(T.preview),
        ).join(A, col(A.id) == col(T.agent_id))
    if kind in (Kind.EXECUTION, Kind.TRANSCRIPT_EVENT, Kind.HISTORY_EVENT, Kind.MEMORY_REVIEW):
        return _of_turn(m)
    if kind is Kind.INVOCATION:
        return (
            _columns(
                kind,
                col(m.id),
                col(m.agent_id),
                session=col(T.session_id),
                turn=col(E.turn_id),
                preview=col(T.preview),
            )
            .join(E, _same(E, m, col(E.id) == col(m.execution_id)))
            .join(T, _same(T, m, col(T.id) == col(E.turn_id)))
            .join(A, col(A.id) == col(m.agent_id))
        )
    if kind is Kind.HISTORY_PART:
        event = models.HistoryEvent
        return (
            _columns(
                kind,
                col(m.id),
                col(m.agent_id),
                session=col(m.session_id),
                turn=col(event.turn_id),
                preview=col(m.preview),
            )
            .join(event, _same(event, m, col(event.id) == col(m.event_id)))
            .join(A, col(A.id) == col(m.agent_id))
        )
    if kind is Kind.MEMORY_RECORD:
        return _columns(
            kind,
            col(R.id),
            col(R.agent_id),
            session=col(R.session_id),
            turn=col(R.turn_id),
            preview=col(R.preview),
            staged=col(R.committed).is_(False),
            scope=col(R.scope),
        ).join(A, col(A.id) == col(R.agent_id))
    if kind is Kind.MEMORY_VERSION:
        return (
            _columns(
                kind,
                col(V.id),
                col(V.agent_id),
                session=col(R.session_id),
                turn=col(V.turn_id),
                preview=col(R.preview),
                staged=staged_version(V, R),
                scope=col(R.scope),
            )
            .join(R, _same(R, V, col(R.id) == col(V.record_id)))
            .join(A, col(A.id) == col(V.agent_id))
        )
    assert kind is Kind.OUTPUT_USE
    return (
        _columns(
            kind,
            col(m.id),
            col(m.agent_id),
            session=col(T.session_id),
            turn=col(E.turn_id),
            preview=col(T.preview),
            staged=and_(col(V.id).is_not(None), staged_version(V, R)),
            memory=col(m.memory_version_id).is_not(None),
        )
        .join(E, _same(E, m, col(E.id) == col(m.execution_id)))
        .join(T, _same(T, m, col(T.id) == col(E.turn_id)))
        .join(A, col(A.id) == col(m.agent_id))
        .outerjoin(V, _same(V, m, col(V.id) == col(m.memory_version_id)))
        .outerjoin(R, _same(R, m, col(R.id) == col(V.record_id)))
    )


@built_once
def _owners(kinds: tuple[Kind, ...], by_agent: bool = False) -> Any:
    """One statement for the ids of ``kinds``: parameter ``ids_<KIND>`` per kind; with
    ``by_agent``, the rows of the agents of parameter ``agents`` only (the ids' agents,
    known: on Citus the statement then runs on their shards alone)."""
    parts = []
    for kind in kinds:
        part = _statement(kind).where(
            col(kind.model.id).in_(bindparam(f"ids_{kind.name}", expanding=True))
        )
        if by_agent and kind is not Kind.AGENT:
            part = part.where(col(kind.model.agent_id).in_(bindparam("agents", expanding=True)))
        parts.append(part)
    return parts[0] if len(parts) == 1 else union_all(*parts)


def _owner(row: Any) -> Owner:
    return Owner(
        kind=Kind[row.kind],
        id=row.id,
        agent_id=row.agent_id,
        namespace=row.namespace,
        session_id=row.session_id,
        turn_id=row.turn_id,
        preview=bool(row.preview),
        staged=bool(row.staged),
        scope=row.scope,
        memory=bool(row.memory),
    )


async def owners_of(
    context: Context, wanted: Mapping[Kind, Iterable[uuid.UUID]]
) -> dict[tuple[Kind, uuid.UUID], Owner]:
    """The owners of the ids of each kind (an id that names no object of its kind has
    none), in one statement; cached for the operation. For an id of unknown kind
    (``node``), ask for it under every kind."""
    cache: dict[tuple[Kind, uuid.UUID], Owner | None] = context.decisions.setdefault("owners", {})
    settled: Kept[tuple[Kind, uuid.UUID], Owner] = context.db.info[OWNERS_OF]
    for kind, ids in wanted.items():
        if kind in SETTLED:
            for id_ in ids:
                if (kind, id_) not in cache and (found := settled.get((kind, id_))) is not None:
                    cache[(kind, id_)] = found
                    if kind is not Kind.AGENT:
                        remember(context.db, id_, found.agent_id)
    missing = {
        kind: sorted({i for i in ids if (kind, i) not in cache}) for kind, ids in wanted.items()
    }
    missing = {kind: ids for kind, ids in missing.items() if ids}
    if missing:
        kinds = tuple(sorted(missing, key=lambda k: k.name))
        params: dict[str, Any] = {f"ids_{kind.name}": missing[kind] for kind in kinds}
        agents = {
            kept(context.db, i)
            for kind, ids in missing.items()
            if kind is not Kind.AGENT
            for i in ids
        }
        by_agent = bool(agents) and None not in agents
        if by_agent:
            params["agents"] = sorted(a for a in agents if a is not None)
        rows = (await context.db.execute(_owners(kinds, by_agent), params)).all()
        for kind, ids in missing.items():
            for id_ in ids:
                cache[(kind, id_)] = None
        for row in rows:
            owner = _owner(row)
            cache[(owner.kind, owner.id)] = owner
            if owner.kind in SETTLED:
                settled.put((owner.kind, owner.id), owner)
            if owner.kind is not Kind.AGENT:
                remember(context.db, owner.id, owner.agent_id)  # the call's statements name it
    return {
        (kind, i): found
        for kind, ids in wanted.items()
        for i in ids
        if (found := cache.get((kind, i))) is not None
    }
