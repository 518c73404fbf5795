"""The memory ranking statement (R41): what a search asks (:class:`MemoryQuery`), the one
statement that ranks the records a reader may find for it, built once per shape, and the
generic plan it runs on.

Only records the reader may see are candidates: the one visibility gate
(:func:`server.storage.gate.searchable_version`, which decides on the version row what
:func:`server.storage.gate.record_condition` with ``Purpose.SEARCH`` and
:func:`server.storage.gate.version_in_force` decide on the record: ACTIVE only,
R10-R14; a change another open turn staged is not seen before that turn commits, R12),
so the vector and keyword candidates are filtered without a join. The statement is
:func:`server.storage.hybrid.build_search`'s over them (:func:`ranking_statement`),
built once per shape (who reads, which filters, the mode, ...) and run with the
reader's values as parameters.

The generic plan: the statement costs about as much to plan for each call's values as
to run at a small agent, and PostgreSQL's own choice (``plan_cache_mode = auto``) never
takes its generic plan, which it costs for an average agent. Its plan does not depend
on the values (the vector path is chosen before it, the index path's settings are in
it: :mod:`server.storage.nearest`), so it runs on the generic plan:
:data:`GENERIC_PLAN` is run in the statement's transaction before it, and the
statement sets the mode back itself (:func:`restored`, a one-time filter), so that the
transaction's next statements are planned as usual with no round trip spent restoring
it. Prepared by the driver, the statement is then planned once a connection
(docs/scaling.md, "The ranking statement").
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Select,
    String,
    Text,
    Uuid,
    and_,
    any_,
    bindparam,
    func,
    literal,
    literal_column,
    null,
    select,
    text,
    true,
)
from sqlalchemy import cast as sql_cast
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import defer
from sqlmodel import col

from server.domain.ranking import Mode
from server.domain.ranking_presets import DEFAULT_PRESET, FusionPreset
from server.domain.visibility import Reader
from server.models import MemoryRecord, MemoryVersion
from server.models.memory import EMBEDDING_DIM
from server.storage.built import built_once
from server.storage.gate import searchable_version
from server.storage.hybrid import build_search, search_parameters
from server.storage.nearest import Path
from server.storage.reaches import memory_postings
from server.storage.search_terms import uses_web_syntax
from server.storage.source import SearchSource

GENERIC_PLAN = text("SET LOCAL plan_cache_mode = force_generic_plan")


def restored() -> ColumnElement[bool]:
    """True, once the statement has set ``plan_cache_mode`` back to the session's value
    for the rest of the transaction (``set_config`` with NULL resets a setting)."""
    reset = func.set_config(literal_column("'plan_cache_mode'"), sql_cast(null(), Text), true())
    return select(reset).scalar_subquery().is_not(None)


@dataclass(frozen=True, slots=True)
class Filters:
    kind: str | None = None
    labels: tuple[tuple[str, str], ...] = ()
    ids: tuple[uuid.UUID, ...] | None = None


NO_FILTERS = Filters()


@dataclass(frozen=True, slots=True)
class MemoryQuery:
    """What a memory search asks: the text and its vector (None for a lexical search),
    how to rank, the best how many, and the filters."""

    text: str
    vector: Sequence[float] | None
    mode: Mode
    min_score: float
    limit: int
    filters: Filters = NO_FILTERS
    preset: FusionPreset = DEFAULT_PRESET
    # how the candidates by meaning are found (server.storage.nearest); None: as the
    # agent's share of the table says. Forced by the tests and the bench only.
    path: Path | None = None


def _found_by(
    reader: Reader, kind: Any = None, labels: Any = None, ids: Any = None
) -> ColumnElement[bool]:
    """The versions a search of ``reader`` may find with these filters, on versions alone."""
    conds: list[ColumnElement[bool]] = [searchable_version(reader)]
    if kind is not None:
        conds.append(col(MemoryVersion.kind) == kind)
    if labels is not None:
        conds.append(col(MemoryVersion.labels).contains(labels))
    if ids is not None:
        conds.append(col(MemoryVersion.record_id) == any_(ids))
    return and_(*conds)


def _source(reader: Reader, where: ColumnElement[bool], *, filtered: bool) -> SearchSource:
    return SearchSource.of(
        MemoryVersion,
        where=where,
        # Picks ranking by the embedding's bits for an agent with few versions, the HNSW
        # index for one with many; the gate above decides what may be found.
        probe=select(literal(1)).where(col(MemoryVersion.agent_id) == reader.agent_id),
        keywords=memory_postings(reader),
        # the postings know who may find a version, not its kind or labels
        bounded=not (filtered or reader.api),
        agent=reader.agent_id,
    )


@dataclass(frozen=True, slots=True)
class _Shape:
    """What decides the text of a ranking statement; the values are its parameters."""

    api: bool
    preview: bool
    read_scopes: frozenset[str]
    session: bool
    turn: bool
    kind: bool
    labels: bool
    ids: bool
    mode: Mode
    web: bool
    vector: bool
    limit: int
    preset: FusionPreset
    path: Path | None


@built_once
def _statement(shape: _Shape) -> Select[Any]:
    """The ranking statement of a shape, its values left as parameters, which ends the
    generic plan it runs on (:func:`restored`)."""
    uid: Uuid[Any] = Uuid()
    reader = Reader(
        agent_id=cast(Any, bindparam("reader_agent", type_=uid)),
        session_id=cast(Any, bindparam("reader_session", type_=uid)) if shape.session else None,
        turn_id=cast(Any, bindparam("reader_turn", type_=uid)) if shape.turn else None,
        preview=shape.preview,
        read_scopes=shape.read_scopes,
        api=shape.api,
    )
    where = _found_by(
        reader,
        bindparam("filter_kind", type_=String()) if shape.kind else None,
        bindparam("filter_labels", type_=JSONB()) if shape.labels else None,
        # one array, so that the statement's text is the same for any number of ids
        bindparam("filter_ids", type_=ARRAY(uid)) if shape.ids else None,
    )
    ranking = build_search(
        source=_source(reader, where, filtered=shape.kind or shape.labels or shape.ids),
        text='"' if shape.web else "",
        vector=[0.0] * EMBEDDING_DIM if shape.vector else None,
        mode=shape.mode,
        min_score=0.0,
        limit=shape.limit,
        preset=shape.preset,
        now=datetime.now(UTC),
        path=shape.path,
    )
    return ranking.where(restored())


@built_once
def _with_rows(shape: _Shape) -> Select[Any]:
    """The ranking of a shape with each hit's version and record (no vectors: parsing
    them costs more than the query), best first."""
    top = _statement(shape).subquery("top")
    return (
        select(
            MemoryVersion,
            MemoryRecord,
            top.c.score,
            top.c.cosine,
            top.c.lexical,
            top.c.meaning,
            top.c.keywords,
        )
        .select_from(top)
        .join(
            MemoryVersion,
            and_(
                col(MemoryVersion.id) == top.c.key,
                col(MemoryVersion.agent_id) == bindparam("reader_agent"),
            ),
        )
        .join(
            MemoryRecord,
            and_(
                col(MemoryRecord.id) == col(MemoryVersion.record_id),
                col(MemoryRecord.agent_id) == col(MemoryVersion.agent_id),
            ),
        )
        .options(defer(MemoryVersion.embedding), defer(MemoryVersion.search_tsv))
        .order_by(top.c.score.desc(), top.c.created_at.desc(), top.c.key)
    )


def ranking_statement(
    reader: Reader,
    query: MemoryQuery,
    *,
    now: datetime | None = None,
    with_rows: bool = False,
) -> tuple[Select[Any], dict[str, Any]]:
    """The one statement that ranks ``reader``'s records for ``query`` (R41) and its
    parameters: the statement of :func:`server.storage.hybrid.build_search` over
    :func:`_found_by`, kept per shape (who reads, which filters, the mode, ...).
    ``with_rows``: the same ranking joined to each hit's version and record, so that a
    search reads what it returns in the one statement."""
    mode, vector, limit, filters = query.mode, query.vector, query.limit, query.filters
    text = query.text if mode != "vector" else None
    if mode != "lexical" and vector is None:
        raise ValueError(f"{mode} search needs a vector")
    shape = _Shape(
        api=reader.api,
        preview=reader.preview,
        read_scopes=frozenset(reader.read_scopes),
        session=reader.session_id is not None,
        turn=reader.turn_id is not None,
        kind=filters.kind is not None,
        labels=bool(filters.labels),
        ids=filters.ids is not None,
        mode=mode,
        web=text is not None and uses_web_syntax(text),
        vector=vector is not None,
        limit=limit,
        preset=query.preset,
        path=query.path,
    )
    params = search_parameters(
        text=text,
        vector=vector,
        min_score=query.min_score,
        limit=limit,
        now=now if now is not None else datetime.now(UTC),
    )
    params["reader_agent"] = reader.agent_id
    if reader.session_id is not None:
        params["reader_session"] = reader.session_id
    if reader.turn_id is not None:
        params["reader_turn"] = reader.turn_id
    if filters.kind is not None:
        params["filter_kind"] = filters.kind
    if filters.labels:
        params["filter_labels"] = dict(filters.labels)
    if filters.ids is not None:
        params["filter_ids"] = list(filters.ids)
    return (_with_rows(shape) if with_rows else _statement(shape)), params


__all__ = [
    "GENERIC_PLAN",
    "NO_FILTERS",
    "Filters",
    "MemoryQuery",
    "ranking_statement",
    "restored",
]
