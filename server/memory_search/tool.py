"""search_memory (R40, R41, R43, R14, R23).

``search_memory`` is a native tool: each call is an execution of it (R26),
recorded by :func:`server.services.tools.run_tool` with its input and its
output, the records it returned (``records``, and ``next``, the cursor of the
next page of a listing). Helpers and programs may search (R23).

- With a ``query`` the records are ranked (R41) by the agent version's
  ``harness.memory.search`` (``mode``, ``min_score``) with the fusion preset
  :data:`server.domain.ranking_presets.DEFAULT_PRESET`, in one statement
  (:mod:`server.memory_search.statement`, built once per shape and run with the
  reader's values as parameters); at most ``limit`` results (default
  ``max_results``).
- Without one they are listed newest first (by record creation), ``limit`` a
  page, ``after`` the opaque cursor of the previous page's last record. The
  cursor is a keyset position, so records written meanwhile neither repeat nor
  shift later pages.
- ``kind``, ``labels`` (exact values of declared labels), ``ids`` filter both.

Only records the reader may find are candidates (:mod:`server.memory_search.statement`;
a listing lists those :func:`server.storage.gate.record_condition` lets the reader find
with ``Purpose.SEARCH``, each as the version in force for it,
:func:`server.storage.gate.version_in_force`, R12). Every recorded search writes a
RETRIEVED output use per record version it returned (all of them reach the model, in
rank order), and its query embedding is recorded as an ``embed`` invocation that no
limit counts, with a ``usage`` transcript event (R43): with the ranking, in one
statement (:mod:`server.memory_search.recorded`), once the turn's facts are known.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain import cursor
from server.domain.config import SEARCH_TOOL, HarnessConfig
from server.domain.text import check_text
from server.domain.visibility import Purpose, Reader
from server.embedding import Embedder
from server.embedding_packing import Vector
from server.errors import BadInputError, DomainError, NotAllowedError
from server.memory_search import recorded
from server.memory_search.ranking import Found, ranked_by
from server.memory_search.recorded import Call
from server.memory_search.statement import NO_FILTERS, Filters, MemoryQuery
from server.models import Execution, MemoryRecord, MemoryVersion
from server.models.rows import ExecutionRow
from server.services.tools import CallRef, model_label, open_call, record_found, run_tool
from server.services.turn_scope import TurnFacts, TurnScope, known_turn
from server.storage.gate import record_condition, version_in_force
from server.storage.owners import on_citus

MAX_LIMIT = 100
MAX_QUERY = 2_000
MAX_IDS = 100


@dataclass(frozen=True, slots=True)
class SearchResult:
    execution: Execution | ExecutionRow
    items: list[Found]
    next_cursor: str | None


# -- checks ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Asked:
    """A call's arguments as checked against its agent version's configuration."""

    filters: Filters
    limit: int
    text: str | None  # the query; None: list


def _asked(
    config: HarnessConfig,
    *,
    query: str | None,
    kind: str | None,
    labels: dict[str, Any] | None,
    ids: Sequence[uuid.UUID] | None,
    limit: int | None,
    after: str | None,
) -> _Asked:
    """The arguments, or the refusal the call records (R1, R6, R24)."""
    memory = config.memory
    if not memory.enabled:
        raise NotAllowedError(
            "memory is not enabled for this agent version (harness.memory.enabled)"
        )
    the_kind = None if kind is None else memory.check_kind(kind)
    pairs = tuple(sorted(memory.check_labels(labels).items()))
    if ids is not None and not 1 <= len(ids) <= MAX_IDS:
        raise BadInputError(f"ids must hold 1 to {MAX_IDS} ids", field="ids")
    filters = Filters(
        kind=the_kind, labels=pairs, ids=None if ids is None else tuple(dict.fromkeys(ids))
    )
    the_limit = memory.search.max_results if limit is None else limit
    if not 1 <= the_limit <= MAX_LIMIT:
        raise BadInputError(f"limit must be from 1 to {MAX_LIMIT}", field="limit")
    if query is None:
        return _Asked(filters, the_limit, None)
    if after is not None:
        raise BadInputError(
            "after pages a listing; a search with a query returns one ranked page",
            field="after",
        )
    text = check_text(query, field="query", maximum=MAX_QUERY, blank=False)
    return _Asked(filters, the_limit, text)


# -- search_memory -----------------------------------------------------------------------


@asynccontextmanager
async def embedding_started(
    embedder: Embedder, query: str | None, *, maximum: int
) -> AsyncIterator[Awaitable[tuple[Vector, int]] | None]:
    """A query's embedding, started as the call arrives, so that its forward pass runs
    while the call reads its turn and checks its arguments instead of after; ``None``
    without a query, or for one the call will refuse. Cancelled if the call ends without
    it (a lexical search, a refusal)."""
    try:
        text = None if query is None else check_text(query, field="query", maximum=maximum)
    except BadInputError:
        text = None
    if not text or not text.strip():
        yield None
        return
    task = asyncio.ensure_future(embedder.embed_query(text))
    try:
        yield task
    finally:
        if not task.done():
            task.cancel()
        elif not task.cancelled():
            task.exception()  # looked at, whether or not the call got that far


async def search_memory(
    db: AsyncSession,
    embedder: Embedder,
    *,
    ref: CallRef,
    query: str | None = None,
    kind: str | None = None,
    labels: dict[str, Any] | None = None,
    ids: Sequence[uuid.UUID] | None = None,
    limit: int | None = None,
    after: str | None = None,
) -> SearchResult:
    """Run the native ``search_memory`` tool (R40, R41, R43); a refusal is recorded failed.

    A search with a query, once the turn's facts are known (:func:`known_turn`: the
    turn's earlier calls here, or read now), is one statement that ranks and records
    (:mod:`server.memory_search.recorded`); a listing, a search by ids or on Citus, and a
    refusal are recorded as every tool call is (:func:`server.services.tools.run_tool`)."""
    args = {
        "query": query,
        "kind": kind,
        "labels": labels,
        "ids": None if ids is None else [str(i) for i in ids],
        "limit": limit,
        "after": after,
    }
    # the query's embedding runs while the call's scope and checks are read
    async with embedding_started(embedder, query, maximum=MAX_QUERY) as embedding:
        facts = known_turn(db, ref.turn_id) or await read_facts(db, ref)
        try:
            asked = _asked(
                facts.config,
                query=query,
                kind=kind,
                labels=labels,
                ids=ids,
                limit=limit,
                after=after,
            )
        except DomainError:
            asked = None  # recorded below, as every refused call
        # on Citus the one statement is planned as a subplan per CTE, each a round trip
        # from the coordinator, where the ranking alone is one task (docs/scaling.md)
        if (
            asked is not None
            and asked.text is not None
            and asked.filters.ids is None
            and not on_citus(db)
        ):
            search = facts.config.memory.search
            vector, tokens = (
                (None, None)
                if search.mode == "lexical"
                else await (
                    embedding if embedding is not None else embedder.embed_query(asked.text)
                )
            )
            found = await recorded.run(
                db,
                facts=facts,
                call=Call(ref.turn_id, ref.caller_execution_id, ref.invocation_id, args),
                query=MemoryQuery(
                    asked.text,
                    vector,
                    search.mode,
                    search.min_score,
                    asked.limit,
                    asked.filters,
                ),
                tokens=tokens,
                model=model_label(embedder),
            )
            assert found.execution is not None  # a search is recorded whatever it found
            return SearchResult(execution=found.execution, items=found.items, next_cursor=None)
        return await _recorded_call(db, embedder, ref=ref, args=args, embedding=embedding)


async def read_facts(db: AsyncSession, ref: CallRef) -> TurnFacts:
    """The facts of a turn this process has not seen a call of: its scope read (which
    says why a call cannot run in it)."""
    await open_call(db, ref)
    facts = known_turn(db, ref.turn_id)
    assert facts is not None
    return facts


async def _recorded_call(
    db: AsyncSession,
    embedder: Embedder,
    *,
    ref: CallRef,
    args: dict[str, Any],
    embedding: Awaitable[tuple[Vector, int]] | None,
) -> SearchResult:
    """The call as every tool call is recorded: a listing, a search by ids, a refusal."""
    page: dict[str, str | None] = {"next": None}
    query = args["query"]

    async def body(scope: TurnScope, execution: Execution) -> list[Found]:
        asked = _asked(
            scope.config,
            query=query,
            kind=args["kind"],
            labels=args["labels"],
            ids=None if args["ids"] is None else [uuid.UUID(i) for i in args["ids"]],
            limit=args["limit"],
            after=args["after"],
        )
        tokens: int | None = None  # a listing embeds nothing
        if asked.text is not None:
            items, tokens = await ranked_by(
                db,
                embedder,
                reader=scope.reader,
                search=scope.config.memory.search,
                query=asked.text,
                limit=asked.limit,
                filters=asked.filters,
                embedding=embedding,
            )
        else:
            items, page["next"] = await _listed(
                db,
                reader=scope.reader,
                limit=asked.limit,
                after=args["after"],
                filters=asked.filters,
            )
        versions = [i.version.id for i in items]
        await record_found(db, scope, execution, embedder, tokens=tokens, versions=versions)
        return items

    result = await run_tool(
        db,
        ref=ref,
        name=SEARCH_TOOL,
        input=args,
        output_key="records",
        body=body,
        more_output=lambda: {"next": page["next"]} if query is None else {},
        writes=False,
    )
    return SearchResult(execution=result.execution, items=result.items, next_cursor=page["next"])


def _where(reader: Reader, filters: Filters) -> ColumnElement[bool]:
    shown: ColumnElement[bool] = col(MemoryVersion.id) == version_in_force(reader)
    conds: list[ColumnElement[bool]] = [
        record_condition(reader, purpose=Purpose.SEARCH),
        shown,
        # Implied by the gate (a version belongs to its record's agent); stated so that the
        # planner can read the agent's versions from their index before joining records.
        col(MemoryVersion.agent_id) == reader.agent_id,
    ]
    if filters.kind is not None:
        conds.append(col(MemoryVersion.kind) == filters.kind)
    if filters.labels:
        conds.append(col(MemoryVersion.labels).contains(dict(filters.labels)))
    if filters.ids is not None:
        conds.append(col(MemoryRecord.id).in_(filters.ids))
    return and_(*conds)


async def _listed(
    db: AsyncSession,
    *,
    reader: Reader,
    limit: int,
    after: str | None,
    filters: Filters = NO_FILTERS,
) -> tuple[list[Found], str | None]:
    """A page of records newest first, and the cursor of the next page (None: no more)."""
    stmt = (
        select(MemoryRecord, MemoryVersion)
        .join(MemoryVersion, col(MemoryVersion.record_id) == col(MemoryRecord.id))
        .where(_where(reader, filters))
    )
    if after is not None:
        (seq,) = cursor.decode("memory", after, cursor.seq)
        stmt = stmt.where(col(MemoryRecord.seq) < seq)
    rows = (await db.execute(stmt.order_by(col(MemoryRecord.seq).desc()).limit(limit + 1))).all()
    items = [Found(record=r, version=v) for r, v in rows[:limit]]
    more = len(rows) > limit
    return items, cursor.encode("memory", items[-1].record.seq) if more else None


__all__ = [
    "MAX_LIMIT",
    "MAX_QUERY",
    "Filters",
    "Found",
    "SearchResult",
    "search_memory",
]
